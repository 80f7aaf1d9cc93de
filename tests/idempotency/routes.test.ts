import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, SEED } from '../../sandbox/server.ts';
import { testToken } from '../helpers/auth.ts';
import type { Answer } from '../helpers/events.ts';
import { call, startTestGateway } from '../helpers/gateway.ts';
import { chargeBody } from './fixtures.ts';

/** docs/contract.md "Idempotency" through the deployed handlers, against the sandbox and dynalite. */
let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startTestGateway();
  // The container's first access token, so the counters below show only the calls under test.
  await call('retrievePayments', { id: SEED.orders.sample });
});
afterAll(async () => {
  await sandbox.close();
});
beforeEach(() => {
  sandbox.faults.clear();
  sandbox.resetState();
  sandbox.resetCounters();
});

const moneyCalls = () => {
  const { charge = 0, capture = 0, refund = 0, retry = 0, search = 0 } = sandbox.counters();
  return charge + capture + refund + retry + search;
};

function expectReplayOf(repeat: Answer, first: Answer) {
  expect(repeat.statusCode).toBe(first.statusCode);
  expect(repeat.raw).toBe(first.raw);
  expect(repeat.headers['Idempotent-Replayed']).toBe('true');
  expect(repeat.headers['Content-Type']).toBe(first.headers['Content-Type']);
}

const requests = {
  charge: () => ({ body: chargeBody() }),
  capture: () => ({
    body: { authorization_token: SEED.authorizationTokens.capturable, amount: 80, deduction_details: 'x' },
  }),
  refund: () => ({ body: { payment_id: SEED.payments.refundable, description: 'Item is out of stock' } }),
  retrySubscription: () => ({ id: String(SEED.subscriptions.failed) }),
} as const;

describe.each(Object.keys(requests) as (keyof typeof requests)[])('%s', (route) => {
  it('refuses a request without Idempotency-Key with 400 naming the header; nothing reaches the gateway', async () => {
    const answer = await call(route, { ...requests[route](), idempotencyKey: null });

    expect(answer.statusCode).toBe(400);
    expect(answer.body).toMatchObject({ status: -1, data: { code: 'invalid_request' } });
    expect(answer.body.data.errors).toEqual([{ path: 'Idempotency-Key', message: expect.any(String) }]);
    expect(answer.body.msg).toContain('Idempotency-Key');
    expect(moneyCalls()).toBe(0);
  });

  it('refuses a malformed Idempotency-Key with 400 naming the header; nothing reaches the gateway', async () => {
    const answer = await call(route, { ...requests[route](), idempotencyKey: 'not a valid key!' });

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.errors).toEqual([
      { path: 'Idempotency-Key', message: expect.stringMatching(/1 to 255 characters/) },
    ]);
    expect(moneyCalls()).toBe(0);
  });

  it('answers a repeat from the store: same status, same bytes, Idempotent-Replayed, no upstream call', async () => {
    const request = requests[route]();
    const key = randomUUID();
    const first = await call(route, { ...request, idempotencyKey: key });
    const callsAfterFirst = moneyCalls();

    const repeat = await call(route, { ...request, idempotencyKey: key });

    expect(first.statusCode).toBe(200);
    expect(first.headers['Idempotent-Replayed']).toBeUndefined();
    expectReplayOf(repeat, first);
    expect(moneyCalls()).toBe(callsAfterFirst);
  });
});

