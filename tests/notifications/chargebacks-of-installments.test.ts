import { describe, expect, it } from 'vitest';
import { EventStore, FEED_SETTLE_MS } from '../../lib/events/store.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { checkedSecondsAgo, customer, testLedger } from '../helpers/orders.ts';
import { NOWHERE, subscribedOrder } from '../helpers/subscriptions.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';

/**
 * Chargebacks of a subscription's installments (docs/contract.md "Events"). An installment charged
 * back (CHARGEBACKED) was still paid: lib/orders/confirmations.ts counts it, so that a later
 * installment's failure is not numbered one too low and taken for the failure already recorded.
 * And a chargeback moves a recurring order to `chargedback` while its subscription keeps running at
 * PayHere: its later paid installments are still recorded.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const alice = customer('alice');

async function deliver(orderId: string, form: Record<string, string>) {
  await checkedSecondsAgo(orderId, 'notification', 60);
  expect((await notify(form)).statusCode).toBe(200);
}

const installment = async (subscriptionId: number, outcome: 'success' | 'decline') =>
  (await sandbox.chargeInstallment(subscriptionId, { outcome, notify_url: NOWHERE })).deliveries[0]!
    .fields as Record<string, string>;

describe('a subscription one of whose paid installments was charged back', () => {
  it('records the next failed installment as its own failure', async () => {
    const { orderId, subscriptionId } = await subscribedOrder(sandbox, alice);
    // Installment 2 fails, PayHere's retry pays it: 2 paid.
    await deliver(orderId, await installment(subscriptionId, 'decline'));
    await deliver(orderId, await installment(subscriptionId, 'success'));
    expect(await ledger.getOrder(orderId)).toMatchObject({ failedInstallment: 2, installmentsPaid: 2 });

    // Installment 1 is charged back; then installment 3 fails.
    const failed = await installment(subscriptionId, 'decline');
    const api = apiClient(sandbox, await accessToken(sandbox));
    const payments = (await api.get(`subscription/${subscriptionId}/payments`)).json;
    expect(payments.data).toHaveLength(2);
    payments.data[0].status = 'CHARGEBACKED';
    sandbox.faults.inject('subscriptionPayments', {
      kind: 'status',
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify(payments),
    });
    await deliver(orderId, failed);
    await backgroundSettled();
    const events = new EventStore({
      client: localClient(),
      table: process.env.EVENTS_TABLE!,
      now: () => Date.now() + FEED_SETTLE_MS,
    });
    const failures = (await events.page({ limit: 100, objectId: orderId })).events.filter(
      (event) => event.type === 'subscription.installment_failed',
    );

    expect(sandbox.faults.pending()).toBe(0);
    expect((await ledger.getOrder(orderId))?.failedInstallment).toBe(3);
    expect(failures.map((event) => event.data.installment)).toEqual([2, 3]);
  });
});

describe('a subscription whose order was charged back once', () => {
  it('still records the installments PayHere’s records show paid after it', async () => {
    const { orderId, subscriptionId, first } = await subscribedOrder(sandbox, alice);
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
