/**
 * PayHere's budget at scale (issue 35): the service's SharedLimiter in 500 containers for 10
 * simulated minutes against a state table that throttles at DynamoDB's per-partition rates, answers
 * 1% of requests 500 and 1% too late, and goes away for 2 minutes (tests/helpers/budget-simulation.ts;
 * tests/budget/simulation.test.ts runs 100). Budget: no 10 s window at PayHere over 20, no 429.
 */
import {
  type SimulationOptions,
  type SimulationReport,
  simulateBudget,
} from '../tests/helpers/budget-simulation.ts';
import { median } from './stats.ts';

const MINUTE = 60_000;
const BASE: SimulationOptions = {
  containers: 500,
  durationMs: 10 * MINUTE,
  seed: 35,
  offeredPerSecond: 40,
  callers: 50,
  internalErrorRate: 0.01,
  slowRate: 0.01,
};
const SCENARIOS: Array<{ label: string; options: SimulationOptions }> = [
  {
    label: 'DynamoDB’s rates, 1% 500s, 1% late, outage 4:00–6:00',
    options: { ...BASE, outage: { fromMs: 4 * MINUTE, toMs: 6 * MINUTE } },
  },
  {
    label: 'as above, the outage cutting off a third of the containers only',
    options: { ...BASE, outage: { fromMs: 4 * MINUTE, toMs: 6 * MINUTE, share: 1 / 3 } },
  },
  {
    label: 'the item’s rates at a fifth (200 writes, 600 reads a second): throttled',
    options: { ...BASE, writesPerSecond: 200, readsPerSecond: 600 },
  },
  {
    label: '500 customers, one request in 40 a charge (money that may not take the reserve)',
    options: { ...BASE, callers: 500, customerChargesPerSecond: 1 },
  },
];

/**
 * Runs with the service's log lines and metrics silenced: the table's warnings and the budget's
 * metrics of 500 containers in one process would be thousands of lines.
 */
async function quietly(options: SimulationOptions): Promise<SimulationReport> {
  const level = process.env.LOG_LEVEL;
  const write = process.stdout.write;
  process.env.LOG_LEVEL = 'silent';
  process.stdout.write = (() => true) as typeof process.stdout.write;
  try {
    return await simulateBudget(options);
  } finally {
    process.stdout.write = write;
    if (level === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = level;
  }
}

const charges = ({ charges: c }: SimulationReport) =>
  c.served + c.refused === 0 ? '-' : `${c.served}, ${c.refused}, ${(c.slowestWaitMs / 1000).toFixed(1)} s`;

export async function budgetAtScaleSection(): Promise<{ lines: string[]; failures: string[] }> {
  const failures: string[] = [];
  const rows: string[] = [];
  for (const { label, options } of SCENARIOS) {
    const report = await quietly(options);
    if (report.maxPerWindow > 20)
      failures.push(`scale (${label}): ${report.maxPerWindow} arrivals in one 10 s window`);
    if (report.payhere429 > 0)
      failures.push(`scale (${label}): PayHere answered 429 ${report.payhere429} times`);
    if (report.charges.refused > 0)
      failures.push(
        `scale (${label}): ${report.charges.refused} customers' charges refused for want of a slot`,
      );
    const served = Object.values(report.answers).map((answer) => answer.served);
    const refused = Object.values(report.answers).reduce((sum, answer) => sum + answer.refused, 0);
    const { table } = report;
    rows.push(
      `| ${label} | ${report.arrivals} | **${report.maxPerWindow}** | ${report.payhere429} | ${report.tokenRequests} of ${report.tokenAttempts} | ${charges(report)} | ${Math.min(...served)} / ${median(served)} / ${Math.max(...served)} | ${refused} | ${table.requests} | ${table.throttled} | ${table.internalErrors} | ${table.late} | ${table.outage} | ${(report.tookMs / 1000).toFixed(1)} s |`,
    );
  }
  const lines = [
    '## The budget at scale',
    '',
    `The service's SharedLimiter in ${BASE.containers} containers (one request at a time each, as Lambda runs them) for ${BASE.durationMs / MINUTE} simulated minutes on a virtual clock, ${BASE.offeredPerSecond} requests a second offered by ${BASE.callers} callers, each call's deadline 20 s, against an in-memory budget item with the state table's conditional writes, throttled at one partition's rates, and a PayHere that answers 429 past 20 in 10 s (tests/helpers/budget-simulation.ts, seed ${BASE.seed}). Budgets: no 10 s window over 20 arrivals; no 429; no customer's charge refused for want of a slot. Calls served per caller: min / median / max. Table: requests, throttled, 500s, answered too late, failed in the outage.`,
    '',
    '| table | PayHere calls | most in 10 s | 429s | tokens (made of asked) | customers’ charges: served, refused, slowest wait | served per caller | refused 429 | table requests | throttled | 500s | late | outage | real time |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ];
  return { lines, failures };
}
