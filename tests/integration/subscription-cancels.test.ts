import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { backgroundSettled } from '../../lib/net/background.ts';
import { SEED } from '../../sandbox/server.ts';
import { clearDynamoDbFaults, injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { customer, testLedger } from '../helpers/orders.ts';
import { eventTypesOf, subscribedOrder } from '../helpers/subscriptions.ts';

/**
 * What a cancel leaves when something fails on its way: the order's write after PayHere accepted it
 * (lib/orders/subscription-ends.ts keeps the order first, then the reference the next cancel reads),
 * and its answer lost with PayHere's state unreadable at once (settled from that state by a repeat
 * of its key; the settle job's side is in tests/settle/job.test.ts).
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const alice = customer('alice');

afterEach(async () => {
  await clearDynamoDbFaults(undefined, process.env.LEDGER_TABLE);
});

describe('a cancel PayHere accepted whose order write failed (the table’s 500s, its retries spent)', () => {
  it('is still recorded once as subscription.cancelled, by the next cancel at the latest', async () => {
    const { orderId, subscriptionId: id } = await subscribedOrder(sandbox, alice);
    const subscriptionId = String(id);
    await backgroundSettled();
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: process.env.LEDGER_TABLE!,
      keyPrefix: `order#${orderId}`,
      fault: { kind: 'status500' },
      times: 3,
    });

    const first = await call('cancelSubscription', { id: subscriptionId });
    await clearDynamoDbFaults(undefined, process.env.LEDGER_TABLE);
    const second = await call('cancelSubscription', { id: subscriptionId });
    const types = await eventTypesOf(orderId);

    expect(first.statusCode).toBe(200);
    expect(second.statusCode).toBe(409);
    expect((await ledger.lookup('subscription', subscriptionId))?.status).toBe('CANCELLED');
    expect((await ledger.getOrder(orderId))?.subscriptionStatus).toBe('CANCELLED');
    expect(types.filter((type) => type === 'subscription.cancelled')).toHaveLength(1);
  });
});

describe('a cancel with an Idempotency-Key whose answer was lost and could not be checked at once', () => {
  it('is settled from the subscription state when repeated with the same key', async () => {
    sandbox.resetState();
    const id = String(SEED.subscriptions.active);
    const key = randomUUID();
    // PayHere cancels, the connection resets; the immediate check of its state fails too.
    sandbox.faults.inject('cancel', { kind: 'reset' });
    sandbox.faults.inject('getSubscription', { kind: 'status', status: 503 }, 3);

    const first = await call('cancelSubscription', { id, headers: { 'Idempotency-Key': key } });
    const atPayHere = await call('getSubscription', { id });
    const repeat = await call('cancelSubscription', { id, headers: { 'Idempotency-Key': key } });
    const again = await call('cancelSubscription', { id, headers: { 'Idempotency-Key': key } });

    expect(first.statusCode).toBe(202);
    expect(first.body.data.code).toBe('outcome_unknown');
    expect(atPayHere.body.data.status).toBe('CANCELLED');
    expect(sandbox.counters().cancel).toBe(1);
    // The subscription shows CANCELLED: the repeat should settle it as done.
    expect({ status: repeat.statusCode, msg: repeat.body.msg }).toEqual({
      status: 200,
      msg: 'Successfully cancelled the subscription',
    });
    expect(again.statusCode).toBe(200);
  });
});