describe('what is stored', () => {
  it('lists the header with the body’s bad fields when both are wrong', async () => {
    const answer = await call('charge', { body: { ...chargeBody(), amount: -1 }, idempotencyKey: null });

    expect(answer.statusCode).toBe(400);
    const paths = new Set(answer.body.data.errors.map((error: { path: string }) => error.path));
    expect(paths).toEqual(new Set(['Idempotency-Key', 'amount']));
  });

  it('does not store an invalid request: the key still works once the body is fixed', async () => {
    const key = randomUUID();
    const body = chargeBody();

    const invalid = await call('charge', { body: { ...body, amount: 0 }, idempotencyKey: key });
    const valid = await call('charge', { body, idempotencyKey: key });

    expect(invalid.statusCode).toBe(400);
    expect(valid.statusCode).toBe(200);
    expect(valid.headers['Idempotent-Replayed']).toBeUndefined();
  });

  it('replays a declined card (402) rather than trying the card again', async () => {
    const key = randomUUID();
    const body = chargeBody({ customer_token: SEED.customerTokens.declined });

    const first = await call('charge', { body, idempotencyKey: key });
    const repeat = await call('charge', { body, idempotencyKey: key });

    expect(first.statusCode).toBe(402);
    expectReplayOf(repeat, first);
    expect(sandbox.counters().charge).toBe(1);
  });

  it('replays a gateway refusal (409 conflict) as the answer it was', async () => {
    const key = randomUUID();
    const body = {
      authorization_token: SEED.authorizationTokens.released,
      amount: 10,
      deduction_details: 'x',
    };

    const first = await call('capture', { body, idempotencyKey: key });
    const repeat = await call('capture', { body, idempotencyKey: key });

    expect(first.statusCode).toBe(409);
    expect(first.body.data.code).toBe('conflict');
    expectReplayOf(repeat, first);
    expect(sandbox.counters().capture).toBe(1);
  });

  it('answers 422 idempotency_key_reused for the same key with a different request, without calling the gateway', async () => {
    const key = randomUUID();
    const body = chargeBody();
    await call('charge', { body, idempotencyKey: key });
    sandbox.resetCounters();

    const reused = await call('charge', { body: { ...body, amount: 1 }, idempotencyKey: key });

    expect(reused.statusCode).toBe(422);
    expect(reused.body).toMatchObject({ status: -1, data: { code: 'idempotency_key_reused' } });
    expect(reused.headers['Idempotent-Replayed']).toBeUndefined();
    expect(moneyCalls()).toBe(0);
  });

  it('lets a cancel (a DELETE) through without a key', async () => {
    const answer = await call('cancelSubscription', { id: String(SEED.subscriptions.active) });

    expect(answer.statusCode).toBe(200);
  });
});

