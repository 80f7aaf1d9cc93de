import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { createTable } from '../scripts/local-dynamodb.ts';
import type { GatewayRouteName } from '../tests/helpers/routes.ts';
import { busiestWindow } from '../tests/helpers/windows.ts';
import { OUT, ROOT } from './build.ts';
import type { ContainerAnswer, ContainerCommand } from './container-child.ts';
import type { BenchEnvironment } from './environment.ts';
import type { LimiterPlan, LimiterSamples } from './limiter-child.ts';

const run = promisify(execFile);

/** PayHere's own limit, as the deployment is configured by default (docs/contract.md "PayHere's budget"). */
export const PAYHERE_LIMIT = { limit: 20, windowMs: 10_000 };

/** A budget of its own for each measurement: a new state table, so no slot or token carries over. */
export async function freshBudget(environment: BenchEnvironment): Promise<Record<string, string>> {
  const table = `payhere-payments-api-bench-state-${randomUUID().slice(0, 8)}`;
  await createTable(environment.dynamodb.endpoint, table);
  return {
    ...environment.env,
    STATE_TABLE: table,
    GATEWAY_RATE_LIMIT: `${PAYHERE_LIMIT.limit}/${PAYHERE_LIMIT.windowMs}`,
    // Nine processes and dynalite share two cores here: a table answering in a second is slow,
    // not down (DynamoDB answers in milliseconds). At 500 ms, containers fell back to shares of
    // their own in the first burst, which come on top of the shared budget (docs/budget.md).
    STATE_TABLE_TIMEOUT_MS: '3000',
    POWERTOOLS_METRICS_DISABLED: 'true',
    LOG_LEVEL: 'error',
  };
}

/** The same warm read with the budget in memory and in the shared table, and one table round trip. */
export async function measureLimiterCost(
  environment: BenchEnvironment,
  plan: LimiterPlan,
): Promise<LimiterSamples> {
  const planFile = path.join(OUT, 'limiter.json');
  await writeFile(planFile, JSON.stringify(plan));
  const { stdout } = await run(
    process.execPath,
    [path.join(ROOT, 'bench', 'limiter-child.ts'), planFile],
    // The bench's budget is large (no call waits for a slot): this measures a slot's cost, not waits.
    { env: { ...process.env, ...environment.env, LOG_LEVEL: 'error' }, timeout: 300_000 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as LimiterSamples;
}

const RESETS_STATE: GatewayRouteName[] = ['retrySubscription', 'cancelSubscription'];

interface Container {
  route: GatewayRouteName;
  process: ChildProcess;
  send(command: ContainerCommand): Promise<ContainerAnswer[]>;
}

async function startContainer(
  route: GatewayRouteName,
  bundle: string,
  env: Record<string, string>,
): Promise<Container> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bench', 'container-child.ts'), bundle], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting: Array<(line: { ready?: boolean; done?: ContainerAnswer[] }) => void> = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.startsWith('@@')) waiting.shift()?.(JSON.parse(line.slice(2)));
  });
  const next = () => new Promise<{ done?: ContainerAnswer[] }>((resolve) => waiting.push(resolve));
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`${route} container exited (${code})`))),
  );
  await Promise.race([next(), exited]);
  return {
    route,
    process: child,
    async send(command) {
      const answer = next();
      child.stdin!.write(`${JSON.stringify(command)}\n`);
      return (await Promise.race([answer, exited])).done!;
    },
  };
}

export interface BurstFigures {
  containers: number;
  requests: number;
  /** Requests PayHere received, by endpoint, and the most in any of its windows. */
  arrivals: number;
  tokenRequests: number;
  busiestWindow: number;
  /** Answers by HTTP status, and by route and status. */
  statuses: Record<string, number>;
  byRoute: Record<string, Record<string, number>>;
  /** From the first request to the last answer. */
  durationMs: number;
  slowestMs: number;
}

/**
 * A burst over every route at once, one warm container per route (its packaged bundle in a process
 * of its own), all sharing one budget of PayHere's real size and one token, against the sandbox:
 * what reaches PayHere and how the callers are answered. Each Lambda has the deployed timeout.
 */
export async function measureBurst(
  environment: BenchEnvironment,
  bundles: Array<{ route: GatewayRouteName; bundle: string }>,
  perRoute: number,
  remainingMs: number,
): Promise<BurstFigures> {
  const env = await freshBudget(environment);
  const containers = await Promise.all(
    bundles.map(({ route, bundle }) => startContainer(route, bundle, env)),
  );
  try {
    const commands = new Map<Container, ContainerCommand>();
    // Retry and cancel reset the sandbox's subscriptions as they are prepared (and with them its
    // payments): prepared first, so that the holds and payments made for the others stay.
    const resetsFirst = (container: Container) => (RESETS_STATE.includes(container.route) ? 0 : 1);
    for (const container of [...containers].sort((a, b) => resetsFirst(a) - resetsFirst(b))) {
      const events = [];
      for (let i = 0; i < perRoute; i++) events.push((await environment.prepare(container.route)).event);
      commands.set(container, { events, remainingMs });
    }
    environment.sandbox.resetCounters();
    const startedAt = Date.now();
    const answered = await Promise.all(
      containers.map(async (container) => ({
        route: container.route,
        answers: await container.send(commands.get(container)!),
      })),
    );
    const answers = answered.flatMap(({ answers }) => answers);
    const durationMs = Math.max(...answers.map((a) => a.answeredAt)) - startedAt;
    const arrivals = environment.sandbox.arrivals();
    const statuses: Record<string, number> = {};
    const byRoute: Record<string, Record<string, number>> = {};
    for (const { route, answers: ofRoute } of answered) {
      const counts: Record<string, number> = {};
      byRoute[route] = counts;
      for (const { status } of ofRoute) {
        counts[status] = (counts[status] ?? 0) + 1;
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }
    return {
      containers: containers.length,
      requests: answers.length,
      arrivals: arrivals.length,
      tokenRequests: environment.sandbox.counters().token ?? 0,
      busiestWindow: busiestWindow(
        arrivals.map((arrival) => arrival.at),
        PAYHERE_LIMIT.windowMs,
      ),
      statuses,
      byRoute,
      durationMs,
      slowestMs: Math.max(...answers.map((a) => a.answeredAt - a.startedAt)),
    };
  } finally {
    for (const container of containers) container.process.kill();
  }
}
