import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';

// Metrics on (vitest turns them off), before any handler loads; the service's name as deployed.
vi.hoisted(() => {
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  process.env.POWERTOOLS_SERVICE_NAME = 'payhere-payments-api-test';
});

import { SlidingWindowLimiter } from '../../lib/budget/window-limiter.ts';
import { outcomeOf } from '../../lib/http/observe.ts';
import { publishMetrics } from '../../lib/log/metrics.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { SEED } from '../../sandbox/server.ts';
import { type CallOptions, call, useTestGateway } from '../helpers/gateway.ts';
import { captureLogs, type LogLine } from '../helpers/logs.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { customer, customerToken } from '../helpers/orders.ts';
import { ROUTES, type RouteName } from '../helpers/routes.ts';

/**
 * Metrics in CloudWatch's embedded metric format (issue "Ready to run in production", docs/operator.md
 * "Operating it"): each request writes what it counted as one line when it ends, in the namespace
 * PayHerePaymentsApi with the dimensions service and route; one outcome per first answer.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });

afterEach(() => vi.unstubAllEnvs());

interface Emf {
  _aws: {
    CloudWatchMetrics: Array<{
      Namespace: string;
      Dimensions: string[][];
      Metrics: Array<{ Name: string; Unit: string }>;
    }>;
  };
  [field: string]: unknown;
}

const emfLines = (lines: LogLine[]) => lines.filter((line) => '_aws' in line) as unknown as Emf[];

/** The metrics `route` wrote, by name: counts summed, times counted (how many were taken). */
function metricsOf(lines: LogLine[], route: string): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const line of emfLines(lines).filter((emf) => emf.route === route)) {
    for (const { Name, Unit } of line._aws.CloudWatchMetrics[0]!.Metrics) {
      const values = [line[Name] as number | number[]].flat();
      const total = Unit === 'Count' ? values.reduce((sum, value) => sum + value, 0) : values.length;
      totals[Name] = (totals[Name] ?? 0) + total;
    }
  }
  return totals;
}

const OUTCOMES = [
  'OutcomeDone',
  'OutcomePending',
  'OutcomeDeclined',
  'OutcomeUnknown',
  'OutcomeRejected',
  'OutcomeFailed',
];
const outcomesOf = (metrics: Record<string, number>) =>
  Object.fromEntries(OUTCOMES.filter((name) => name in metrics).map((name) => [name, metrics[name]]));

const chargeBody = (token: string = SEED.customerTokens.success) => ({
  type: 'PAYMENT',
  order_id: `Metrics-${randomUUID()}`,
  items: 'Taxi Hire 123',
  currency: 'LKR',
  amount: 345.67,
  customer_token: token,
});

/**
 * One request's metrics: its line is written once its answer has gone back (lib/http/observe.ts),
 * so the earlier requests' lines are let out before the capture starts, and its own before it is read.
 */
async function counted(route: RouteName, options: CallOptions = {}) {
  await backgroundSettled();
  const lines = captureLogs('warn');
  const answer = await call(route, options);
  await backgroundSettled();
  return { answer, lines, metrics: metricsOf(lines, route) };
}

