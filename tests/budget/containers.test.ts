import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_CREDENTIALS, type Sandbox, startSandbox } from '../../sandbox/server.ts';
import type { RouteName } from '../helpers/routes.ts';
import { busiestWindow } from '../helpers/windows.ts';
import type { Command, Result } from './container-process.ts';

/**
 * Eight processes, each a container of one of six functions (reads, charges and refunds), against one sandbox and
 * one dynalite: the budget holds for all of them together, counted where the sandbox counts
 * arrivals. PayHere's window is shortened to 2 s (20 per 2 s) to keep the test short; the
 * sandbox enforces the same limit, as PayHere would. Every read names an object PayHere does not
 * know, another each time, so that none is answered from a shared read (tests/reads/ show those):
 * PayHere answers each with a not-found, and each costs a call.
 */
const LIMIT = 20;
const WINDOW_MS = 2_000;

interface Container {
  route: RouteName;
  process: ChildProcess;
  /** Warnings the service logged (the fallback to its own share among them). */
  warnings: string[];
  send(command: Command): Promise<Result[]>;
}

const READS: RouteName[] = [
  'retrievePayments',
  'retrievePayments',
  'subscriptionPayments',
  'subscriptionPayments',
  'getSubscription',
  'listSubscriptions',
];

/**
 * The read was answered rather than refused by the budget: not found (the objects are unknown to
 * PayHere), or the merchant's subscriptions (shared: the list costs one call a window).
 */
const answered = (r: Result) => r.status === 404 || (r.route === 'listSubscriptions' && r.status === 200);
/** A charge goes through; a refund of a payment PayHere does not know is refused by PayHere: both reach it. */
const MONEY: RouteName[] = ['charge', 'refund'];
const isMoney = (r: Result) => MONEY.includes(r.route);
/** PayHere answered the money call: a charge with its payment, a refund with its refusal; not the budget's 429. */
const moneyThrough = (r: Result) =>
  r.route === 'charge' ? r.status === 200 : r.status === 422 || r.status === 404;

async function startContainer(route: RouteName, env: NodeJS.ProcessEnv): Promise<Container> {
  const child = spawn(process.execPath, [path.join(import.meta.dirname, 'container-process.ts'), route], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const warnings: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => warnings.push(line));
  const waiting: Array<(line: { ready?: string; done?: Result[] }) => void> = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.startsWith('@@')) waiting.shift()?.(JSON.parse(line.slice(2)));
  });
  const next = () => new Promise<{ ready?: string; done?: Result[] }>((resolve) => waiting.push(resolve));
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) =>
      reject(new Error(`${route} container exited (${code}): ${warnings.join('\n')}`)),
    ),
  );
  await Promise.race([next(), exited]);
  return {
    route,
    process: child,
    warnings,
    async send(command) {
      const answer = next();
      child.stdin!.write(`${JSON.stringify(command)}\n`);
      return (await Promise.race([answer, exited])).done!;
    },
  };
}

let sandbox: Sandbox;
let containers: Container[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: { limit: LIMIT, windowMs: WINDOW_MS } });
  const env = {
    ...process.env,
    GATEWAY_BASE_URL: sandbox.url,
    GATEWAY_APP_ID: SANDBOX_CREDENTIALS.appId,
    GATEWAY_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
    GATEWAY_MERCHANT_ID: SANDBOX_CREDENTIALS.merchantId,
    GATEWAY_MERCHANT_SECRET: SANDBOX_CREDENTIALS.merchantSecret,
    GATEWAY_RATE_LIMIT: `${LIMIT}/${WINDOW_MS}`,
    // Eight processes and dynalite share two cores here: a table answering in a second is slow, not down.
    STATE_TABLE_TIMEOUT_MS: '3000',
    LOG_LEVEL: 'warn',
    POWERTOOLS_METRICS_DISABLED: 'true',
  };
  containers = await Promise.all([...READS, ...MONEY].map((route) => startContainer(route, env)));
}, 60_000);

afterAll(async () => {
  for (const container of containers) container.process.kill();
  await sandbox?.close();
});

/** Every container runs its command at once; the answers, all together. */
async function everyone(read: Command, money: Command): Promise<Result[]> {
  const answers = await Promise.all(
    containers.map((container) => container.send(MONEY.includes(container.route) ? money : read)),
  );
  return answers.flat();
}

function expectAnsweredInTime(results: Result[]): void {
  for (const result of results) {
    // Before the Lambda's own timeout. The service stops waiting for PayHere a second before it
    // (RESPONSE_RESERVE_MS) and answers in that second; how much of it the answer takes here is not
    // the service's to say: eight containers, dynalite and the sandbox share two cores with the
    // suite's other files, and every read refused at its deadline answers at the same moment. A
    // read that waited for a slot past its deadline would take the budget's many windows.
    expect(result.answeredAt - result.startedAt).toBeLessThan(result.remainingMs);
  }
}

