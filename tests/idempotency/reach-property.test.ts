import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import type { DynamoDBClient } from '../../lib/dynamodb/index.ts';
import { errorResponse } from '../../lib/envelope/error-response.ts';
import { paymentOutcomeResponse } from '../../lib/envelope/payment-outcome.ts';
import { outcomeUnknown } from '../../lib/gateway/advice.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { NOTHING, type PayHere } from '../../lib/gateway/payhere.ts';
import { recordKey, runIdempotent } from '../../lib/idempotency/idempotent.ts';
import type { Fault } from '../../sandbox/server.ts';
import { lambdaContext } from '../helpers/events.ts';
import { useTestGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { propertyRuns } from '../helpers/property-runs.ts';
import { chargeBody, localClient, manualClock, testStore, validRequest } from './fixtures.ts';

/**
 * The gateway client and the idempotency wrapper together, over random fault sequences: a charge
 * repeated up to three times with one key, each attempt meeting a fault at PayHere (processed or
 * not, answered or not), at the table (slow, failing, the SDK repeating a write that was done), in
 * the limiter (a wait beyond the deadline) or in the network (nothing listening). Two promises must
 * hold in every scenario: a request that may have reached PayHere is never sent again, and a key
 * whose request provably never left is never left outcome_unknown.
 */
const sandbox = useTestGateway({ beforeEachTest: 'nothing' });
const RUNS = propertyRuns(500);

/** What PayHere does with a charge, and whether the client can tell it was not processed. */
const GATEWAY_FAULTS = {
  none: { fault: undefined, mayHaveReached: true },
  resetAfterProcessing: { fault: { kind: 'reset' } as Fault, mayHaveReached: true },
  resetBeforeProcessing: { fault: { kind: 'resetBeforeProcessing' } as Fault, mayHaveReached: true },
  hang: { fault: { kind: 'hang' } as Fault, mayHaveReached: true },
  error500Processed: { fault: { kind: 'status', status: 500, process: true } as Fault, mayHaveReached: true },
  error502: { fault: { kind: 'status', status: 502 } as Fault, mayHaveReached: true },
  htmlProcessed: { fault: { kind: 'nonJson', process: true } as Fault, mayHaveReached: true },
  tooManyRequests: { fault: { kind: 'rateLimited', retryAfterSeconds: 1 } as Fault, mayHaveReached: false },
  tokenRefused: { fault: { kind: 'invalidToken' } as Fault, mayHaveReached: false },
  authenticationError: {
    fault: {
      kind: 'status',
      status: 200,
      contentType: 'application/json',
      body: '{"status":-2,"msg":"Authentication error","data":null}',
    } as Fault,
    mayHaveReached: false,
  },
} as const;
type GatewayFault = keyof typeof GATEWAY_FAULTS;

/**
 * `releaseFails`: the delete of a record fails, its mark as not sent does not. `tableDown`: every
 * write after the first fails, so nothing can record that a request was not sent; that key may stay
 * locked, then unknown (never sent twice), and the one case the second promise cannot cover.
 */
type TableFault =
  | 'none'
  | 'slow'
  | 'beginFails'
  | 'finishFails'
  | 'releaseFails'
  | 'tableDown'
  | 'sdkRepeats';
type Path = 'gateway' | 'nothingListening' | 'limiterFull' | 'deadlinePassed';

interface Attempt {
  gateway: GatewayFault;
  searchDown: boolean;
  table: TableFault;
  path: Path;
  /** Time passing before the attempt: past the previous attempt's lock, or not. */
  later: boolean;
}

const attempt: fc.Arbitrary<Attempt> = fc.record({
  // A hang waits out the attempt's deadline: rarer, to keep the run short.
  gateway: fc.constantFrom<GatewayFault>(
    ...(Object.keys(GATEWAY_FAULTS) as GatewayFault[]).flatMap((fault) =>
      fault === 'hang' ? [fault] : [fault, fault],
    ),
    'none',
    'none',
  ),
  searchDown: fc.boolean(),
  table: fc.constantFrom<TableFault>(
    'none',
    'none',
    'none',
    'slow',
    'beginFails',
    'finishFails',
    'releaseFails',
    'tableDown',
    'sdkRepeats',
  ),
  // Nothing listening costs the client's own backoff between connection attempts: rarer, to keep the run short.
  path: fc.constantFrom<Path>(
    ...Array<Path>(8).fill('gateway'),
    'nothingListening',
    'limiterFull',
    'deadlinePassed',
  ),
  later: fc.boolean(),
});

/** The table, misbehaving as the current attempt says. */
function faultyTable() {
  const base = localClient();
  let mode: TableFault = 'none';
  const client = {
    send: async (command: { constructor: { name: string } }) => {
      const name = command.constructor.name;
      const fails =
        (mode === 'beginFails' && name === 'PutItemCommand') ||
        (mode === 'finishFails' && name === 'UpdateItemCommand') ||
        (mode === 'releaseFails' && name === 'DeleteItemCommand') ||
        (mode === 'tableDown' && (name === 'DeleteItemCommand' || name === 'UpdateItemCommand'));
      if (fails) throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
      if (mode === 'slow') await new Promise((resolve) => setTimeout(resolve, 5));
      if (mode === 'sdkRepeats' && name !== 'GetItemCommand') await base.send(command as never);
      return base.send(command as never);
    },
  } as unknown as DynamoDBClient;
  return { client, use: (next: TableFault) => (mode = next) };
}

/**
 * A clock that runs ahead of real time by every pause taken on it: a pause returns at once, and
 * what reads the clock afterwards sees the time it stood for as passed.
 */
function pausedClock() {
  let skipped = 0;
  let retries = 0;
  const now = () => Date.now() + skipped;
  const sleep = async (ms: number) => {
    skipped += Math.max(0, ms);
  };
  // The client's pauses between its retries, counted apart from the limiter's and the release's.
  const retrySleep = (ms: number) => {
    retries++;
    return sleep(ms);
  };
  return { sleep, retries: () => retries, options: { now, sleep, retryClock: { now, sleep: retrySleep } } };
}

describe('a charge repeated with one key through every kind of fault', () => {
  it('is never sent again once it may have reached PayHere, and never left unknown when it provably did not', async () => {
    const config = loadConfig(process.env);
    const closedPort = await freePort();
    const limiterFull = createPayHere({ ...config, rateLimit: { limit: 2, windowMs: 60_000 } });
    await limiterFull.listSubscriptions(Date.now() + 5_000); // its token and one call: full for a minute
    let scenarios = 0;
    /** The clients' pauses before a retry, in all and by the first half of the run. */
    let retries = 0;
    let retriesByHalf = 0;

    await fc.assert(
      fc.asyncProperty(fc.array(attempt, { minLength: 1, maxLength: 3 }), async (attempts) => {
        scenarios++;
        if (scenarios === Math.ceil(RUNS / 2)) retriesByHalf = retries;
        // The clients' pauses (between retries, after a 429) and the release's pause before its
        // second try pass on a clock of their own, not in real time: the deadline still cuts them
        // short, as the time they stand for would. One per scenario, as its clients are (a fresh
        // container's): the time one scenario's pauses stood for would leave the next no time to
        // retry in (its deadlines are real time's).
        const paused = pausedClock();
        // A client of its own per scenario, as a fresh container: a 429's pause or a dropped token
        // of one scenario must not decide the next (and a counterexample replays on its own).
        const payhere = createPayHere(config, paused.options);
        const nothingListening = createPayHere(
          { ...config, gatewayBaseUrl: `http://127.0.0.1:${closedPort}` },
          paused.options,
        );
        const clients: Record<Path, PayHere> = {
          gateway: payhere,
          nothingListening,
          limiterFull,
          deadlinePassed: payhere,
        };
        const clock = manualClock();
        const table = faultyTable();
        const store = testStore(clock.now, table.client);
        const key = randomUUID();
        const body = chargeBody();
        const options = {
          operation: 'charge',
          store,
          pause: paused.sleep,
          reconcile: async (request: ReturnType<typeof validRequest<typeof body>>, startedAt: number) => {
            const window = { sentAt: startedAt, until: startedAt + 20_000 };
            const found = await payhere.reconcileCharge(request.body, window, Date.now() + 2_000);
            // Nothing in PayHere's records within the settle delay: still unknown.
            if (found === NOTHING) throw outcomeUnknown.charge(request.body.order_id);
            return paymentOutcomeResponse(found.data, found.msg, [2]);
          },
        };
        /** Arrivals at PayHere, each with whether it may have been processed as far as the client can tell. */
        const arrivals: boolean[] = [];
        for (const step of attempts) {
          if (step.later) clock.advance(30_000);
          sandbox.faults.clear();
          const { fault, mayHaveReached } = GATEWAY_FAULTS[step.gateway];
          if (fault) sandbox.faults.inject('charge', fault);
          // An unusable search (not retried, unlike a 503): reconciliation cannot see the payment.
          if (step.searchDown) sandbox.faults.inject('search', { kind: 'nonJson' });
          table.use(step.table);
          const before = sandbox.counters().charge ?? 0;
          const request = validRequest(body);
          request.context = lambdaContext(2_000);
          await runIdempotent(options, key, request, async () => {
            // A deadline already passed: what a slow secret, table or limiter leaves of a request's time.
            // An answer must come back before the charge's own deadline to prove it was refused, so
            // the answered faults get a deadline no loaded test machine misses; a hang, or nothing
            // listening, waits it out (or backs off until it), so theirs is short.
            const timeMs = step.path === 'gateway' && step.gateway !== 'hang' ? 3_000 : 500;
            const deadline = step.path === 'deadlinePassed' ? Date.now() - 1 : Date.now() + timeMs;
            const { msg, data } = await clients[step.path].charge(request.body, deadline);
            return paymentOutcomeResponse(data, msg, [2]);
          }).catch(errorResponse);
          const arrived = (sandbox.counters().charge ?? 0) - before;
          // A charge OAuth refused before processing goes out once more, on a token fetched then.
          const resent = step.gateway === 'tokenRefused' ? 1 : 0;
          expect(arrived).toBeLessThanOrEqual(1 + resent);
          if (arrived === 2) arrivals.push(mayHaveReached, true);
          else if (arrived === 1) arrivals.push(mayHaveReached);
        }
        table.use('none');
        retries += paused.retries();

        // Never sent again once it may have reached PayHere.
        const first = arrivals.indexOf(true);
        expect(first === -1 || first === arrivals.length - 1).toBe(true);
        // Never left unknown when it provably never reached PayHere, unless no write could say so.
        const record = await store.get(recordKey('charge', validRequest(body).caller.sub, key));
        const unrecordable = attempts.some((step) => step.table === 'tableDown');
        if (!arrivals.includes(true) && !unrecordable) expect(record?.state).not.toBe('outcome_unknown');
      }),
      { numRuns: RUNS },
    );
    sandbox.faults.clear();
    expect(scenarios).toBeGreaterThanOrEqual(RUNS);
    // The clients retried (nothing listening backs off) in the run's second half as in its first:
    // every scenario had the time to.
    expect(retriesByHalf).toBeGreaterThan(0);
    expect(retries).toBeGreaterThan(retriesByHalf);
  }, 300_000);
});
