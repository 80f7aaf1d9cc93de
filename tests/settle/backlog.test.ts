import { describe, expect, it } from 'vitest';
import { arrivalMargin, idleWork } from '../../lib/budget/limiter.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { loadSettleLimits } from '../../lib/settle/from-environment.ts';
import type { SettleLimits, SettleRun } from '../../lib/settle/job.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { testLedger } from '../helpers/orders.ts';
import { ownIdempotencyTable, settleJob } from '../helpers/settle.ts';
import { freshStateTable } from '../helpers/state-table.ts';
import { clockedTransport, VirtualClock } from '../helpers/virtual-clock.ts';
import { busiestWindow } from '../helpers/windows.ts';
import { chargeBody } from '../resilience/fixtures.ts';

/**
 * The settle job on PayHere's real budget (20 calls per 10 s for the whole merchant) after an
 * outage: a backlog settles as fast as the budget allows beside the live reserve, never over the
 * budget in any window, and live calls made meanwhile find their slot at once. Everything runs on a
 * virtual clock (the budget's waits and the two minutes between runs pass at once); the unknowns
 * are made through the charge handler with the sandbox losing the charge's answer.
 */
const store = await ownIdempotencyTable();
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const MINUTE = 60_000;
/** Past the default settle delay (10 minutes) after a request's window. */
const LATER = 12 * MINUTE;
const BUDGET = { limit: 20, windowMs: 10_000 };
/** The settle function's timeout (serverless.yml): each run's deadline. */
const RUN_MS = 110_000;
/** How often the schedule runs it (serverless.yml, SETTLE_RATE). */
const EVERY_MS = 2 * MINUTE;
/** The job's pace: a slot per window and margin's share of the budget (lib/budget/limiter.ts). */
const PACE_MS = Math.ceil((BUDGET.windowMs + arrivalMargin(BUDGET.windowMs)) / BUDGET.limit);

/**
 * `count` charges whose answers the sandbox lost, each processed by PayHere: each answered 202, and
 * each settled by one look (one PayHere never processed needs two looks a settle interval apart,
 * tests/settle/job.test.ts).
 */
async function unknownCharges(count: number) {
  const lost = [];
  for (let i = 0; i < count; i++) {
    const processed = true;
    sandbox.faults.inject('charge', { kind: processed ? 'reset' : 'resetBeforeProcessing' });
    // The charge's own search gets a maintenance page, which is not retried: 202 at once.
    sandbox.faults.inject('search', { kind: 'nonJson' });
    const body = chargeBody();
    const answer = await call('charge', { body });
    sandbox.faults.clear();
    expect(answer.statusCode).toBe(202);
    lost.push({ body, processed });
  }
  return lost;
}

/** Whether each order is settled (no longer unknown), in the order given. */
async function settledOf(lost: Array<{ body: { order_id: string } }>): Promise<boolean[]> {
  return Promise.all(
    lost.map(async ({ body }) => (await ledger.getOrder(body.order_id))?.state !== 'unknown'),
  );
}

/** Settle jobs on `clock` over a budget table of their own, each as one container of the scheduled function. */
async function jobsOn(clock: VirtualClock, limits: SettleLimits = loadSettleLimits({})) {
  const { table } = await freshStateTable();
  return {
    table,
    job: () => settleJob(store, ledger, LATER, limits, { clock, sharedState: table, rateLimit: BUDGET }),
  };
}

