import { afterEach, describe, expect, it, vi } from 'vitest';
import { type SimulationReport, simulateBudget } from '../helpers/budget-simulation.ts';
import { captureLogs } from '../helpers/logs.ts';

/**
 * The budget at scale on a virtual clock (tests/helpers/budget-simulation.ts): the service's
 * SharedLimiter in each of many containers, against a state table that throttles, fails and goes
 * away. `npm run bench` runs it with 500 containers; here fewer, with fixed seeds.
 */
const WINDOWS = 10;
const MINUTE = 60_000;

afterEach(() => {
  vi.unstubAllEnvs();
});

const scenario = {
  containers: 100,
  durationMs: WINDOWS * MINUTE,
  offeredPerSecond: 30,
  callers: 20,
  internalErrorRate: 0.01,
  slowRate: 0.01,
  outage: { fromMs: 4 * MINUTE, toMs: 6 * MINUTE },
};

function quietly(run: () => Promise<SimulationReport>): Promise<SimulationReport> {
  captureLogs('silent');
  return run();
}

describe('PayHere’s budget over many containers, on a virtual clock', () => {
  it('never lets more than 20 calls reach PayHere in any 10 s, through 500s, late answers and a 2-minute outage', async () => {
    // Act
    const report = await quietly(() => simulateBudget({ ...scenario, seed: 1 }));

    // Assess: every fault was met, and the limit held.
    expect(report.table.internalErrors).toBeGreaterThan(0);
    expect(report.table.late).toBeGreaterThan(0);
    expect(report.table.outage).toBeGreaterThan(0);
    expect(report.maxPerWindow).toBeLessThanOrEqual(20);
    expect(report.payhere429).toBe(0);
    // Nothing wasted: about 20 per window and margin and call (10.5 s + ~1 s) outside the outage.
    expect(report.arrivals).toBeGreaterThanOrEqual(Math.floor(((8 * MINUTE) / 11_500) * 20 * 0.9));
    // Every caller got calls through.
    for (const { served } of Object.values(report.answers)) expect(served).toBeGreaterThan(0);
  });

  it('holds the limit when the budget item is throttled (its partition’s rates lowered to meet it at this scale)', async () => {
    // Act
    const report = await quietly(() =>
      simulateBudget({ ...scenario, seed: 2, outage: undefined, writesPerSecond: 40, readsPerSecond: 120 }),
    );

    // Assess
    expect(report.table.throttled).toBeGreaterThan(100);
    expect(report.maxPerWindow).toBeLessThanOrEqual(20);
    expect(report.payhere429).toBe(0);
    expect(report.arrivals).toBeGreaterThanOrEqual(Math.floor((WINDOWS * MINUTE) / 11_500) * 20 * 0.75);
  });

  it('holds the limit when the table fails a third of the containers for 2 minutes while the others still reach it', async () => {
    // Act
    const report = await quietly(() =>
      simulateBudget({
        ...scenario,
        seed: 4,
        outage: { fromMs: 4 * MINUTE, toMs: 6 * MINUTE, share: 1 / 3 },
      }),
    );

    // Assess: the cut-off containers' calls waited and were refused; the others kept the budget busy.
    expect(report.table.outage).toBeGreaterThan(0);
    expect(report.maxPerWindow).toBeLessThanOrEqual(20);
    expect(report.payhere429).toBe(0);
    expect(report.arrivals).toBeGreaterThanOrEqual(Math.floor((WINDOWS * MINUTE) / 11_500) * 20 * 0.9);
  });

  it('gives every customer’s charge a slot within its deadline while customers’ reads want more than the shared part serves', async () => {
    // Act: customers' reads within their shares offered at 20 times what the shared part serves,
    // and customers' charges among them (money calls that may not take the reserve), through 500s
    // and late answers of the table (a mark among them now and then).
    const report = await quietly(() =>
      simulateBudget({
        containers: 100,
        durationMs: 5 * MINUTE,
        offeredPerSecond: 30,
        callers: 200,
        customerChargesPerSecond: 3,
        internalErrorRate: 0.01,
        slowRate: 0.01,
        seed: 5,
      }),
    );

    // Assess: reads yielded to every waiting charge; the reads took the rest, and the limit held.
    expect(report.charges.served).toBeGreaterThan(100);
    expect(report.charges.refused).toBe(0);
    expect(report.charges.slowestWaitMs).toBeLessThan(20_000);
    expect(report.maxPerWindow).toBeLessThanOrEqual(20);
    expect(report.payhere429).toBe(0);
    // Nothing wasted: the shared part's 15 slots (customers take no reserve) busy all along.
    expect(report.arrivals).toBeGreaterThanOrEqual(Math.floor(((5 * MINUTE) / 11_500) * 15 * 0.9));
  });

  it('is the same run for the same seed', async () => {
    const small = {
      ...scenario,
      containers: 30,
      durationMs: 3 * MINUTE,
      outage: { fromMs: MINUTE, toMs: 2 * MINUTE },
    };
    const [a, b] = [
      await quietly(() => simulateBudget({ ...small, seed: 3 })),
      await quietly(() => simulateBudget({ ...small, seed: 3 })),
    ];
    expect({ ...a, tookMs: 0 }).toEqual({ ...b, tookMs: 0 });
  });
});