describe('each request writes one line of metrics when it ends', () => {
  it('in the namespace, with service and route, its outcome and its upstream calls', async () => {
    captureLogs('warn');
    await call('charge', { body: chargeBody() }); // the container's first request fetches a token

    const { answer, lines, metrics } = await counted('charge', { body: chargeBody() });

    expect(answer.statusCode).toBe(200);
    const emf = emfLines(lines);
    expect(emf).toHaveLength(1);
    expect(emf[0]!._aws.CloudWatchMetrics[0]).toMatchObject({
      Namespace: 'PayHerePaymentsApi',
      Dimensions: [['service', 'route']],
    });
    expect(emf[0]).toMatchObject({ service: 'payhere-payments-api-test', route: 'charge', OutcomeDone: 1 });
    expect(emf[0]!._aws.CloudWatchMetrics[0]!.Metrics).toContainEqual({
      Name: 'UpstreamLatency',
      Unit: 'Milliseconds',
    });
    expect(outcomesOf(metrics)).toEqual({ OutcomeDone: 1 });
    // A warm container holds its token: the charge is the one call.
    expect(metrics.UpstreamStatus2xx).toBe(1);
    expect(metrics.UpstreamLatency).toBe(1);
  });

  it('once its answer has gone back: serialising and writing the line holds up no caller', async () => {
    captureLogs('warn');
    await call('charge', { body: chargeBody() });
    await backgroundSettled();
    const lines = captureLogs('warn');

    await call('retrievePayments', { id: SEED.orders.sample });
    const answeredAt = Date.now();
    const whenAnswered = emfLines(lines).length;
    // Written a minute after the answer (a container frozen in between): dated at its answer.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(answeredAt + 60_000);
    await backgroundSettled();
    vi.useRealTimers();

    expect([whenAnswered, emfLines(lines).length]).toEqual([0, 1]);
    expect((emfLines(lines)[0]!._aws as { Timestamp?: number }).Timestamp).toBeLessThanOrEqual(answeredAt);
  });
});

describe('the outcome of every first answer is counted, a replay apart', () => {
  it('declined', async () => {
    const { answer, metrics } = await counted('charge', { body: chargeBody(SEED.customerTokens.declined) });
    expect(answer.statusCode).toBe(402);
    expect(outcomesOf(metrics)).toEqual({ OutcomeDeclined: 1 });
  });

  it('pending', async () => {
    const { answer, metrics } = await counted('charge', { body: chargeBody(SEED.customerTokens.pending) });
    expect(answer.statusCode).toBe(202);
    expect(outcomesOf(metrics)).toEqual({ OutcomePending: 1 });
  });

  it('unknown: the charge may have moved money', async () => {
    sandbox.faults.inject('charge', { kind: 'resetBeforeProcessing' });
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);

    const { answer, metrics } = await counted('charge', { body: chargeBody() });

    expect(answer.body.data.code).toBe('outcome_unknown');
    expect(outcomesOf(metrics)).toEqual({ OutcomeUnknown: 1 });
    expect(metrics.UpstreamNoAnswer).toBe(1);
    expect(metrics.UpstreamStatus5xx).toBe(3);
  });

  it('rejected: an invalid request, and a request without a token', async () => {
    const invalid = await counted('charge', { body: { ...chargeBody(), amount: -1 } });
    const anonymous = await counted('retrievePayments', {
      id: SEED.orders.sample,
      headers: { Authorization: 'Bearer nope' },
    });

    expect([invalid.answer.statusCode, anonymous.answer.statusCode]).toEqual([400, 401]);
    expect(outcomesOf(invalid.metrics)).toEqual({ OutcomeRejected: 1 });
    expect(outcomesOf(anonymous.metrics)).toEqual({ OutcomeRejected: 1 });
  });

  it('failed: PayHere unavailable, nothing moved', async () => {
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);

    const { answer, metrics } = await counted('retrievePayments', { id: SEED.orders.sample });

    expect(answer.statusCode).toBe(502);
    expect(outcomesOf(metrics)).toEqual({ OutcomeFailed: 1 });
    expect(metrics.UpstreamStatus5xx).toBe(3);
  });

  it('a replay counts as Replayed, not as a second outcome', async () => {
    const options = { body: chargeBody(), idempotencyKey: randomUUID() };
    captureLogs('warn');
    await call('charge', options);

    const { answer, metrics } = await counted('charge', options);

    expect(answer.headers['Idempotent-Replayed']).toBe('true');
    expect(metrics).toEqual({ Replayed: 1 });
  });
});

describe('ownership refusals are counted', () => {
  it("a customer asking for another's payments or charging another's card", async () => {
    const headers = { Authorization: `Bearer ${await customerToken(customer('metrics'))}` };

    const payments = await counted('retrievePayments', { id: SEED.orders.sample, headers });
    const charge = await counted('charge', { body: chargeBody(), headers });

    expect([payments.answer.statusCode, charge.answer.statusCode]).toEqual([404, 404]);
    expect(payments.metrics).toMatchObject({ OwnershipRefused: 1, OutcomeRejected: 1 });
    expect(charge.metrics).toMatchObject({ OwnershipRefused: 1, OutcomeRejected: 1 });
    expect(sandbox.counters().search ?? 0).toBe(0);
  });
});

