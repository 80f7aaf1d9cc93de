import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { CallerShares, callers, loadSharesConfig } from '../../lib/budget/caller-shares.ts';
import { SharedLimiter } from '../../lib/budget/limiter.ts';
import { SlidingWindowLimiter } from '../../lib/budget/window-limiter.ts';
import { ScanCommand } from '../../lib/dynamodb/index.ts';
import { SharedTokenCache, TokenCache } from '../../lib/gateway/token.ts';
import { SEED } from '../../sandbox/server.ts';
import { createTable } from '../../scripts/local-dynamodb.ts';
import { clearDynamoDbFaults, injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { captureLogs } from '../helpers/logs.ts';
import { testLedger } from '../helpers/orders.ts';
import { ownIdempotencyTable, settleJob } from '../helpers/settle.ts';
import { dynamoDbAt, freshStateTable } from '../helpers/state-table.ts';
import { chargeBody, paymentsOf } from './fixtures.ts';

/**
 * A DynamoDB write applied with its answer lost (the local DynamoDB's faults): a retry meets its
 * own write and knows it; what no request can finish, the settle job ends from PayHere's records.
 * Nothing stays claimed, nothing is paid twice.
 */
const store = await ownIdempotencyTable();
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const LEDGER = () => process.env.LEDGER_TABLE!;
const MINUTE = 60_000;

afterEach(async () => {
  // This file's faults only: other files inject theirs on the same server at the same time.
  await clearDynamoDbFaults(undefined, LEDGER());
});

describe('a charge whose ledger write was applied and its answer lost', () => {
  it('the claim, retried, is recognised as the charge’s own: the charge goes through, once', async () => {
    const body = chargeBody();
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: LEDGER(),
      keyPrefix: `order#${body.order_id}`,
      fault: { kind: 'applyAndLose' },
    });

    const charged = await call('charge', { body });

    expect(charged.statusCode).toBe(200);
    expect(await ledger.getOrder(body.order_id)).toMatchObject({
      state: 'succeeded',
      charge: { inflight: false },
      paymentId: String(charged.body.data.payment_id),
    });
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it('an outcome the ledger failed to record keeps the order open until the settle job records PayHere’s', async () => {
    const body = chargeBody();
    // The claim goes through; every later write of the order fails.
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: LEDGER(),
      keyPrefix: `order#${body.order_id}`,
      fault: { kind: 'slow', ms: 0 },
    });
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: LEDGER(),
      keyPrefix: `order#${body.order_id}`,
      fault: { kind: 'status500' },
      times: Number.POSITIVE_INFINITY,
    });
    const lines = captureLogs('error');

    const charged = await call('charge', { body });
    const open = await ledger.getOrder(body.order_id);
    await clearDynamoDbFaults(undefined, LEDGER());
    const run = await settleJob(store, ledger, MINUTE).run();

    // The caller had PayHere's answer; the ledger had the order in flight, then settled.
    expect(charged.statusCode).toBe(200);
    expect(open?.charge?.inflight).toBe(true);
    expect(lines).toContainEqual(
      expect.objectContaining({ message: 'could not record the outcome of a charge' }),
    );
    expect(run.settled).toBeGreaterThanOrEqual(1);
    expect(await ledger.getOrder(body.order_id)).toMatchObject({
      state: 'succeeded',
      charge: { inflight: false },
      paymentId: String(charged.body.data.payment_id),
    });
    expect(await ledger.chargesDue(Date.now() + 365 * 24 * 60 * MINUTE, 100)).not.toContain(body.order_id);
  });

  it('a claim no request finished (applied, its answer lost, its release failing) is ended by the settle job', async () => {
    const body = chargeBody();
    // The claim is applied and answered 500; its retries and its release are refused with 500.
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: LEDGER(),
      keyPrefix: `order#${body.order_id}`,
      fault: { kind: 'applyThen500' },
    });
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: LEDGER(),
      keyPrefix: `order#${body.order_id}`,
      fault: { kind: 'status500' },
      times: Number.POSITIVE_INFINITY,
    });

    const refused = await call('charge', { body });
    const claimed = await ledger.getOrder(body.order_id);
    await clearDynamoDbFaults(undefined, LEDGER());
    const blocked = await call('charge', { body });
    // Past the settle delay, two looks a second-look interval apart, both showing nothing.
    await settleJob(store, ledger, 15 * MINUTE).run();
    await settleJob(store, ledger, 18 * MINUTE).run();
    const after = await ledger.getOrder(body.order_id);
    const again = await call('charge', { body });

    expect(refused.statusCode).toBe(503);
    expect(claimed?.charge?.inflight).toBe(true);
    expect(blocked.statusCode).toBe(409);
    expect(after?.charge?.inflight).toBe(false);
    expect(again.statusCode).toBe(200);
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });
});

