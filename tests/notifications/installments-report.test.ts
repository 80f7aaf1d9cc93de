import { describe, expect, it } from 'vitest';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify } from '../helpers/notifications.ts';
import { checkedSecondsAgo, customer, testLedger } from '../helpers/orders.ts';
import { subscribedOrder } from '../helpers/subscriptions.ts';

/**
 * A notification's count of installments (unsigned) is kept as a report until PayHere's records
 * bear it out, and getCheckout reads PayHere's subscription payments while one is kept. A report
 * the records do not bear out (a variant notification's count) is dropped by the read that shows
 * nothing new: else every view asked PayHere again, for good once the subscription had ended.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const alice = customer('alice');

describe('a report of installments the ledger already confirmed', () => {
  it('is dropped by the read that shows nothing new, and costs later views no PayHere call', async () => {
    // Prepare: a subscription whose first installment the ledger confirmed.
    const { orderId, first } = await subscribedOrder(sandbox, alice);
    await checkedSecondsAgo(orderId, 'view', 60);
    await call('getCheckout', { id: orderId });
    expect(await ledger.getOrder(orderId)).toMatchObject({ installmentsPaid: 1 });
    // A variant within the order's confirmation window: deferred, its count kept as reported.
    await notify({ ...first, item_rec_install_paid: '9' });
    expect((await ledger.getOrder(orderId))?.reported.installmentsPaid).toBe(9);

    // Act: two views, each past the 10 s window.
    await checkedSecondsAgo(orderId, 'view', 60);
    await call('getCheckout', { id: orderId });
    const afterFirstLook = (await ledger.getOrder(orderId))?.reported.installmentsPaid;
    sandbox.resetCounters();
    await checkedSecondsAgo(orderId, 'view', 60);
    await call('getCheckout', { id: orderId });

    // Assess
    expect(afterFirstLook).toBeNull();
    expect(sandbox.counters().subscriptionPayments ?? 0).toBe(0);
    expect(await ledger.getOrder(orderId)).toMatchObject({ installmentsPaid: 1 });
  });
});
