/**
 * What the settle job does with a backlog an outage left (lib/settle/): charges whose outcome is
 * unknown (half processed by PayHere, half not), settled by runs of the job as deployed (its
 * limits' defaults, serverless.yml's timeout, on the schedule's rate) against PayHere's real budget,
 * with nothing else calling PayHere. The sandbox plays PayHere with its own rate limit, and
 * everything runs on a virtual clock (tests/helpers/virtual-clock.ts): the budget's waits and the
 * time between runs pass at once, so the simulated minutes take seconds. Budgets: all settled within
 * MAX_MINUTES, never more than PayHere's limit in any window.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { arrivalMargin, reservedShare } from '../lib/budget/limiter.ts';
import { SharedStateTable } from '../lib/budget/state-table.ts';
import { loadConfig } from '../lib/config/config.ts';
import { DynamoDBClient, type DynamoDbCommand } from '../lib/dynamodb/index.ts';
import { createPayHere } from '../lib/gateway/index.ts';
import { recordKey } from '../lib/idempotency/idempotent.ts';
import { IdempotencyStore } from '../lib/idempotency/store.ts';
import { LedgerStore } from '../lib/ledger/store.ts';
import { ChargeEngine } from '../lib/orders/charge-engine.ts';
import { loadOrdersConfig } from '../lib/orders/config.ts';
import { Confirmations } from '../lib/orders/confirmations.ts';
import { CHARGEABLE, chargeMove } from '../lib/orders/evidence.ts';
import { Holds } from '../lib/orders/holds.ts';
import { MoneySettlement } from '../lib/orders/money-settlement.ts';
import { OrderReports } from '../lib/orders/reports.ts';
import { loadSettleLimits } from '../lib/settle/from-environment.ts';
import { SettleJob } from '../lib/settle/job.ts';
import { SEED, startSandbox } from '../sandbox/server.ts';
import { createTable } from '../scripts/local-dynamodb.ts';
import { clockedCappedTransport, VirtualClock } from '../tests/helpers/virtual-clock.ts';
import { busiestWindow } from '../tests/helpers/windows.ts';
import { accessToken, apiClient } from '../tests/sandbox/helpers.ts';
import { DYNAMODB_READS, DYNAMODB_WRITES } from './cold.ts';
import type { BenchEnvironment } from './environment.ts';

const UNKNOWN = 1_000;
/** PayHere's budget for the merchant. */
const BUDGET = { limit: 20, windowMs: 10_000 };
/** How often the schedule runs the job (serverless.yml, SETTLE_RATE's default). */
const EVERY_MS = 2 * 60_000;
const MAX_MINUTES = 15;
/** Wall time the section may take: a simulation, not a wait. */
const MAX_WALL_SECONDS = 60;
/** Unknowns written at once while the backlog is set up: half of them paid, within one window of PayHere's limit. */
const SETUP_BATCH = 36;

export interface SettleRunCost {
  startedAt: number;
  endedAt: number;
  settled: number;
  interrupted: number;
  calls: number;
  reads: number;
  writes: number;
  busiest: number;
}

/** A DynamoDB client that counts what it sends, by operation. */
function countingClient(endpoint: string, region: string) {
  const client = new DynamoDBClient({ endpoint, region });
  const counts = new Map<string, number>();
  return {
    counts,
    client: {
      send: <Output>(command: DynamoDbCommand<unknown, Output>) => {
        counts.set(command.operation, (counts.get(command.operation) ?? 0) + 1);
        return client.send(command);
      },
    } as unknown as DynamoDBClient,
  };
}

/** The settle function's timeout, as serverless.yml deploys it: each run's deadline. */
async function settleTimeoutMs(): Promise<number> {
  const file = await readFile(path.join(import.meta.dirname, '..', 'serverless.yml'), 'utf8');
  const config = parse(file) as {
    functions: { settle: { timeout?: number } };
    provider: { timeout: number };
  };
  return (config.functions.settle.timeout ?? config.provider.timeout) * 1000;
}