describe('a lost answer repeated with the same key', () => {
  it('charged, answer lost, search down: 202 first, then the repeat reconciles the one charge', async () => {
    const key = randomUUID();
    const body = chargeBody();
    sandbox.faults.inject('charge', { kind: 'reset' });
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);

    const first = await call('charge', { body, idempotencyKey: key });
    const searchesBefore = sandbox.counters().search!;
    const repeat = await call('charge', { body, idempotencyKey: key });
    const third = await call('charge', { body, idempotencyKey: key });

    expect(first.statusCode).toBe(202);
    expect(first.body).toMatchObject({ status: 0, data: { code: 'outcome_unknown' } });
    expect(repeat.statusCode).toBe(200);
    expect(repeat.body).toMatchObject({ status: 1, data: { order_id: body.order_id, status_code: 2 } });
    expect(repeat.headers['Idempotent-Replayed']).toBeUndefined();
    expect(sandbox.counters().search).toBe(searchesBefore + 1);
    expectReplayOf(third, repeat);
    expect(sandbox.counters().charge).toBe(1);
    const payments = await call('retrievePayments', { id: body.order_id });
    expect(payments.body.data).toHaveLength(1);
    expect(payments.body.data[0].payment_id).toBe(repeat.body.data.payment_id);
  });

  it('charged, answer lost, found at once: the repeat replays the reconciled answer', async () => {
    const key = randomUUID();
    const body = chargeBody();
    sandbox.faults.inject('charge', { kind: 'reset' });

    const first = await call('charge', { body, idempotencyKey: key });
    const repeat = await call('charge', { body, idempotencyKey: key });

    expect(first.statusCode).toBe(200);
    expectReplayOf(repeat, first);
    expect(sandbox.counters()).toMatchObject({ charge: 1, search: 1 });
  });

  it('never processed: 202 stays, every repeat searches again and none charges', async () => {
    const key = randomUUID();
    const body = chargeBody();
    sandbox.faults.inject('charge', { kind: 'resetBeforeProcessing' });

    const first = await call('charge', { body, idempotencyKey: key });
    const second = await call('charge', { body, idempotencyKey: key });
    const third = await call('charge', { body, idempotencyKey: key });

    for (const answer of [first, second, third]) {
      expect(answer.statusCode).toBe(202);
      expect(answer.body.data.code).toBe('outcome_unknown');
    }
    expect(sandbox.counters()).toMatchObject({ charge: 1, search: 3 });
  });

  /** A hold or a payment made through the service: the ledger knows its order. */
  const held = async () => (await call('charge', { body: chargeBody({ type: 'AUTHORIZE' }) })).body.data;
  const paid = async () => (await call('charge', { body: chargeBody() })).body.data;

  it.each([
    [
      'capture',
      'capture',
      async () => ({
        body: {
          authorization_token: (await held()).authorization_token,
          amount: 100,
          deduction_details: 'x',
        },
      }),
      /GET \/gateway\/api\/payments\//,
    ],
    [
      'refund',
      'refund',
      async () => ({ body: { payment_id: (await paid()).payment_id, description: 'Returned' } }),
      /REFUND REQUESTED/,
    ],
    [
      'retrySubscription',
      'retry',
      async () => ({ id: String(SEED.subscriptions.failed) }),
      /GET \/gateway\/api\/subscriptions\/\d+\/payments/,
    ],
  ] as const)(
    '%s, answer lost: 202 naming the read that shows it, then the repeat settles it from PayHere’s records',
    async (route, endpoint, prepare, advice) => {
      const key = randomUUID();
      const request = await prepare();
      sandbox.resetCounters();
      sandbox.faults.inject(endpoint, { kind: 'reset' });
      sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
      sandbox.faults.inject('subscriptionPayments', { kind: 'status', status: 503 }, 3);

      const first = await call(route, { ...request, idempotencyKey: key });
      sandbox.faults.clear();
      const repeat = await call(route, { ...request, idempotencyKey: key });

      expect(first.statusCode).toBe(202);
      expect(first.body.data.code).toBe('outcome_unknown');
      expect(first.body.msg).toMatch(advice);
      expect(repeat.statusCode).toBe(200);
      expect(repeat.body.status).toBe(1);
      expect(sandbox.counters()[endpoint]).toBe(1);
    },
  );

  it('capture of a hold the ledger does not know, answer lost: 202 with advice, replayed, never resent', async () => {
    const key = randomUUID();
    const request = requests.capture();
    sandbox.faults.inject('capture', { kind: 'reset' });

    const first = await call('capture', { ...request, idempotencyKey: key });
    const repeat = await call('capture', { ...request, idempotencyKey: key });

    expect(first.statusCode).toBe(202);
    expect(first.body.msg).toMatch(/GET \/gateway\/api\/payments\/\{order_id\}/);
    expect(repeat.statusCode).toBe(202);
    expect(sandbox.counters().capture).toBe(1);
  });
});

describe('the caller behind a key', () => {
  it('is the token subject: the same key from two users is two requests, from one user a replay', async () => {
    const key = randomUUID();
    const as = async (sub: string) => `Bearer ${await testToken({ scope: 'payments:charge merchant', sub })}`;
    const body = chargeBody();

    const alice = await call('charge', {
      body,
      headers: { Authorization: await as('alice') },
      idempotencyKey: key,
    });
    // Another order: bob's request differs, so a key shared across callers would answer 422.
    const bob = await call('charge', {
      body: chargeBody(),
      headers: { Authorization: await as('bob') },
      idempotencyKey: key,
    });
    const aliceAgain = await call('charge', {
      body,
      headers: { Authorization: await as('alice') },
      idempotencyKey: key,
    });

    expect([alice.statusCode, bob.statusCode]).toEqual([200, 200]);
    expect(bob.body.data.payment_id).not.toBe(alice.body.data.payment_id);
    expect(aliceAgain.headers['Idempotent-Replayed']).toBe('true');
    expect(sandbox.counters().charge).toBe(2);
  });
});
