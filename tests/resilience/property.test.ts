import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Fault } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { GATEWAY_ROUTES, type RouteName } from '../helpers/routes.ts';
import { paymentsOf, UPSTREAM, validRequest } from './fixtures.ts';

const sandbox = useTestGateway({ beforeEachTest: 'nothing' });

/** The second endpoint a route may touch: a charge's reconciliation search, a cancel's state check, a fallback. */
const FOLLOW_UP: Partial<Record<RouteName, string>> = {
  charge: 'search',
  cancelSubscription: 'getSubscription',
  getSubscription: 'listSubscriptions',
};

const OAUTH_INVALID_TOKEN = '{"error":"invalid_token","error_description":"x"}';

const fault: fc.Arbitrary<Fault> = fc.oneof(
  fc.constant<Fault>({ kind: 'reset' }),
  fc.constant<Fault>({ kind: 'resetBeforeProcessing' }),
  fc.constant<Fault>({ kind: 'hang' }),
  fc.constant<Fault>({ kind: 'invalidToken' }),
  fc.record({ kind: fc.constant('latency' as const), ms: fc.integer({ min: 0, max: 60 }) }),
  fc.record({ kind: fc.constant('nonJson' as const), process: fc.boolean() }),
  fc.record({ kind: fc.constant('rateLimited' as const), retryAfterSeconds: fc.constant(0) }),
  fc
    .record({
      kind: fc.constant('status' as const),
      status: fc.constantFrom(200, 400, 401, 404, 418, 429, 500, 502, 503, 504),
      process: fc.boolean(),
      body: fc.constantFrom(
        '<html>boom</html>',
        '',
        '{"status":1,"msg":"ok","data":"garbage"}',
        '{"status":9,"msg":"??","data":null}',
        '{"status":-1,"msg":"Some refusal","data":null}',
        OAUTH_INVALID_TOKEN,
      ),
      contentType: fc.constantFrom('text/html', 'application/json'),
    })
    // A gateway checks the Bearer token before it processes anything: an invalid_token answer
    // never comes from a processed request, whatever its HTTP status.
    .map((fault) => (fault.body === OAUTH_INVALID_TOKEN ? { ...fault, process: false } : fault)),
);

const injection = fc.record({
  followUp: fc.boolean(),
  fault,
  times: fc.integer({ min: 1, max: 3 }),
});

const scenario = fc.record({
  route: fc.constantFrom(...GATEWAY_ROUTES),
  injections: fc.array(injection, { maxLength: 3 }),
});

/** Whether the sandbox carries out a request that meets this fault (see sandbox/README.md). */
function processes(fault: Fault): boolean {
  switch (fault.kind) {
    case 'reset':
    case 'latency':
      return true;
    case 'status':
    case 'nonJson':
      return fault.process === true;
    default:
      return false;
  }
}

/** The pairing of HTTP status and envelope status in docs/contract.md "Failures". */
function expectedStatus(httpStatus: number): number {
  if (httpStatus === 200) return 1;
  if (httpStatus === 202) return 0;
  if (httpStatus === 401 || httpStatus === 403) return -2;
  return -1;
}

describe('random faults over random routes', () => {
  it('always answer a valid envelope, never 500, and never send a money request twice', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ route, injections }) => {
        sandbox.faults.clear();
        sandbox.resetState();
        const request = await validRequest(sandbox, route);
        sandbox.resetCounters();
        const primarySlots: Fault[] = [];
        for (const { followUp, fault, times } of injections) {
          const endpoint = (followUp && FOLLOW_UP[route]) || UPSTREAM[route];
          sandbox.faults.inject(endpoint as never, fault, times);
          if (endpoint === UPSTREAM[route]) primarySlots.push(...Array<Fault>(times).fill(fault));
        }

        // 1.3 s of Lambda time: 300 ms of upstream work keeps a hanging gateway cheap to test.
        const answer = await call(route, { ...request, remainingMs: 1_300 });

        expect(answer.statusCode).not.toBe(500);
        expect([200, 202, 400, 401, 403, 404, 409, 422, 429, 502, 503, 504]).toContain(answer.statusCode);
        expect(answer.headers['Content-Type']).toBe('application/json');
        expect(answer.body.status).toBe(expectedStatus(answer.statusCode));
        expect(typeof answer.body.msg).toBe('string');
        expect(answer.body.msg.length).toBeGreaterThan(0);
        expect(answer.body).toHaveProperty('data');
        expect(answer.raw).not.toMatch(/<html|garbage|invalid_token/);
        if (answer.statusCode >= 400) expect(typeof answer.body.data?.code).toBe('string');

        // Faults are consumed by the first arrivals, in order; an arrival past them is processed.
        const endpoint = UPSTREAM[route];
        if (['charge', 'capture', 'refund', 'retry', 'cancel'].includes(endpoint)) {
          const arrivals = sandbox.counters()[endpoint]!;
          const faulted = primarySlots.slice(0, arrivals);
          const processed = faulted.filter(processes).length + Math.max(0, arrivals - faulted.length);
          expect(processed).toBeLessThanOrEqual(1);
        }
        sandbox.faults.clear(); // unconsumed faults must not hit the check itself
        if (route === 'charge')
          expect(
            await paymentsOf(sandbox, (request.body as { order_id: string }).order_id),
          ).toBeLessThanOrEqual(1);
      }),
      { numRuns: 220 },
    );
  }, 120_000);
});
