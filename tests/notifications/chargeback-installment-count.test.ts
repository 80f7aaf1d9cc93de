import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EventStore, FEED_SETTLE_MS } from '../../lib/events/store.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify } from '../helpers/notifications.ts';
import { checkedSecondsAgo, customer, testLedger } from '../helpers/orders.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';

/**
 * docs/contract.md "Events": subscription.installment_failed once per installment, PayHere's records
 * showing the subscription FAILED after `installments_paid` installments. An installment charged
 * back since (CHARGEBACKED) was still paid: lib/orders/confirmations.ts counts it, so that a later
 * installment's failure is not numbered one too low and taken for the failure already recorded.
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
  await notify(completed.deliveries[0]!.fields);
  return { orderId, subscriptionId: completed.subscription_id! };
}

async function deliver(orderId: string, form: Record<string, string>) {
  await checkedSecondsAgo(orderId, 'notification', 60);
  expect((await notify(form)).statusCode).toBe(200);
}

const installment = async (subscriptionId: number, outcome: 'success' | 'decline') =>
  (await sandbox.chargeInstallment(subscriptionId, { outcome, notify_url: NOWHERE })).deliveries[0]!
    .fields as Record<string, string>;

describe('a subscription one of whose paid installments was charged back', () => {
  it('records the next failed installment as its own failure', async () => {
    const { orderId, subscriptionId } = await subscribed();
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