describe('a backlog', () => {
  it('of 60 settles in the one run the budget allows, never over it, while live calls find their slot at once or behind a first one', async () => {
    // Prepare
    const lost = await unknownCharges(60);
    const clock = new VirtualClock();
    const jobs = await jobsOn(clock);
    const settle = jobs.job();
    // A live container on the same budget: whenever the job waits for a slot to free (it took what
    // it may; not its pace between two), once a window, it reads an order's payments and charges
    // an order.
    const config = { ...loadConfig(process.env), rateLimit: BUDGET };
    const liveWaits: number[] = [];
    const live = createPayHere(config, {
      sharedState: jobs.table,
      transport: clockedTransport(clock, config.gatewayBaseUrl, 'live'),
      now: clock.now,
      sleep: (ms) => {
        liveWaits.push(ms);
        return clock.sleep(ms);
      },
    });
    const liveAnswers: unknown[] = [];
    let liveAt = Number.NEGATIVE_INFINITY;
    let inLive = false;

    // The job waits inside its own work: the live calls are another container's, outside it.
    clock.onSleep = (ms) =>
      idleWork.exit(async () => {
        if (inLive || ms <= PACE_MS || liveAnswers.length >= 6 || clock.now() - liveAt < BUDGET.windowMs)
          return;
        inLive = true;
        liveAt = clock.now();
        const deadline = clock.now() + 20_000;
        liveAnswers.push(
          await live.paymentsOfOrder(lost[0]!.body.order_id, deadline).then(
            () => 'read',
            (error: unknown) => error,
          ),
          await live.charge({ ...chargeBody(), currency: 'LKR' }, deadline).then(
            () => 'charge',
            (error: unknown) => error,
          ),
        );
        inLive = false;
      });

    // Act: runs every two minutes until one leaves no backlog.
    const started = clock.now();
    const runs: SettleRun[] = [];
    for (let at = started; runs.length < 10; at += EVERY_MS) {
      clock.advanceTo(at);
      const run = await settle.run(RUN_MS);
      runs.push(run);
      if (!run.backlog) break;
    }
    clock.onSleep = undefined;

    // Assess: a token and a search per unknown, at what the job may take, all but one slot while
    // no live call took one for a window: well within one run.
    const job = clock.arrivals.filter(({ by }) => by === 'job').map(({ at }) => at);
    const all = clock.arrivals.map(({ at }) => at);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ settled: 60, stillUnknown: 0, interrupted: 0, backlog: false });
    expect(job).toHaveLength(61);
    expect(busiestWindow(all, BUDGET.windowMs)).toBeLessThanOrEqual(BUDGET.limit);
    expect(busiestWindow(job, BUDGET.windowMs)).toBe(BUDGET.limit - 1);
    expect(Math.max(...job) - started).toBeGreaterThanOrEqual(4 * BUDGET.windowMs);
    expect(Math.max(...job) - started).toBeLessThan(RUN_MS);
    // The live calls: each answered. Each read came after a quiet spell and took the slot the job
    // left at once; the charge behind it waited for the job's next slot to free, never for the
    // job's turn: the job's slots free a pace apart (525 ms) but for the window's last, about a
    // second, and a wake-up is spread over 250 ms.
    expect(liveAnswers).toEqual(['read', 'charge', 'read', 'charge', 'read', 'charge']);
    expect(liveWaits.length).toBeLessThanOrEqual(3);
    expect(Math.max(...liveWaits)).toBeLessThanOrEqual(1_500);
    for (const { body, processed } of lost) {
      expect((await ledger.getOrder(body.order_id))?.state).toBe(processed ? 'succeeded' : 'failed');
    }
    // Sixty charges through the sandbox and a run on a virtual clock: seconds idle, more on a loaded
    // machine, and a test past its timeout would go on injecting faults under the next one's feet.
  }, 60_000);

  it('what a run’s cap leaves the next run settles, oldest first; two runs at once settle each item once', async () => {
    // Prepare
    const lost = await unknownCharges(24);
    const clock = new VirtualClock();
    const { job } = await jobsOn(clock, { items: 10, calls: 300 });
    const started = clock.now();

    // Act
    const first = await job().run(RUN_MS);
    const afterFirst = await settledOf(lost);
    clock.advanceTo(started + EVERY_MS);
    const second = await job().run(RUN_MS);
    const afterSecond = await settledOf(lost);
    clock.advanceTo(started + 2 * EVERY_MS);
    const [third, overlapping] = await Promise.all([job().run(RUN_MS), job().run(RUN_MS)]);

    // Assess
    expect([first, second]).toMatchObject([
      { settled: 10, backlog: true },
      { settled: 10, backlog: true },
    ]);
    expect(afterFirst).toEqual(lost.map((_, i) => i < 10));
    expect(afterSecond).toEqual(lost.map((_, i) => i < 20));
    expect(third.settled + overlapping.settled).toBe(4);
    expect(await settledOf(lost)).toEqual(lost.map(() => true));
  });

  it('keeps an item its run’s PayHere calls cut short in its place, ahead of later ones, for the next run', async () => {
    // Prepare: four calls a run; the first run's also fetch the token, so the fourth item's search
    // is refused before it is sent.
    const lost = await unknownCharges(12);
    const clock = new VirtualClock();
    const { job } = await jobsOn(clock, { items: 300, calls: 4 });
    const started = clock.now();

    // Act
    const first = await job().run(RUN_MS);
    clock.advanceTo(started + EVERY_MS);
    const second = await job().run(RUN_MS);

    // Assess: the item cut short was settled next, before the items after it.
    expect(first).toMatchObject({ settled: 3, interrupted: 1, stillUnknown: 0, backlog: true });
    expect(second).toMatchObject({ settled: 4, interrupted: 0 });
    expect(await settledOf(lost)).toEqual(lost.map((_, i) => i < 7));
  });
});
