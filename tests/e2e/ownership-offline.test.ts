import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import type { Offline } from '../../scripts/offline.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, tokenFor } from '../helpers/auth.ts';
import { startOfflineAgainst } from '../helpers/offline.ts';
import {
  CUSTOMER_SCOPES,
  customer,
  customerToken,
  giveSubscription,
  saveCard,
  testLedger,
} from '../helpers/orders.ts';

/**
 * docs/contract.md "Callers, roles and ownership", through the whole path a client takes (HTTP →
 * serverless-offline → bundled handler → sandbox): two customers and the merchant, every route.
 * Bob holds every route scope, yet nothing of Alice's exists for him: each attempt answers 404
 * exactly as an object that does not exist, and PayHere sees no call. Alice can; the merchant can.
 */
let sandbox: Sandbox;
let offline: Offline;
let api: string;

const ledger = testLedger();
const alice = customer('alice');
const bob = customer('bob');

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false });
  ({ offline, api } = await startOfflineAgainst(sandbox, TEST_AUTH_ENV));
  await saveCard(ledger, alice, SEED.customerTokens.success);
  await saveCard(ledger, bob, SEED.customerTokens.successMaster);
  await giveSubscription(ledger, alice, SEED.subscriptions.active);
  await giveSubscription(ledger, alice, SEED.subscriptions.failed);
}, 120_000);

afterAll(async () => {
  await offline?.stop();
  await sandbox?.close();
});

beforeEach(() => sandbox.resetCounters());

const gatewayCalls = () => Object.values(sandbox.counters()).reduce((sum, count) => sum + count, 0);

type Who = 'alice' | 'bob' | 'merchant';

async function bearer(who: Who): Promise<string> {
  if (who === 'merchant') return `Bearer ${await tokenFor(MERCHANT_SCOPES)}`;
  return `Bearer ${await customerToken(who === 'alice' ? alice : bob, CUSTOMER_SCOPES)}`;
}

async function request(
  who: Who,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: {
      authorization: await bearer(who),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(method === 'POST' ? { 'idempotency-key': randomUUID() } : {}),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    body: (await response.json()) as { status: number; msg: string; data: any },
  };
}

const price = { items: 'Taxi Hire 123', currency: 'LKR', amount: 345.67 };

/** An order the merchant priced for Alice: a payment (`charge`) or a hold (`authorize`), on her behalf. */
async function aliceOrder(kind: 'charge' | 'authorize' = 'charge'): Promise<string> {
  const created = await request(
    'merchant',
    'POST',
    '/checkouts',
    { kind, ...price },
    { 'on-behalf-of': alice },
  );
  expect(created.status).toBe(201);
  return created.body.data.order_id;
}

const charge = (orderId: string, token: string, type = 'PAYMENT') => ({
  type,
  order_id: orderId,
  ...price,
  customer_token: token,
});

/** Bob's answer for one of Alice's objects, and for an object that exists nowhere: the same. */
async function expectInvisibleToBob(
  attempt: (id: string) => ReturnType<typeof request>,
  aliceId: string,
  missingId: string,
) {
  const forAlices = await attempt(aliceId);
  const forMissing = await attempt(missingId);

  expect(forAlices.status).toBe(404);
  expect(forAlices.body.data).toEqual({ code: 'not_found' });
  expect(forAlices.body.status).toBe(-1);
  expect(forAlices.body.msg.replaceAll(aliceId, 'ID')).toBe(forMissing.body.msg.replaceAll(missingId, 'ID'));
  expect(forMissing.status).toBe(404);
  expect(gatewayCalls()).toBe(0);
}