const arrivalTimes = () => sandbox.arrivals().map((arrival) => arrival.at);

/** BUDGET_FIGURES=1 prints what each scenario measured. */
function figures(name: string, results: Result[]): void {
  if (!process.env.BUDGET_FIGURES) return;
  const took = results.map((r) => r.answeredAt - r.startedAt);
  const count = (filter: (r: Result) => boolean) => results.filter(filter).length;
  console.log(
    JSON.stringify({
      name,
      arrivals: sandbox.arrivals().length,
      busiestWindow: busiestWindow(arrivalTimes(), WINDOW_MS),
      readsAnswered: count((r) => !isMoney(r) && answered(r)),
      reads429: count((r) => !isMoney(r) && r.status === 429),
      moneyThrough: count((r) => isMoney(r) && moneyThrough(r)),
      slowestMs: Math.max(...took),
    }),
  );
}

describe('PayHere’s budget over eight containers of six functions', () => {
  it('in a burst: never more than the limit in any window, money through while reads are refused', async () => {
    // Reads: a Lambda with 4 s left (3 s for PayHere); charges: 16 s (5.4 s once the bookkeeping is kept).
    const results = await everyone(
      { count: 12, spacingMs: 0, remainingMs: 4_000 },
      { count: 2, spacingMs: 0, remainingMs: 16_000 },
    );

    figures('burst', results);
    const reads = results.filter((r) => !isMoney(r));
    const money = results.filter(isMoney);
    expect(results).toHaveLength(6 * 12 + 2 * 2);
    expectAnsweredInTime(results);
    expect(money.filter(moneyThrough)).toHaveLength(4);
    const refused = reads.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused)
      expect([r.code, r.retryAfter]).toEqual(['rate_limited', expect.stringMatching(/^\d+$/)]);
    // Reads were served up to the budget, not starved: PayHere got the first window's unreserved 15
    // in reads, less the shared token's fetch (the first call) and what the 4 money calls took of it
    // before the reserve. Counted as PayHere's read calls: one subscription PayHere does not know
    // costs two (the subscription, then the list), and some reads are answered from the shared list.
    const readCalls = sandbox.arrivals().filter((a) => !['token', 'charge', 'refund'].includes(a.endpoint));
    expect(readCalls.length).toBeGreaterThanOrEqual(LIMIT - 5 - 1 - 4);
    expect(reads.filter(answered).length).toBeGreaterThan(0);
    expect(busiestWindow(arrivalTimes(), WINDOW_MS)).toBeLessThanOrEqual(LIMIT);
  });

  it('at a steady overload: the limit holds, every caller answers in time, every money call reaches PayHere', async () => {
    // 6 reads per second per read container for 3 s (36/s asked of 10/s), a charge a second per charge container.
    const results = await everyone(
      { count: 18, spacingMs: 170, remainingMs: 3_000 },
      { count: 3, spacingMs: 1_000, remainingMs: 16_000 },
    );

    figures('steady', results);
    expectAnsweredInTime(results);
    expect(results.filter(isMoney).filter(moneyThrough)).toHaveLength(6);
    expect(results.filter((r) => !isMoney(r) && r.status === 429).length).toBeGreaterThan(0);
    expect(busiestWindow(arrivalTimes(), WINDOW_MS)).toBeLessThanOrEqual(LIMIT);
  });

  it('pauses every container after a 429 from PayHere until its Retry-After', async () => {
    sandbox.faults.inject('subscriptionPayments', { kind: 'rateLimited', retryAfterSeconds: 2 });
    const before = sandbox.arrivals().length;

    const results = await everyone(
      { count: 10, spacingMs: 300, remainingMs: 6_000 },
      { count: 2, spacingMs: 1_500, remainingMs: 16_000 },
    );

    figures('429', results);
    expectAnsweredInTime(results);
    const arrivals = sandbox.arrivals().slice(before);
    const limited = arrivals.find((arrival) => arrival.endpoint === 'subscriptionPayments')!;
    // Requests that had their slot before the 429 was answered may still land just after it.
    const duringPause = arrivals.filter((a) => a.at > limited.at + 300 && a.at < limited.at + 1_900);
    expect(duringPause).toEqual([]);
    expect(arrivals.some((a) => a.at >= limited.at + 2_000)).toBe(true);
    expect(busiestWindow(arrivalTimes(), WINDOW_MS)).toBeLessThanOrEqual(LIMIT);
  });

  it('took one token request for the whole run, and no container fell back to its own share', () => {
    expect(sandbox.counters().token).toBe(1);
    for (const container of containers) {
      expect(container.warnings.filter((line) => line.includes('fallback share'))).toEqual([]);
    }
  });
});
