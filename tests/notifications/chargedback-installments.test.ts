import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { checkedSecondsAgo, customer, testLedger } from '../helpers/orders.ts';

/**
 * A recurring order moves to `chargedback` when one installment is charged back (status_code -3),
 * and its subscription keeps running at PayHere (lib/notifications/receiver.ts aboutSubscription
 * treats a chargedback order's subscription as running). docs/contract.md "Events":
 * subscription.installment_paid whenever PayHere's records show more installments paid.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const alice = customer('alice');
const NOWHERE = 'https://notify.example.invalid/payhere';

async function subscribed() {
  const orderId = `Gym-${randomUUID()}`;
  const created = await call('createCheckout', {
    body: {
      kind: 'recurring',
      order_id: orderId,
      items: 'Gym',
      currency: 'LKR',
      amount: 2_500,
      recurrence: '1 Month',
      duration: '1 Year',
    },
    headers: { 'On-Behalf-Of': alice },
  });
  const completed = await sandbox.completeCheckout({
    ...created.body.data,
    outcome: 'success',
    notify_url: NOWHERE,
  });
  const first = completed.deliveries[0]!.fields as Record<string, string>;
  await notify(first);
  return { orderId, subscriptionId: completed.subscription_id!, first };
}

async function deliver(orderId: string, form: Record<string, string>) {
  await checkedSecondsAgo(orderId, 'notification', 60);
  expect((await notify(form)).statusCode).toBe(200);
}

describe('a subscription whose order was charged back once', () => {
  it('still records the installments PayHere’s records show paid after it', async () => {
    const { orderId, subscriptionId, first } = await subscribed();
    // PayHere reports the first payment charged back (a genuine, signed -3).
    const { md5sig: _, ...fields } = first;
    await deliver(orderId, signed({ ...fields, status_code: '-3', status_message: 'Chargeback' } as never));
    expect(await ledger.getOrder(orderId)).toMatchObject({ state: 'chargedback' });

    // The subscription keeps running: installment 2 is paid and notified.
    const paid = (
      await sandbox.chargeInstallment(subscriptionId, { outcome: 'success', notify_url: NOWHERE })
    ).deliveries[0]!.fields as Record<string, string>;
    await deliver(orderId, paid);

    expect((await ledger.getOrder(orderId))?.installmentsPaid).toBe(2);
    expect((await ledger.getOrder(orderId))?.nextInstallment).toBe(paid.item_rec_date_next);
  });
});