describe('payments', () => {
  let orderId: string;
  let paymentId: number;
  let holdOrderId: string;
  let holdToken: string;

  beforeAll(async () => {
    orderId = await aliceOrder();
    holdOrderId = await aliceOrder('authorize');
  });

  it('Bob cannot charge Alice’s order, even with his own card', async () => {
    await expectInvisibleToBob(
      (id) => request('bob', 'POST', '/payments/charge', charge(id, SEED.customerTokens.successMaster)),
      orderId,
      `Missing-${randomUUID()}`,
    );
  });

  it('Bob cannot charge Alice’s card, on an order of his own', async () => {
    const created = await request(
      'merchant',
      'POST',
      '/checkouts',
      { kind: 'charge', ...price },
      { 'on-behalf-of': bob },
    );

    const attempt = await request(
      'bob',
      'POST',
      '/payments/charge',
      charge(created.body.data.order_id, SEED.customerTokens.success),
    );
    const unknownCard = await request(
      'bob',
      'POST',
      '/payments/charge',
      charge(created.body.data.order_id, 'F'.repeat(32)),
    );

    expect(attempt.status).toBe(404);
    expect(attempt.body).toEqual(unknownCard.body);
    expect(gatewayCalls()).toBe(0);
  });

  it('Alice charges her order with her card; her answer omits what is the merchant’s business', async () => {
    const charged = await request(
      'alice',
      'POST',
      '/payments/charge',
      charge(orderId, SEED.customerTokens.success),
    );

    expect(charged.status).toBe(200);
    expect(charged.body.data).toMatchObject({ order_id: orderId, status_code: 2 });
    expect(charged.body.data).not.toHaveProperty('md5sig');
    paymentId = charged.body.data.payment_id;
  });

  it('Alice holds an amount on her card for her other order', async () => {
    const held = await request(
      'alice',
      'POST',
      '/payments/charge',
      charge(holdOrderId, SEED.customerTokens.success, 'AUTHORIZE'),
    );

    expect(held.status).toBe(200);
    holdToken = held.body.data.authorization_token;
    expect(holdToken).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('Bob cannot read Alice’s payments', async () => {
    await expectInvisibleToBob(
      (id) => request('bob', 'GET', `/payments/${id}`),
      orderId,
      `Missing-${randomUUID()}`,
    );
  });

  it('Bob cannot read Alice’s order', async () => {
    await expectInvisibleToBob(
      (id) => request('bob', 'GET', `/checkouts/${id}`),
      orderId,
      `Missing-${randomUUID()}`,
    );
  });

  it('Bob cannot capture Alice’s hold', async () => {
    await expectInvisibleToBob(
      (token) =>
        request('bob', 'POST', '/payments/capture', {
          authorization_token: token,
          amount: 10,
          deduction_details: 'x',
        }),
      holdToken,
      randomUUID(),
    );
  });

  it('Bob cannot refund Alice’s payment nor release her hold', async () => {
    await expectInvisibleToBob(
      (id) => request('bob', 'POST', '/payments/refund', { payment_id: Number(id), description: 'Mine now' }),
      String(paymentId),
      '329999999999',
    );
    await expectInvisibleToBob(
      (token) =>
        request('bob', 'POST', '/payments/refund', { authorization_token: token, description: 'Mine now' }),
      holdToken,
      randomUUID(),
    );
  });

  it('Alice reads her payments and her order, without the merchant’s fields; the merchant sees them', async () => {
    const hers = await request('alice', 'GET', `/payments/${orderId}`);
    const merchants = await request('merchant', 'GET', `/payments/${orderId}`);
    const order = await request('alice', 'GET', `/checkouts/${orderId}`);

    expect(hers.status).toBe(200);
    expect(hers.body.data).toHaveLength(1);
    expect(hers.body.data[0]).toMatchObject({ payment_id: paymentId, customer: expect.any(Object) });
    expect(hers.body.data[0]).not.toHaveProperty('amount_detail');
    expect(merchants.body.data[0]).toHaveProperty('amount_detail');
    expect(order.body.data).toMatchObject({
      order_id: orderId,
      kind: 'charge',
      status: 'succeeded',
      payment_id: paymentId,
    });
  });

  it('Alice captures her own hold; the merchant refunds her payment', async () => {
    const captured = await request('alice', 'POST', '/payments/capture', {
      authorization_token: holdToken,
      amount: 300,
      deduction_details: 'Part of the order',
    });
    const refunded = await request('merchant', 'POST', '/payments/refund', {
      payment_id: paymentId,
      description: 'Returned',
    });

    expect(captured.status).toBe(200);
    expect(captured.body.data).not.toHaveProperty('md5sig');
    expect(refunded.status).toBe(200);
  });

  it('Alice refunds her own payment when her token allows it (normally only the merchant’s does)', async () => {
    const refunded = await request('alice', 'POST', '/payments/refund', {
      payment_id: paymentId,
      description: 'Changed my mind',
      amount: 1,
    });

    // The merchant refunded it in full already: the service's own refund records refuse it, which
    // shows the request got past ownership (another customer is told the payment does not exist).
    expect(refunded.status).toBe(409);
    expect(refunded.body.msg).toBe(`Payment ${paymentId} is refunded in full already: nothing was sent.`);
  });
});

describe('subscriptions', () => {
  const active = String(SEED.subscriptions.active);
  const failed = String(SEED.subscriptions.failed);
  const missing = String(SEED.subscriptions.unknown);

  it('lists only the caller’s own: Alice two, Bob none, the merchant all', async () => {
    const hers = await request('alice', 'GET', '/subscriptions');
    const his = await request('bob', 'GET', '/subscriptions');
    const all = await request('merchant', 'GET', '/subscriptions');

    expect(hers.body.msg).toBe('Found 2 subscriptions');
    expect(hers.body.data.map((s: any) => String(s.subscription_id)).sort()).toEqual([active, failed].sort());
    for (const record of hers.body.data) expect(record).not.toHaveProperty('amount_detail');
    expect(his).toMatchObject({ status: 200, body: { msg: 'Found 0 subscriptions', data: [] } });
    expect(all.body.data.length).toBeGreaterThanOrEqual(4);
    expect(all.body.msg).toBe(`Found ${all.body.data.length} subscriptions`);
  });

  it.each([
    ['read', 'GET', (id: string) => `/subscriptions/${id}`],
    ['list the payments of', 'GET', (id: string) => `/subscriptions/${id}/payments`],
    ['retry', 'POST', (id: string) => `/subscriptions/${id}/retry`],
    ['cancel', 'DELETE', (id: string) => `/subscriptions/${id}`],
  ] as const)('Bob cannot %s Alice’s subscription', async (_, method, path) => {
    const target = method === 'POST' ? failed : active;

    await expectInvisibleToBob((id) => request('bob', method, path(id)), target, missing);
  });

  it('Bob cannot reach Alice’s subscription by writing its id with a leading zero', async () => {
    const answer = await request('bob', 'GET', `/subscriptions/0${active}`);

    expect(answer.status).toBe(404);
    expect(gatewayCalls()).toBe(0);
  });

  it('Alice reads hers without the merchant’s fields, retries her failed one and cancels her active one', async () => {
    const one = await request('alice', 'GET', `/subscriptions/${active}`);
    const payments = await request('alice', 'GET', `/subscriptions/${active}/payments`);
    const retried = await request('alice', 'POST', `/subscriptions/${failed}/retry`);
    const cancelled = await request('alice', 'DELETE', `/subscriptions/${active}`);

    expect(one.status).toBe(200);
    expect(one.body.data).not.toHaveProperty('amount_detail');
    expect(payments.status).toBe(200);
    for (const record of payments.body.data) expect(record).not.toHaveProperty('amount_detail');
    expect(retried.status).toBe(200);
    expect(cancelled.status).toBe(200);
  });

  it('the merchant reads any subscription with every field', async () => {
    const one = await request('merchant', 'GET', `/subscriptions/${SEED.subscriptions.completed}`);

    expect(one.status).toBe(200);
    expect(one.body.data).toHaveProperty('amount_detail');
  });
});

describe('On-Behalf-Of', () => {
  it('is the merchant’s: a customer sending it is forbidden, and nothing is created', async () => {
    const answer = await request(
      'bob',
      'POST',
      '/checkouts',
      { kind: 'preapproval', items: 'Card', currency: 'LKR' },
      {
        'on-behalf-of': alice,
      },
    );

    expect(answer.status).toBe(403);
    expect(answer.body.data).toEqual({ code: 'forbidden' });
  });
});

describe('one payment per order, across containers', () => {
  it('twenty charges of one order at once, each with its own key, send one charge to PayHere', async () => {
    const orderId = await aliceOrder();
    const body = charge(orderId, SEED.customerTokens.success);

    // serverless-offline starts more workers (module state of their own) when the busy ones are taken.
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => request('alice', 'POST', '/payments/charge', body)),
    );

    expect(answers.map((answer) => answer.status).sort()).toEqual([200, ...Array<number>(19).fill(409)]);
    expect(sandbox.counters().charge).toBe(1);
  });
});
