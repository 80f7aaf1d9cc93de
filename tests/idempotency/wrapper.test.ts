import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { GatewayError, GatewayTimeoutError, OutcomeUnknownError } from '../../lib/envelope/errors.ts';
import { paymentOutcomeResponse } from '../../lib/envelope/payment-outcome.ts';
import { outcomeUnknown } from '../../lib/gateway/advice.ts';
import { createPayHere, type PayHere } from '../../lib/gateway/index.ts';
import { NOTHING } from '../../lib/gateway/payhere.ts';
import { requestFingerprint } from '../../lib/idempotency/fingerprint.ts';
import { type IdempotencyOptions, recordKey, runIdempotent } from '../../lib/idempotency/idempotent.ts';
import { IdempotencyStore } from '../../lib/idempotency/store.ts';
import type { ChargeRequest } from '../../lib/schemas/charge.ts';
import type { Sandbox } from '../../sandbox/server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import {
  chargeBody,
  DAY_SECONDS,
  HOUR_MS,
  localClient,
  manualClock,
  testStore,
  validRequest,
} from './fixtures.ts';

/**
 * The wrapper called as route() calls it, with a real store (dynalite) on a clock the test moves,
 * and real charges against the sandbox. What the handler does is the charge function's own code:
 * payhere.charge / payhere.reconcileCharge and the same answer builder.
 */
let sandbox: Sandbox;
let payhere: PayHere;

beforeAll(async () => {
  sandbox = await startTestGateway();
  payhere = createPayHere(loadConfig(process.env));
});
afterAll(async () => {
  await sandbox.close();
});
beforeEach(() => {
  sandbox.faults.clear();
  sandbox.resetCounters();
});

type Charge = ReturnType<typeof validRequest<ChargeRequest>>;

/** The charge function's answer to a charge or reconciliation result (functions/charge.ts, PAYMENT). */
const answer = async (result: Promise<Awaited<ReturnType<PayHere['reconcileCharge']>>>) => {
  const found = await result;
  // Nothing in PayHere's records within the settle delay: still unknown.
  if (found === NOTHING) throw outcomeUnknown.charge('the order');
  return paymentOutcomeResponse(found.data, found.msg, [2]);
};

function chargeRoute(store: IdempotencyStore): IdempotencyOptions<Charge> {
  return {
    operation: 'charge',
    store,
    reconcile: ({ body, deadline }, startedAt) =>
      answer(payhere.reconcileCharge(body, { sentAt: startedAt, until: startedAt + 20_000 }, deadline)),
  };
}

/** One invocation of the charge route with `key`; `executions` counts how often the handler ran. */
function charger(store: IdempotencyStore) {
  const executions = { count: 0 };
  const run = (key: string, request: Charge) =>
    runIdempotent(chargeRoute(store), key, request, () => {
      executions.count++;
      return answer(payhere.charge(request.body, request.deadline));
    });
  return { run, executions };
}

const charges = () => sandbox.counters().charge ?? 0;
const parsed = (result: APIGatewayProxyResult) => JSON.parse(result.body);

describe('expiry, on an injected clock', () => {
  it('replays at 23 hours and runs afresh once the record expired', async () => {
    const clock = manualClock();
    const { run } = charger(testStore(clock.now));
    const key = randomUUID();
    const request = validRequest(chargeBody());

    const first = await run(key, request);
    clock.advance(23 * HOUR_MS);
    const at23Hours = await run(key, validRequest(request.body));
    clock.advance(HOUR_MS + 1_000);
    const afterExpiry = await run(key, validRequest(request.body));

    expect(first.statusCode).toBe(200);
    expect(at23Hours.statusCode).toBe(200);
    expect(at23Hours.body).toBe(first.body);
    expect(at23Hours.headers?.['Idempotent-Replayed']).toBe('true');
    expect(afterExpiry.statusCode).toBe(200);
    expect(afterExpiry.headers?.['Idempotent-Replayed']).toBeUndefined();
    expect(parsed(afterExpiry).data.payment_id).not.toBe(parsed(first).data.payment_id);
    expect(charges()).toBe(2);
  });

  it('keeps the answer for IDEMPOTENCY_TTL_SECONDS when it is longer than a day', async () => {
    const clock = manualClock();
    const store = new IdempotencyStore({
      client: localClient(),
      table: process.env.IDEMPOTENCY_TABLE!,
      ttlSeconds: 2 * DAY_SECONDS,
      now: clock.now,
    });
    const { run } = charger(store);
    const key = randomUUID();
    const request = validRequest(chargeBody());

    await run(key, request);
    clock.advance(47 * HOUR_MS);
    const at47Hours = await run(key, validRequest(request.body));

    expect(at47Hours.headers?.['Idempotent-Replayed']).toBe('true');
    expect(charges()).toBe(1);
  });
});