describe('a charge PayHere answered pending', () => {
  it('is settled from PayHere’s records after the pending limit: nothing at two looks, failed, and chargeable again', async () => {
    const body = { ...chargeBody(), customer_token: SEED.customerTokens.pending };
    const lines = captureLogs('warn');

    const pending = await call('charge', { body });
    await settleJob(store, ledger, 24 * 60 * MINUTE + MINUTE).run();
    const looked = await ledger.getOrder(body.order_id);
    await settleJob(store, ledger, 24 * 60 * MINUTE + 4 * MINUTE).run();
    const settled = await ledger.getOrder(body.order_id);

    expect(pending.statusCode).toBe(202);
    expect(looked?.state).toBe('pending');
    expect(settled?.state).toBe('failed');
    expect(lines).toContainEqual(expect.objectContaining({ orderId: body.order_id, level: 'warn' }));
    expect(
      (await call('charge', { body: { ...body, customer_token: SEED.customerTokens.success } })).statusCode,
    ).toBe(200);
  });

  it('is not settled before its limit', async () => {
    const body = { ...chargeBody(), customer_token: SEED.customerTokens.pending };
    await call('charge', { body });

    await settleJob(store, ledger, 60 * MINUTE).run();

    expect((await ledger.getOrder(body.order_id))?.state).toBe('pending');
  });
});

