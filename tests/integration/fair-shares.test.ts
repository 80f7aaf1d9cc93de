import { randomUUID } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { backgroundSettled } from '../../lib/net/background.ts';

// Before any handler loads: metrics on (vitest turns them off), and the shares this file tests.
// Windows of a day, so that no test straddles one; the sizes are the defaults' shape, smaller.
vi.hoisted(() => {
  Object.assign(process.env, {
    POWERTOOLS_METRICS_DISABLED: 'false',
    CALLER_RATE_LIMIT: '4/86400000',
    CALLER_RATE_CAP: '6',
    CALLER_MONEY_RATE_LIMIT: '2/86400000',
    NOTIFY_RATE_LIMIT: '4/86400000',
    ORDER_FAILED_ATTEMPTS: '3/864000000',
    UNKNOWN_LOOK_AGAIN_SECONDS: '30',
  });
});

import { UpdateItemCommand } from '../../lib/dynamodb/index.ts';
import { recordKey } from '../../lib/idempotency/idempotent.ts';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { captureLogs, type LogLine } from '../helpers/logs.ts';
import { notify, signed } from '../helpers/notifications.ts';
import {
  customer,
  customerToken,
  giveSubscription,
  payingCustomer,
  saveCard,
  testLedger,
} from '../helpers/orders.ts';
import { forgetSharedReads } from '../helpers/state-table.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { chargeBody } from '../resilience/fixtures.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';

/**
 * docs/contract.md "Each caller has a share" (issue "No one caller, and no stranger, can take the
 * service from everyone else"), in-process through the handlers against the sandbox: each caller's share, an
 * order's failed attempts, and work that cannot change anything costing PayHere nothing.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

const asCustomer = async (sub: string) => ({ Authorization: `Bearer ${await customerToken(sub)}` });
const price = { items: 'Door bell', currency: 'LKR', amount: 100 };

/** A card-holding customer of its own for each test: shares are counted per customer for a day. */
async function cardHolder(token: string = SEED.customerTokens.success): Promise<string> {
  const sub = customer('payer');
  await saveCard(ledger, sub, token);
  return sub;
}

async function pricedOrder(owner: string): Promise<string> {
  const created = await call('createCheckout', {
    body: { kind: 'charge', ...price },
    headers: { 'On-Behalf-Of': owner },
  });
  expect(created.statusCode).toBe(201);
  return created.body.data.order_id;
}

const chargeOf = (orderId: string, token: string = SEED.customerTokens.success) => ({
  type: 'PAYMENT',
  order_id: orderId,
  ...price,
  customer_token: token,
});

/** Everything the sandbox was asked, all endpoints together. */
const payHereCalls = () => Object.values(sandbox.counters()).reduce((sum, count) => sum + count, 0);

/** The counts a request's metrics line wrote, by name, over every line captured. */
function counted(lines: LogLine[], name: string): number {
  return lines
    .filter((line) => '_aws' in line && name in line)
    .reduce((sum, line) => sum + [line[name] as number | number[]].flat().reduce((a, b) => a + b, 0), 0);
}