describe('an unknown outcome, on an injected clock', () => {
  it('outlives the TTL: a week later the same key reconciles and never charges again', async () => {
    const clock = manualClock();
    const { run, executions } = charger(testStore(clock.now));
    const key = randomUUID();
    const request = validRequest(chargeBody());
    sandbox.faults.inject('charge', { kind: 'resetBeforeProcessing' });

    const first = await run(key, request);
    clock.advance(7 * DAY_SECONDS * 1000);
    const weekLater = await run(key, validRequest(request.body));

    expect(first.statusCode).toBe(202);
    expect(weekLater.statusCode).toBe(202);
    expect(parsed(weekLater).data.code).toBe('outcome_unknown');
    expect(executions.count).toBe(1);
    expect(charges()).toBe(1);
  });

  it('never expires for a route without reconciliation either', async () => {
    const clock = manualClock();
    const store = testStore(clock.now);
    const key = randomUUID();
    const request = validRequest(chargeBody());
    let executions = 0;
    const lost = async () => {
      executions++;
      throw new OutcomeUnknownError('lost');
    };

    await runIdempotent({ operation: 'capture', store }, key, request, lost);
    clock.advance(30 * DAY_SECONDS * 1000);
    const monthLater = await runIdempotent({ operation: 'capture', store }, key, request, lost);

    expect(monthLater.statusCode).toBe(202);
    expect(monthLater.headers?.['Idempotent-Replayed']).toBe('true');
    expect(executions).toBe(1);
  });
});