export async function measureSettle(
  environment: BenchEnvironment,
): Promise<{ lines: string[]; failures: string[] }> {
  const wallStarted = performance.now();
  const clock = new VirtualClock();
  // PayHere with its own limit, on the simulation's clock.
  const sandbox = await startSandbox({ now: clock.now, rateLimit: BUDGET });
  try {
    const endpoint = environment.env.DYNAMODB_ENDPOINT!;
    const tables = {
      idempotency: `settle-idempotency-${randomUUID()}`,
      ledger: `settle-ledger-${randomUUID()}`,
    };
    const state = `settle-state-${randomUUID()}`;
    await createTable(endpoint, tables.idempotency, { settleIndex: true });
    await createTable(endpoint, tables.ledger, { settleIndex: true });
    await createTable(endpoint, state);
    const env = {
      ...environment.env,
      GATEWAY_BASE_URL: sandbox.url,
      GATEWAY_RATE_LIMIT: `${BUDGET.limit}/${BUDGET.windowMs}`,
    };
    const { client, counts } = countingClient(endpoint, 'ap-south-1');
    const ledger = new LedgerStore({ client, table: tables.ledger });
    const store = new IdempotencyStore({ client, table: tables.idempotency, ttlSeconds: 86_400 });
    const orders = loadOrdersConfig(env);

    // The backlog: charges whose answers were lost in the outage, each order's slot taken and its
    // request recorded unknown; every other one processed by PayHere (a payment in the window).
    // The payments are made within PayHere's limit too: a batch's, then the clock a window on.
    const setupStarted = clock.now();
    const window = { sentAt: setupStarted - 1_000, until: setupStarted + 10 * 60_000 };
    const api = apiClient(sandbox, await accessToken(sandbox));
    for (let batch = 0; batch < UNKNOWN; batch += SETUP_BATCH) {
      const processed: number[] = [];
      await Promise.all(
        Array.from({ length: Math.min(SETUP_BATCH, UNKNOWN - batch) }, async (_, j) => {
          const i = batch + j;
          const body = {
            type: 'PAYMENT' as const,
            order_id: `Settle-${randomUUID()}`,
            items: 'Bench',
            currency: 'LKR',
            amount: 100 + (i % 500),
            customer_token: SEED.customerTokens.success,
          };
          const key = recordKey('charge', 'bench', randomUUID());
          await ledger.claimCharge({
            orderId: body.order_id,
            owner: 'bench',
            kind: 'charge',
            price: { items: body.items, currency: body.currency, amountCents: body.amount * 100 },
            custom1: null,
            custom2: null,
            slot: { key, ...window },
            chargeable: CHARGEABLE,
            rule: 'merchant',
          });
          const lost = chargeMove('charge_lost');
          await ledger.finishCharge(body.order_id, key, {
            state: lost.to,
            from: lost.from,
            overReport: lost.overReport,
          });
          const subject = { operation: 'charge', role: 'merchant', sub: 'bench', owner: 'bench', body };
          const begun = await store.begin(key, 'f'.repeat(64), setupStarted + 25_000, {
            subject: JSON.stringify(subject),
            // Oldest first: the order they were lost in.
            at: setupStarted + i,
          });
          if (!('acquired' in begun))
            throw new Error('bench: an unknown charge’s record could not be written');
          await store.finish(begun.acquired, 'outcome_unknown', { statusCode: 202, headers: {}, body: '{}' });
          if (i % 2 === 0) {
            const paid = await api.post('payment/charge', body);
            if (paid.status !== 200) throw new Error(`bench: a payment was refused (${paid.status})`);
            processed.push(i);
          }
        }),
      );
      if (processed.length > 0) clock.advanceTo(clock.now() + BUDGET.windowMs + 1);
    }
    if (clock.now() > window.until)
      throw new Error('bench: the backlog took longer to set up than its window');

    const setupSeconds = (performance.now() - wallStarted) / 1000;
    // The job as the scheduled function builds it, on the simulation's clock, its "now" past the
    // settle delay after the charges' window; PayHere's window clear of the set-up's payments.
    clock.advanceTo(clock.now() + BUDGET.windowMs + 1);
    const firstRun = clock.now();
    const later = window.until + orders.settleDelayMs - firstRun + 60_000;
    const now = () => clock.now() + later;
    const limits = loadSettleLimits({});
    const runMs = await settleTimeoutMs();
    const config = loadConfig(env);
    const transport = clockedCappedTransport(clock, config.gatewayBaseUrl, limits.calls);
    const sharedState = new SharedStateTable({ client, table: state, timeoutMs: 2_000 });
    const payhere = createPayHere(config, { sharedState, transport, now: clock.now, sleep: clock.sleep });
    const deps = { payhere, ledger, holds: new Holds(ledger), settleDelayMs: orders.settleDelayMs, now };
    const job = new SettleJob({
      store,
      ledger,
      money: new MoneySettlement({
        ...deps,
        chargeEngine: new ChargeEngine({ payhere, ledger, config: orders }),
      }),
      reports: new OrderReports({
        ledger,
        confirmations: new Confirmations({ payhere, reserved: true }),
        keepDays: 90,
        now,
      }),
      limits,
      calls: () => transport.calls,
      now,
      clock: clock.now,
    });

    const runs: SettleRunCost[] = [];
    for (let startedAt = firstRun; runs.length < 30; startedAt += EVERY_MS) {
      clock.advanceTo(startedAt);
      counts.clear();
      transport.reset();
      const arrivedBefore = clock.arrivals.length;
      const run = await job.run(clock.now() + runMs);
      const sum = (operations: readonly string[]) =>
        operations.reduce((total, operation) => total + (counts.get(operation) ?? 0), 0);
      runs.push({
        startedAt,
        endedAt: clock.now(),
        settled: run.settled,
        interrupted: run.interrupted,
        calls: transport.calls,
        reads: sum(DYNAMODB_READS),
        writes: sum(DYNAMODB_WRITES),
        busiest: busiestWindow(
          clock.arrivals.slice(arrivedBefore).map(({ at }) => at),
          BUDGET.windowMs,
        ),
      });
      if (!run.backlog) break;
    }
    const wallSeconds = (performance.now() - wallStarted) / 1000;

    const total = runs.reduce((sum, run) => sum + run.settled, 0);
    const last = runs.findLast((run) => run.settled > 0) ?? runs[0]!;
    const minutes = (last.endedAt - firstRun) / 60_000;
    // What PayHere saw: every arrival since the first run, on its own clock.
    const arrivals = sandbox
      .arrivals()
      .filter(({ at }) => at >= firstRun)
      .map(({ at }) => at);
    const busiest = busiestWindow(arrivals, BUDGET.windowMs);
    const live = reservedShare(BUDGET.limit);
    const pace = Math.ceil((BUDGET.windowMs + arrivalMargin(BUDGET.windowMs)) / BUDGET.limit);
    const failures: string[] = [];
    if (total !== UNKNOWN) failures.push(`settle: ${total} of ${UNKNOWN} unknown charges settled`);
    if (minutes > MAX_MINUTES)
      failures.push(
        `settle: ${UNKNOWN} unknowns took ${minutes.toFixed(1)} simulated minutes > ${MAX_MINUTES}`,
      );
    if (busiest > BUDGET.limit)
      failures.push(`settle: ${busiest} PayHere calls in a 10 s window > PayHere's ${BUDGET.limit}`);
    if (wallSeconds > MAX_WALL_SECONDS)
      failures.push(
        `settle: the simulation took ${wallSeconds.toFixed(1)} s of wall time > ${MAX_WALL_SECONDS} s`,
      );
    const minute = (at: number) => ((at - firstRun) / 60_000).toFixed(2);
    const lines = [
      '## The settle job',
      '',
      `A backlog an outage left: ${UNKNOWN} charges whose outcome is unknown (half processed by PayHere), settled by runs of the job as deployed (at most ${limits.items} items and ${limits.calls} PayHere calls a run, each run ending ${runMs / 1000} s after it starts, serverless.yml's timeout; one every ${EVERY_MS / 60_000} minutes), against PayHere's budget of ${BUDGET.limit} calls per ${BUDGET.windowMs / 1000} s with nothing else calling PayHere. The job's calls leave the live reserve (${live} of ${BUDGET.limit}) free while live calls are about; alone on PayHere, as here, they may take all but one slot, at most one per ${pace} ms so that the job's slots free apart (lib/budget/limiter.ts). The sandbox plays PayHere with its own rate limit; the run is simulated on a virtual clock (the budget's waits and the time between runs pass at once; the code's own time is real), ${wallSeconds.toFixed(1)} s of wall time (${setupSeconds.toFixed(1)} s of it setting up the backlog). Budgets: all settled within ${MAX_MINUTES} simulated minutes, at most ${BUDGET.limit} PayHere calls in any ${BUDGET.windowMs / 1000} s, within ${MAX_WALL_SECONDS} s of wall time.`,
      '',
      '| run | starts at (min) | ends at (min) | settled | cut short | PayHere calls | most in 10 s | DynamoDB reads | DynamoDB writes |',
      '|---|---|---|---|---|---|---|---|---|',
      ...runs.map(
        (run, i) =>
          `| ${i + 1} | ${minute(run.startedAt)} | ${minute(run.endedAt)} | ${run.settled} | ${run.interrupted} | ${run.calls} | ${run.busiest} | ${run.reads} | ${run.writes} |`,
      ),
      `| all ${runs.length} runs | | | ${total} | ${runs.reduce((s, r) => s + r.interrupted, 0)} | ${runs.reduce((s, r) => s + r.calls, 0)} | ${busiest} | ${runs.reduce((s, r) => s + r.reads, 0)} | ${runs.reduce((s, r) => s + r.writes, 0)} |`,
      '',
      `${total} of ${UNKNOWN} unknowns settled in ${minutes.toFixed(1)} simulated minutes from the first run (budget ${MAX_MINUTES}), at most ${busiest} PayHere calls in any 10 s as PayHere counted them (budget ${BUDGET.limit}; with nothing live, the job leaves one free, so ${BUDGET.limit - 1} is its most). Capped at 4 PayHere calls a run, as runs were before, as many took ${((Math.ceil((UNKNOWN + 1) / 4) * EVERY_MS) / 3_600_000).toFixed(1)} hours.`,
    ];
    return { lines, failures };
  } finally {
    await sandbox.close();
  }
}