describe('the shared state’s conditional writes, retried after a lost answer', () => {
  const T0 = Date.UTC(2026, 10, 26, 9, 0, 0);

  it('a budget slot’s take meets its own write and keeps the slot', async () => {
    const { table, name } = await freshStateTable({ attempts: 3 });
    const limiter = new SharedLimiter({
      table,
      limit: 20,
      windowMs: 10_000,
      marginMs: 1_000,
      fallback: new SlidingWindowLimiter({ limit: 2, windowMs: 10_000, now: () => T0 }),
      now: () => T0,
      sleep: async () => {},
      random: () => 0.5,
    });
    await injectDynamoDbFault({ operation: 'UpdateItem', table: name, fault: { kind: 'applyAndLose' } });

    await limiter.acquire('money', 5_000);

    // One slot taken, not two: the retry knew its own write.
    expect([...(await table.readBudget()).busyUntil.keys()]).toHaveLength(1);
  });

  it('another container’s take of the same slot is still refused', async () => {
    const { table } = await freshStateTable();
    await table.takeSlot(0, T0 + 20_000, T0 - 11_000, T0, 'take-a');

    // The same deadline to the millisecond: only the take's name tells the two apart.
    const second = await table.takeSlot(0, T0 + 20_000, T0 - 11_000, T0, 'take-b');

    expect(second.taken).toBe(false);
  });

  it('a caller’s share, counted and its answer lost, is counted once: the retry knows its own write', async () => {
    const name = `state-${randomUUID()}`;
    await createTable(inject('dynamodbEndpoint'), name);
    const now = Date.UTC(2026, 10, 26, 9, 0, 2);
    const shares = new CallerShares({
      client: dynamoDbAt(inject('dynamodbEndpoint'), 3),
      table: name,
      timeoutMs: 2_000,
      config: loadSharesConfig({}),
      now: () => now,
    });
    const alice = { id: 'alice', kind: 'customer' } as const;
    await injectDynamoDbFault({ operation: 'UpdateItem', table: name, fault: { kind: 'applyAndLose' } });

    // A customer's share is 3 calls per 10 s: counted once, two more are still within it.
    const first = await callers.run(alice, () => shares.take(false));
    const second = await callers.run(alice, () => shares.take(false));
    const third = await callers.run(alice, () => shares.take(false));
    const fourth = await callers.run(alice, () => shares.take(false));

    expect([first, second, third, fourth].map((call) => call?.beyond)).toEqual([false, false, false, true]);
  });

  it('a caller’s share, counted and its answer lost while another of its calls is counted, is still counted once', async () => {
    const name = `state-${randomUUID()}`;
    await createTable(inject('dynamodbEndpoint'), name);
    const now = Date.UTC(2026, 10, 26, 9, 0, 2);
    const client = dynamoDbAt(inject('dynamodbEndpoint'), 3);
    const shares = new CallerShares({
      client,
      table: name,
      timeoutMs: 2_000,
      config: loadSharesConfig({}),
      now: () => now,
    });
    const alice = { id: 'alice', kind: 'customer' } as const;
    await injectDynamoDbFault({ operation: 'UpdateItem', table: name, fault: { kind: 'applyAndLose' } });

    // Two calls at once: the one whose answer is lost is retried after the other was counted.
    await Promise.all([1, 2].map(() => callers.run(alice, () => shares.take(false))));
    const { Items = [] } = await client.send(new ScanCommand({ TableName: name }));

    expect(Items).toHaveLength(1);
    expect(Number(Items[0]![`c${Math.floor(now / 10_000)}`]?.N)).toBe(2);
  });

  it('the token lease meets its own write', async () => {
    const { table, name } = await freshStateTable({ attempts: 3 });
    await injectDynamoDbFault({ operation: 'UpdateItem', table: name, fault: { kind: 'applyAndLose' } });

    expect(await table.leaseToken('container-a', T0 + 5_000, T0)).toBe(true);
    expect(await table.leaseToken('container-b', T0 + 5_000, T0)).toBe(false);
  });

  it('a lease given back is that call’s only, not another call’s of the same container', async () => {
    const { table } = await freshStateTable();
    expect(await table.leaseToken('container-a', T0 + 5_000, T0)).toBe(true);

    // Another call of container-a, whose own lease failed, gives back the one it would have taken.
    await table.endLease('container-a', T0 + 9_000);
    const whileHeld = await table.leaseToken('container-b', T0 + 5_000, T0);
    await table.endLease('container-a', T0 + 5_000);

    expect(whileHeld).toBe(false);
    expect(await table.leaseToken('container-b', T0 + 5_000, T0)).toBe(true);
  });

  it('a lease whose answer was lost for good is given back: no container waits it out', async () => {
    const { table, name } = await freshStateTable();
    let issued = 0;
    const fetchToken = async () => ({ value: `tok-${++issued}`, expiresInSeconds: 600 });
    const container = new SharedTokenCache({
      table,
      fetchToken,
      owner: `container-${randomUUID()}`,
      fallback: new TokenCache(fetchToken, () => T0),
      now: () => T0,
      sleep: async () => {},
    });
    // The rejected token's drop goes through; the lease is applied and its answer lost.
    await injectDynamoDbFault({ operation: 'UpdateItem', table: name, fault: { kind: 'slow', ms: 0 } });
    await injectDynamoDbFault({ operation: 'UpdateItem', table: name, fault: { kind: 'applyAndLose' } });

    await container.renew('tok-0', T0 + 20_000);

    expect((await table.readToken())?.leasedUntil ?? 0).toBe(0);
    expect(await table.leaseToken('container-b', T0 + 5_000, T0)).toBe(true);
  });
});