describe('a record left in flight', () => {
  /** What a crashed invocation leaves behind: an in_progress record nobody will finish. */
  async function abandoned(store: IdempotencyStore, request: Charge, lockMs: number) {
    const key = randomUUID();
    const begun = await store.begin(
      recordKey('charge', request.caller.sub, key),
      requestFingerprint(request),
      store.now() + lockMs,
    );
    if (!('acquired' in begun)) throw new Error('expected a fresh record');
    return { key, record: begun.acquired };
  }

  it('answers 409 with Retry-After until the holder’s deadline, and never runs the handler', async () => {
    const clock = manualClock();
    const store = testStore(clock.now);
    const { run, executions } = charger(store);
    const request = validRequest(chargeBody());
    const { key } = await abandoned(store, request, 25_000);

    clock.advance(24_000);
    const answer = await run(key, validRequest(request.body)).catch((error: unknown) => error);

    expect(answer).toMatchObject({ httpStatus: 409, code: 'idempotency_in_progress' });
    expect((answer as { headers: Record<string, string> }).headers['Retry-After']).toBe('1');
    expect(executions.count).toBe(0);
    expect(charges()).toBe(0);
  });

  it('becomes retryable after the deadline: the charge it may have sent is found, not repeated', async () => {
    const clock = manualClock();
    const store = testStore(clock.now);
    const { run, executions } = charger(store);
    const request = validRequest(chargeBody());
    const { key } = await abandoned(store, request, 25_000);
    // The dead invocation's charge reached PayHere before it died.
    const lost = await payhere.charge(request.body, Date.now() + 5_000);

    clock.advance(25_001);
    const retried = await run(key, validRequest(request.body));
    const repeat = await run(key, validRequest(request.body));

    expect(retried.statusCode).toBe(200);
    expect(parsed(retried).data.payment_id).toBe(lost.data.payment_id);
    expect(repeat.headers?.['Idempotent-Replayed']).toBe('true');
    expect(repeat.body).toBe(retried.body);
    expect(executions.count).toBe(0);
    expect(charges()).toBe(1);
  });

  it('becomes retryable after the deadline: nothing found stays outcome_unknown, looked for again at most every 30 s', async () => {
    const clock = manualClock();
    const store = testStore(clock.now);
    const { run, executions } = charger(store);
    const request = validRequest(chargeBody());
    const { key } = await abandoned(store, request, 25_000);

    clock.advance(25_001);
    const retried = await run(key, validRequest(request.body));
    const searchesAfterFirst = sandbox.counters().search;
    clock.advance(12_000);
    const soon = await run(key, validRequest(request.body));
    const searchesMeanwhile = sandbox.counters().search;
    clock.advance(18_000);
    const repeat = await run(key, validRequest(request.body));

    expect(retried.statusCode).toBe(202);
    expect(parsed(retried)).toMatchObject({ status: 0, data: { code: 'outcome_unknown' } });
    // 12 s after the look: its answer again, with when to come back, and PayHere is not asked.
    expect(soon.statusCode).toBe(202);
    expect(soon.body).toBe(retried.body);
    expect(soon.headers).toMatchObject({ 'Retry-After': '18', 'Idempotent-Replayed': 'true' });
    expect(searchesMeanwhile).toBe(searchesAfterFirst);
    expect(repeat.statusCode).toBe(202);
    expect(sandbox.counters().search).toBe(searchesAfterFirst! + 1);
    expect(executions.count).toBe(0);
    expect(charges()).toBe(0);
  });

  it('on a route without reconciliation, becomes a stored outcome_unknown and is never resent', async () => {
    const clock = manualClock();
    const store = testStore(clock.now);
    const request = validRequest({ authorization_token: randomUUID(), amount: 10, deduction_details: 'x' });
    let executions = 0;
    const capture = (key: string) =>
      runIdempotent({ operation: 'capture', store }, key, validRequest(request.body), async () => {
        executions++;
        throw new Error('must not run');
      });
    const key = randomUUID();
    await store.begin(
      recordKey('capture', 'test-caller', key),
      requestFingerprint(request),
      clock.now() + 1_000,
    );

    clock.advance(1_001);
    const first = await capture(key);
    const repeat = await capture(key);

    expect(first.statusCode).toBe(202);
    expect(parsed(first).msg).toMatch(/interrupted/);
    expect(repeat.body).toBe(first.body);
    expect(repeat.headers?.['Idempotent-Replayed']).toBe('true');
    expect(executions).toBe(0);
  });

  it('is left by an invocation whose answer could not be stored, and is then settled without a second charge', async () => {
    const clock = manualClock();
    const store = testStore(clock.now);
    // The table fails exactly when the answer is written, as a throttled or unreachable table would.
    class FinishFails extends IdempotencyStore {
      override async finish(): Promise<boolean> {
        throw new Error('ProvisionedThroughputExceededException');
      }
    }
    const failingFinish = new FinishFails({
      client: localClient(),
      table: process.env.IDEMPOTENCY_TABLE!,
      ttlSeconds: DAY_SECONDS,
      now: clock.now,
    });
    const key = randomUUID();
    const request = validRequest(chargeBody());

    const first = await charger(failingFinish).run(key, request);
    const tooEarly = await charger(store)
      .run(key, validRequest(request.body))
      .catch((error: unknown) => error);
    clock.advance(25_001);
    const later = await charger(store).run(key, validRequest(request.body));

    expect(first.statusCode).toBe(200);
    expect(tooEarly).toMatchObject({ code: 'idempotency_in_progress' });
    expect(later.statusCode).toBe(200);
    expect(parsed(later).data.payment_id).toBe(parsed(first).data.payment_id);
    expect(charges()).toBe(1);
  });
});

