import { describe, expect, it } from 'vitest';
import { payHereFromEnvironment } from '../../lib/gateway/index.ts';
import { loadOrdersConfig } from '../../lib/orders/config.ts';
import { ledgerWithEvents, subscriptionRetriesFromEnvironment } from '../../lib/orders/from-environment.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify } from '../helpers/notifications.ts';
import { checkedSecondsAgo, customer, testLedger } from '../helpers/orders.ts';
import { ownIdempotencyTable, settleJob as settleJobOver } from '../helpers/settle.ts';
import { eventTypesOf, NOWHERE, subscribedOrder } from '../helpers/subscriptions.ts';

/**
 * A failed installment retried through the service (POST /subscriptions/{id}/retry) is charged at
 * once, and PayHere sends no notification of it (nor does the sandbox). What it paid is recorded
 * from PayHere's records by the settle job, which the retry has read the subscription's standing:
 * subscription.installment_paid, and subscription.completed when it was the last installment.
 */
const store = await ownIdempotencyTable();
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const alice = customer('alice');

async function failInstallment(orderId: string, subscriptionId: string) {
  const failed = (
    await sandbox.chargeInstallment(Number(subscriptionId), { outcome: 'decline', notify_url: NOWHERE })
  ).deliveries[0]!.fields as Record<string, string>;
  await checkedSecondsAgo(orderId, 'notification', 60);
  expect((await notify(failed)).statusCode).toBe(200);
  expect(await ledger.getOrder(orderId)).toMatchObject({
    subscriptionStatus: 'FAILED',
    failedInstallment: 2,
  });
}

/** The settle job, well past every delay. */
const settleLater = () =>
  settleJobOver(store, ledgerWithEvents(), loadOrdersConfig(process.env).settleDelayMs + 60_000).run();

describe('a failed installment retried through the service and paid', () => {
  it('is recorded as paid (subscription.installment_paid), by the settle job at the latest', async () => {
    const { orderId, subscriptionId: id } = await subscribedOrder(sandbox, alice, '1 Year');
    const subscriptionId = String(id);
    await failInstallment(orderId, subscriptionId);

    const retried = await call('retrySubscription', { id: subscriptionId });
    const atPayHere = await call('subscriptionPayments', { id: subscriptionId });
    await settleLater();
    const types = await eventTypesOf(orderId);

    expect(retried.statusCode).toBe(200);
    expect(atPayHere.body.data).toHaveLength(2);
    expect((await ledger.getOrder(orderId))?.installmentsPaid).toBe(2);
    expect(types.filter((type) => type === 'subscription.installment_paid').length).toBeGreaterThanOrEqual(2);
  });

  it('that was its last installment is recorded as completed (subscription.completed)', async () => {
    const { orderId, subscriptionId: id } = await subscribedOrder(sandbox, alice, '2 Month');
    const subscriptionId = String(id);
    await failInstallment(orderId, subscriptionId);

    const retried = await call('retrySubscription', { id: subscriptionId });
    const atPayHere = await call('getSubscription', { id: subscriptionId });
    await settleLater();
    const types = await eventTypesOf(orderId);

    expect(retried.statusCode).toBe(200);
    expect(atPayHere.body.data.status).toBe('COMPLETED');
    expect((await ledger.getOrder(orderId))?.subscriptionStatus).toBe('COMPLETED');
    expect(types).toContain('subscription.completed');
  });
});

describe('a retry whose answer was lost, settled on its repeat', () => {
  it('is settled only for a caller that may act on the subscription: another customer gets 404, PayHere is not asked', async () => {
    const { subscriptionId: id } = await subscribedOrder(sandbox, alice, '1 Year');
    const retries = subscriptionRetriesFromEnvironment(payHereFromEnvironment());
    const deadline = Date.now() + 10_000;
    sandbox.resetCounters();

    const stranger = await retries
      .settle(
        { caller: { role: 'customer', sub: customer('mallory') }, id: String(id), deadline },
        Date.now(),
      )
      .catch((error: unknown) => error);
    const asked = Object.values(sandbox.counters()).reduce((sum, count) => sum + count, 0);
    const owner = await retries.settle(
      { caller: { role: 'customer', sub: alice }, id: String(id), deadline },
      Date.now(),
    );

    expect(stranger).toMatchObject({ httpStatus: 404 });
    expect(asked).toBe(0);
    expect(owner.statusCode).not.toBe(404);
  });
});