describe('a customer’s share', () => {
  it('beyond its money requests: 429 caller_rate_limited with Retry-After, nothing sent, the order free for another charge', async () => {
    const alice = await cardHolder();
    const orders = [await pricedOrder(alice), await pricedOrder(alice), await pricedOrder(alice)];
    const lines = captureLogs('info');

    const first = await call('charge', { body: chargeOf(orders[0]!), headers: await asCustomer(alice) });
    const second = await call('charge', { body: chargeOf(orders[1]!), headers: await asCustomer(alice) });
    const callsBefore = payHereCalls();
    const third = await call('charge', { body: chargeOf(orders[2]!), headers: await asCustomer(alice) });
    const callsAfter = payHereCalls();
    // The merchant, and another customer, are not held up by alice's share.
    const merchants = await call('charge', { body: chargeOf(orders[2]!) });
    const bob = await cardHolder(SEED.customerTokens.successMaster);
    const bobs = await call('charge', {
      body: chargeOf(await pricedOrder(bob), SEED.customerTokens.successMaster),
      headers: await asCustomer(bob),
    });

    expect([first.statusCode, second.statusCode]).toEqual([200, 200]);
    expect(third.statusCode).toBe(429);
    expect(third.body).toMatchObject({ status: -1, data: { code: 'caller_rate_limited' } });
    expect(Number(third.headers['Retry-After'])).toBeGreaterThan(0);
    expect(callsAfter).toBe(callsBefore);
    expect(merchants.statusCode).toBe(200);
    expect(bobs.statusCode).toBe(200);
    expect(counted(lines, 'CallerRateLimited')).toBe(1);
  });

  it('beyond its cap of PayHere calls: reads too are refused, before any PayHere call; a shared answer costs none', async () => {
    const alice = customer('reader');
    await giveSubscription(ledger, alice, SEED.subscriptions.active);
    const headers = await asCustomer(alice);
    const id = String(SEED.subscriptions.active);
    // A read nobody shared is a PayHere call of alice's.
    const unshared = async () => {
      await forgetSharedReads();
      return call('getSubscription', { id, headers });
    };

    // 4 within its share, 2 spare ones (alone, they wait for nobody), then its cap.
    const fits = [];
    for (let i = 0; i < 6; i++) fits.push(await unshared());
    const beyond = await unshared();
    const sharedAnswer = await call('getSubscription', { id });
    const sharedToAlice = await call('getSubscription', { id, headers });

    expect(fits.map((answer) => answer.statusCode)).toEqual(Array(6).fill(200));
    expect(beyond.statusCode).toBe(429);
    expect(beyond.body.data.code).toBe('caller_rate_limited');
    // Her 7th call never reached PayHere; the merchant's read did, and alice may read what it shared.
    expect(sandbox.counters().getSubscription).toBe(7);
    expect(sharedAnswer.statusCode).toBe(200);
    expect(sharedToAlice.statusCode).toBe(200);
  });
});

describe('an order’s failed attempts (card testing)', () => {
  it('after 3 declined charges, the order refuses a 4th with 429 and counts CardTesting, sending nothing', async () => {
    const body = chargeBody();
    const declined = { ...body, customer_token: SEED.customerTokens.declined };
    const lines = captureLogs('info');

    const attempts = [];
    for (let i = 0; i < 3; i++) attempts.push(await call('charge', { body: declined }));
    const charges = sandbox.counters().charge;
    const fourth = await call('charge', { body });
    const chargesAfter = sandbox.counters().charge;
    const another = await call('charge', { body: chargeBody() });

    expect(attempts.map((answer) => answer.statusCode)).toEqual([402, 402, 402]);
    expect(fourth.statusCode).toBe(429);
    expect(fourth.body.msg).toMatch(/declined too many times/);
    expect(Number(fourth.headers['Retry-After'])).toBeGreaterThan(0);
    expect(chargesAfter).toBe(charges);
    expect(counted(lines, 'CardTesting')).toBe(1);
    expect(another.statusCode).toBe(200);
  });
});