describe('failures that provably sent nothing', () => {
  it('release the key: a connect failure answers 503 and the same key then charges once', async () => {
    const store = testStore();
    const deadGateway = createPayHere(
      loadConfig({ ...process.env, GATEWAY_BASE_URL: `http://127.0.0.1:${await freePort()}` }),
    );
    const key = randomUUID();
    const request = validRequest(chargeBody());
    const options = chargeRoute(store);

    const refused = await runIdempotent(options, key, request, () =>
      answer(deadGateway.charge(request.body, request.deadline)),
    ).catch((error: unknown) => error);
    const record = await store.get(recordKey('charge', request.caller.sub, key));
    const retried = await charger(store).run(key, validRequest(request.body));

    expect(refused).toMatchObject({ httpStatus: 503, code: 'gateway_unavailable' });
    expect(record).toBeUndefined();
    expect(retried.statusCode).toBe(200);
    expect(retried.headers?.['Idempotent-Replayed']).toBeUndefined();
    expect(charges()).toBe(1);
  });

  it('release the key: PayHere’s 429 (refused before processing) can be retried with the same key', async () => {
    const { run } = charger(testStore());
    const key = randomUUID();
    const request = validRequest(chargeBody());
    sandbox.faults.inject('charge', { kind: 'rateLimited', retryAfterSeconds: 3 });

    const throttled = await run(key, request).catch((error: unknown) => error);
    const retried = await run(key, validRequest(request.body));

    expect(throttled).toMatchObject({ httpStatus: 429, code: 'rate_limited' });
    expect(retried.statusCode).toBe(200);
    expect(retried.headers?.['Idempotent-Replayed']).toBeUndefined();
    expect(await payhere.paymentsOfOrder(request.body.order_id, Date.now() + 5_000)).toMatchObject({
      data: [expect.objectContaining({ order_id: request.body.order_id })],
    });
  });

  it('include an unreachable store: 503 before anything is sent', async () => {
    const unreachable = testStore(undefined, localClient({ endpoint: 'http://127.0.0.1:9', maxAttempts: 1 }));
    const { run, executions } = charger(unreachable);

    const answer = await run(randomUUID(), validRequest(chargeBody())).catch((error: unknown) => error);

    expect(answer).toMatchObject({ httpStatus: 503, code: 'gateway_unavailable' });
    expect(executions.count).toBe(0);
    expect(charges()).toBe(0);
  });
});

describe('failures that may have reached the gateway', () => {
  it('store a bug after the gateway call as outcome_unknown, never deleted, reconciled on repeat', async () => {
    const clock = manualClock();
    const store = testStore(clock.now);
    const key = randomUUID();
    const request = validRequest(chargeBody());

    const first = await runIdempotent(chargeRoute(store), key, request, async () => {
      await payhere.charge(request.body, request.deadline);
      throw new TypeError("Cannot read properties of undefined (reading 'status_code')");
    });
    clock.advance(30_000);
    const repeat = await charger(store).run(key, validRequest(request.body));

    expect(first.statusCode).toBe(202);
    expect(parsed(first)).toMatchObject({ status: 0, data: { code: 'outcome_unknown' } });
    expect(first.body).not.toMatch(/TypeError|status_code'/);
    expect(repeat.statusCode).toBe(200);
    expect(parsed(repeat).data.order_id).toBe(request.body.order_id);
    expect(charges()).toBe(1);
  });

  it.each([
    ['a 502 gateway_error', 502],
    ['a 504 gateway_timeout', 504],
  ])('treat %s as an unknown outcome, since it cannot prove nothing was sent', async (_, status) => {
    const store = testStore();
    const key = randomUUID();
    const request = validRequest(chargeBody());

    const first = await runIdempotent({ operation: 'charge', store }, key, request, async () => {
      throw status === 502 ? new GatewayError() : new GatewayTimeoutError();
    });
    const record = await store.get(recordKey('charge', request.caller.sub, key));

    expect(first.statusCode).toBe(202);
    expect(record?.state).toBe('outcome_unknown');
  });
});

describe('scope', () => {
  it('keeps the same key of two callers apart', async () => {
    const { run, executions } = charger(testStore());
    const key = randomUUID();

    const alice = await run(key, validRequest(chargeBody(), { sub: 'alice' }));
    const bob = await run(key, validRequest(chargeBody({ amount: 10 }), { sub: 'bob' }));

    expect(alice.statusCode).toBe(200);
    expect(bob.statusCode).toBe(200);
    expect(executions.count).toBe(2);
    expect(charges()).toBe(2);
  });

  it('keeps the same key on two routes apart', async () => {
    const store = testStore();
    const key = randomUUID();
    const request = validRequest(chargeBody());
    let otherRoute = 0;

    await charger(store).run(key, request);
    await runIdempotent({ operation: 'capture', store }, key, validRequest(request.body), async () => {
      otherRoute++;
      return { statusCode: 200, headers: {}, body: '{}' };
    });

    expect(otherRoute).toBe(1);
  });
});
