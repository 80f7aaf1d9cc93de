import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import type { Answer } from '../helpers/events.ts';
import { type CallOptions, call, useTestGateway } from '../helpers/gateway.ts';
import type { RouteName } from '../helpers/routes.ts';
import { chargeBody } from './fixtures.ts';

/**
 * A client on a bad network fires the same request many times at once. Whatever the interleaving,
 * the gateway sees it once; every other answer is the first answer replayed or a 409 to retry.
 */
const CONCURRENT = 50;

const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });

/** A valid request whose preconditions hold now: a new order, a new hold, a new payment. */
async function prepare(route: RouteName): Promise<CallOptions> {
  switch (route) {
    case 'charge':
      return { body: chargeBody() };
    case 'capture': {
      const held = await call('charge', { body: chargeBody({ type: 'AUTHORIZE', amount: 100 }) });
      return {
        body: { authorization_token: held.body.data.authorization_token, amount: 60, description: 'x' },
      };
    }
    case 'refund': {
      // A partial refund: PayHere would refund it again on every repeat.
      const paid = await call('charge', { body: chargeBody({ amount: 100 }) });
      return { body: { payment_id: paid.body.data.payment_id, description: 'Partial', amount: 10 } };
    }
    case 'retrySubscription':
      return { id: String(SEED.subscriptions.failed) };
    default:
      throw new Error(`not a money route: ${route}`);
  }
}

const ENDPOINT = {
  charge: 'charge',
  capture: 'capture',
  refund: 'refund',
  retrySubscription: 'retry',
} as const;

describe.each(Object.keys(ENDPOINT) as (keyof typeof ENDPOINT)[])('%s', (route) => {
  it(`reaches the gateway once for ${CONCURRENT} concurrent identical requests with one key`, async () => {
    const request = await prepare(route);
    const key = randomUUID();
    sandbox.resetCounters();

    // The gateway answers slowly, so the first wave all arrives while the first request is in
    // flight; the second wave starts the moment the first answer is out.
    sandbox.faults.inject(ENDPOINT[route], { kind: 'latency', ms: 150 });
    let firstAnswerOut!: () => void;
    const firstAnswered = new Promise<void>((resolve) => {
      firstAnswerOut = resolve;
    });
    const fire = async () => {
      const answer = await call(route, { ...request, idempotencyKey: key });
      if (answer.statusCode !== 409) firstAnswerOut();
      return answer;
    };
    const firstWave = Promise.all(Array.from({ length: CONCURRENT / 2 }, fire));
    const secondWave = firstAnswered.then(() => Promise.all(Array.from({ length: CONCURRENT / 2 }, fire)));
    const answers = [...(await firstWave), ...(await secondWave)];
    const afterwards = await call(route, { ...request, idempotencyKey: key });

    expect(sandbox.counters()[ENDPOINT[route]]).toBe(1);
    const originals = answers.filter(
      (a) => a.statusCode !== 409 && a.headers['Idempotent-Replayed'] !== 'true',
    );
    expect(originals).toHaveLength(1);
    const original = originals[0]!;
    expect(original.statusCode).toBe(200);
    for (const answer of answers) {
      if (answer === original) continue;
      if (answer.statusCode === 409) expectRetryLater(answer);
      else expectReplayOf(answer, original);
    }
    expectReplayOf(afterwards, original);
    // Both kinds of repeat were exercised: during the first request and after it.
    expect(answers.some((a) => a.statusCode === 409)).toBe(true);
    expect(answers.some((a) => a.headers['Idempotent-Replayed'] === 'true')).toBe(true);
  });
});

function expectRetryLater(answer: Answer) {
  expect(answer.body).toMatchObject({ status: -1, data: { code: 'idempotency_in_progress' } });
  expect(Number(answer.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
}

function expectReplayOf(answer: Answer, original: Answer) {
  expect(answer.statusCode).toBe(original.statusCode);
  expect(answer.raw).toBe(original.raw);
  expect(answer.headers['Idempotent-Replayed']).toBe('true');
}