describe('work that cannot change anything costs PayHere nothing', () => {
  it('a customer’s second cancel of its subscription is 409 from the ledger, without PayHere', async () => {
    const alice = await payingCustomer(sandbox, ledger, 1, 'cancels');
    const headers = { Authorization: alice.authorization };
    const id = alice.subscriptionId;

    const first = await call('cancelSubscription', { id, headers });
    sandbox.resetCounters();
    const again = await Promise.all([1, 2, 3].map(() => call('cancelSubscription', { id, headers })));

    expect(first.statusCode).toBe(200);
    expect(again.map((answer) => answer.statusCode)).toEqual([409, 409, 409]);
    expect(again[0]!.body.msg).toBe('Subscription is already cancelled.');
    expect(payHereCalls()).toBe(0);
  });

  it('a subscription PayHere says is completed is remembered: the next cancel is 409 without PayHere', async () => {
    const alice = customer('completed');
    await giveSubscription(ledger, alice, SEED.subscriptions.completed);
    const headers = await asCustomer(alice);
    const id = String(SEED.subscriptions.completed);

    const first = await call('cancelSubscription', { id, headers });
    const cancels = sandbox.counters().cancel;
    const second = await call('cancelSubscription', { id, headers });

    expect([first.statusCode, second.statusCode]).toEqual([409, 409]);
    expect(second.body).toEqual(first.body);
    expect(cancels).toBe(1);
    expect(sandbox.counters().cancel).toBe(1);
  });

  it('a subscription a fresh shared answer shows cancelled is 409 without a cancel sent', async () => {
    const alice = customer('shared');
    await giveSubscription(ledger, alice, SEED.subscriptions.cancelled);
    const headers = await asCustomer(alice);
    const id = String(SEED.subscriptions.cancelled);
    const seen = await call('getSubscription', { id, headers });
    // The read's answer is shared once its write lands, after the read answered.
    await backgroundSettled();
    sandbox.resetCounters();

    const cancel = await call('cancelSubscription', { id, headers });

    expect(seen.body.data.status).toBe('CANCELLED');
    expect(cancel.statusCode).toBe(409);
    expect(cancel.body.msg).toBe('Subscription is already cancelled.');
    expect(payHereCalls()).toBe(0);
  });

  it('a cancel takes an Idempotency-Key: its repeat replays the first answer, without PayHere', async () => {
    const alice = customer('keyed');
    await giveSubscription(ledger, alice, SEED.subscriptions.failed);
    const id = String(SEED.subscriptions.failed);
    const headers = { ...(await asCustomer(alice)), 'Idempotency-Key': randomUUID() };

    const first = await call('cancelSubscription', { id, headers });
    const repeat = await call('cancelSubscription', { id, headers });

    expect(first.statusCode).toBe(200);
    expect(repeat.statusCode).toBe(200);
    expect(repeat.body).toEqual(first.body);
    expect(repeat.headers['Idempotent-Replayed']).toBe('true');
    expect(sandbox.counters().cancel).toBe(1);
  });

  it('an unknown outcome is looked for at PayHere at most once per 30 s per key; a repeat in between gets its 202 with Retry-After', async () => {
    const body = chargeBody();
    const key = randomUUID();
    sandbox.faults.inject('charge', { kind: 'reset' });
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
    const lost = await call('charge', { body, idempotencyKey: key });
    sandbox.faults.clear();
    const searches = sandbox.counters().search ?? 0;

    const soon = await Promise.all([1, 2, 3].map(() => call('charge', { body, idempotencyKey: key })));
    const searchesSoon = sandbox.counters().search ?? 0;
    // 30 s later (as the record says), the repeat looks again and finds the one charge.
    await localClient().send(
      new UpdateItemCommand({
        TableName: process.env.IDEMPOTENCY_TABLE!,
        Key: { pk: { S: recordKey('charge', 'test-client', key) } },
        UpdateExpression: 'SET triedAt = :at',
        ExpressionAttributeValues: { ':at': { N: String(Date.now() - 30_000) } },
      }),
    );
    const later = await call('charge', { body, idempotencyKey: key });

    expect(lost.statusCode).toBe(202);
    for (const answer of soon) {
      expect(answer.statusCode).toBe(202);
      expect(answer.body).toEqual(lost.body);
      expect(Number(answer.headers['Retry-After'])).toBeGreaterThan(0);
      expect(Number(answer.headers['Retry-After'])).toBeLessThanOrEqual(30);
    }
    expect(searchesSoon).toBe(searches);
    expect(later.statusCode).toBe(200);
    expect(sandbox.counters().search).toBe(searches + 1);
    expect(sandbox.counters().charge).toBe(1);
  });
});

describe('PayHere’s notifications', () => {
  let orders: string[];

  beforeAll(async () => {
    orders = [];
    for (let i = 0; i < 6; i++) {
      const created = await call('createCheckout', {
        body: { kind: 'payment', ...price },
        headers: { 'On-Behalf-Of': customer('notified') },
      });
      orders.push(created.body.data.order_id);
    }
  });

  it('draw at most their share of confirmations (4 here); the rest are kept as reports, each answered 200', async () => {
    const api = apiClient(sandbox, await accessToken(sandbox));
    for (const orderId of orders) {
      await api.post('payment/charge', { ...chargeOf(orderId), order_id: orderId });
    }
    sandbox.resetCounters();

    const answers = [];
    for (const orderId of orders) {
      answers.push(await notify(signed({ order_id: orderId, payhere_amount: '100.00', status_code: '2' })));
    }
    const states = await Promise.all(orders.map(async (orderId) => (await ledger.getOrder(orderId))?.state));

    expect(answers.map((answer) => answer.statusCode)).toEqual(Array(6).fill(200));
    expect(sandbox.counters().search).toBe(4);
    expect(states.filter((state) => state === 'succeeded')).toHaveLength(4);
    expect(states.filter((state) => state === 'pending')).toHaveLength(2);
  });
});