describe('notifications are counted: verified, recorded, rejected, unmatched, mismatched', () => {
  it('each kind under the route notify', async () => {
    captureLogs('warn');
    const created = await call('createCheckout', {
      body: { kind: 'payment', items: 'Metrics', currency: 'LKR', amount: 50 },
    });
    const orderId: string = created.body.data.order_id;
    await backgroundSettled();
    const lines = captureLogs('error');

    await notify(signed({ order_id: orderId, payhere_amount: '50.00', status_code: '2' }));
    await notify(signed({ order_id: orderId, payhere_amount: '50.00', status_code: '2' }, 'not-the-secret'));
    await notify(signed({ order_id: `Unknown-${randomUUID()}`, payhere_amount: '50.00', status_code: '2' }));
    await notify(signed({ order_id: orderId, payhere_amount: '5.00', status_code: '2' }));
    await backgroundSettled();

    expect(emfLines(lines)).toHaveLength(4);
    // The success asked PayHere's records whether the order is paid (and, in a cold container, for a token).
    const { UpstreamStatus2xx, UpstreamLatency, ...notifications } = metricsOf(lines, 'notify');
    expect(UpstreamStatus2xx).toBeGreaterThanOrEqual(1);
    expect(UpstreamLatency).toBe(UpstreamStatus2xx);
    expect(notifications).toEqual({
      OutcomeDone: 3,
      OutcomeRejected: 1,
      NotificationVerified: 3,
      NotificationRecorded: 1,
      NotificationRejected: 1,
      NotificationUnmatched: 1,
      NotificationMismatched: 1,
    });
  });
});

describe('every function writes its metrics under its own name', () => {
  it.each(Object.keys(ROUTES) as RouteName[])('%s', async (route) => {
    const { answer, lines } = await counted(route, {
      id: '320027150501',
      body: {},
      headers: { Authorization: 'Bearer nope' },
    });

    expect(answer.statusCode).toBe(401);
    expect(emfLines(lines).map((emf) => [emf.route, emf.OutcomeRejected])).toEqual([[route, 1]]);
  });
});

describe("the budget's waits and refusals are counted", () => {
  it('a call that waited for a slot counts BudgetWait and how long; one refused counts BudgetRefused', async () => {
    let now = Date.UTC(2024, 5, 1);
    const limiter = new SlidingWindowLimiter({
      limit: 1,
      windowMs: 10_000,
      now: () => now,
      sleep: async (ms: number) => {
        now += ms;
      },
    });
    const lines = captureLogs('warn');

    await limiter.acquire(20_000); // at once: nothing counted
    now += 4_000;
    await limiter.acquire(20_000); // waits 6 s
    await expect(limiter.acquire(1_000)).rejects.toMatchObject({ code: 'rate_limited' });
    publishMetrics('probe');

    expect(emfLines(lines)).toHaveLength(1);
    expect(metricsOf(lines, 'probe')).toEqual({ BudgetWait: 1, BudgetWaitTime: 1, BudgetRefused: 1 });
    expect(emfLines(lines)[0]!.BudgetWaitTime).toBe(6_000);
  });
});

describe('outcomeOf: what an answer says happened', () => {
  it.each([
    [200, undefined, 'done'],
    [201, undefined, 'done'],
    [202, undefined, 'pending'],
    [202, 'outcome_unknown', 'unknown'],
    [402, 'payment_declined', 'declined'],
    [400, 'invalid_request', 'rejected'],
    [404, 'not_found', 'rejected'],
    [409, 'idempotency_conflict', 'rejected'],
    [429, 'rate_limited', 'rejected'],
    [502, 'gateway_error', 'failed'],
    [503, 'gateway_unavailable', 'failed'],
  ] as const)('%i %s is %s', (status, code, outcome) => {
    expect(outcomeOf(status, code)).toBe(outcome);
  });
});
