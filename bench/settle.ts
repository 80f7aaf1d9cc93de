/**
 * What the settle job costs (lib/settle/): 100 charges whose outcome is unknown (half processed by
 * PayHere, half not), settled by runs of the job as deployed (25 items, 4 PayHere calls a run):
 * per run, PayHere calls and DynamoDB reads and writes, and how many runs settle them all. A run's
 * PayHere calls must stay within the budget's reserved share of one window.
 */
import { randomUUID } from 'node:crypto';
import { reservedShare } from '../lib/budget/limiter.ts';
import { SharedStateTable } from '../lib/budget/state-table.ts';
import { loadConfig } from '../lib/config/config.ts';
import { DynamoDBClient, type DynamoDbCommand } from '../lib/dynamodb/index.ts';
import { CONNECT_TIMEOUT_MS, createPayHere } from '../lib/gateway/index.ts';
import { recordKey } from '../lib/idempotency/idempotent.ts';
import { IdempotencyStore } from '../lib/idempotency/store.ts';
import { LedgerStore } from '../lib/ledger/store.ts';
import { Confirmations } from '../lib/notifications/confirm.ts';
import { Charging } from '../lib/orders/charge.ts';
import { loadOrdersConfig } from '../lib/orders/config.ts';
import { CHARGEABLE, chargeMove } from '../lib/orders/evidence.ts';
import { Holds } from '../lib/orders/holds.ts';
import { OrderReports } from '../lib/orders/reports.ts';
import { CappedTransport } from '../lib/settle/capped-transport.ts';
import { SettleJob } from '../lib/settle/job.ts';
import { MoneySettlement } from '../lib/settle/money.ts';
import { SEED } from '../sandbox/server.ts';
import { accessToken, apiClient } from '../tests/sandbox/helpers.ts';
import { DYNAMODB_READS, DYNAMODB_WRITES } from './cold.ts';
import type { BenchEnvironment } from './environment.ts';

const UNKNOWN = 100;
const LIMITS = { items: 25, calls: 4 };
/** PayHere's 20 per 10 s: the reserved share a run's calls must stay within. */
const RESERVED = reservedShare(20);

export interface SettleRunCost {
  settled: number;
  calls: number;
  reads: number;
  writes: number;
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

export async function measureSettle(
  environment: BenchEnvironment,
): Promise<{ lines: string[]; failures: string[] }> {
  const env = environment.env;
  const { client, counts } = countingClient(env.DYNAMODB_ENDPOINT!, 'ap-south-1');
  const ledger = new LedgerStore({ client, table: env.LEDGER_TABLE! });
  const store = new IdempotencyStore({ client, table: env.IDEMPOTENCY_TABLE!, ttlSeconds: 86_400 });
  const api = apiClient(environment.sandbox, await accessToken(environment.sandbox));

  // 100 charges whose answers were lost: each order's slot taken, recorded unknown; half of them
  // processed by PayHere (a payment in the window), half not.
  const started = Date.now();
  for (let i = 0; i < UNKNOWN; i++) {
    const body = {
      type: 'PAYMENT' as const,
      order_id: `Settle-${randomUUID()}`,
      items: 'Bench',
      currency: 'LKR',
      amount: 100 + i,
      customer_token: SEED.customerTokens.success,
    };
    const key = recordKey('charge', 'bench', randomUUID());
    // The window every charge of the bench was open in: the payments made below fall in it.
    const until = started + 60_000;
    await ledger.claimCharge({
      orderId: body.order_id,
      owner: 'bench',
      kind: 'charge',
      price: { items: body.items, currency: body.currency, amountCents: body.amount * 100 },
      custom1: null,
      custom2: null,
      slot: { key, sentAt: started - 1_000, until },
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
    const begun = await store.begin(key, 'f'.repeat(64), started + 25_000, {
      subject: JSON.stringify(subject),
      at: started,
    });
    if (!('acquired' in begun)) throw new Error('bench: an unknown charge’s record could not be written');
    await store.finish(begun.acquired, 'outcome_unknown', { statusCode: 202, headers: {}, body: '{}' });
    if (i % 2 === 0) await api.post('payment/charge', body);
  }

  // The job as the scheduled function builds it, its clock past the settle delay.
  const later = 12 * 60_000 + 60_000;
  const now = () => Date.now() + later;
  const config = loadConfig(env);
  const transport = new CappedTransport(config.gatewayBaseUrl, {
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    cap: LIMITS.calls,
  });
  const sharedState = new SharedStateTable({ client, table: env.STATE_TABLE!, timeoutMs: 2_000 });
  const payhere = createPayHere(config, { sharedState, transport });
  const orders = loadOrdersConfig(env);
  const deps = { payhere, ledger, holds: new Holds(ledger), settleDelayMs: orders.settleDelayMs, now };
  const job = new SettleJob({
    store,
    ledger,
    money: new MoneySettlement({ ...deps, charging: new Charging({ payhere, ledger, config: orders }) }),
    reports: new OrderReports({
      ledger,
      confirmations: new Confirmations({ payhere, reserved: true }),
      keepDays: 90,
      now,
    }),
    limits: LIMITS,
    calls: () => transport.calls,
    now,
  });

  const runs: SettleRunCost[] = [];
  for (let settled = 0; settled < UNKNOWN && runs.length < 60; ) {
    counts.clear();
    transport.reset();
    const run = await job.run(Date.now() + 20_000);
    const sum = (operations: readonly string[]) =>
      operations.reduce((total, operation) => total + (counts.get(operation) ?? 0), 0);
    runs.push({
      settled: run.settled,
      calls: transport.calls,
      reads: sum(DYNAMODB_READS),
      writes: sum(DYNAMODB_WRITES),
    });
    settled += run.settled;
    if (run.looked === 0) break;
  }

  const failures: string[] = [];
  const total = runs.reduce((sum, run) => sum + run.settled, 0);
  const maxCalls = Math.max(...runs.map((run) => run.calls));
  if (total !== UNKNOWN) failures.push(`settle: ${total} of ${UNKNOWN} unknown charges settled`);
  if (maxCalls > RESERVED)
    failures.push(`settle: a run made ${maxCalls} PayHere calls > the reserved ${RESERVED}`);
  const lines = [
    '## The settle job',
    '',
    `${UNKNOWN} charges whose outcome is unknown (half processed by PayHere), settled by runs of the job as deployed (${LIMITS.items} items, ${LIMITS.calls} PayHere calls a run; every two minutes). Budgets: all settled; at most ${RESERVED} PayHere calls a run (the budget's reserved share of one window). Each settled charge costs one search (the first run also fetches the access token).`,
    '',
    '| run | settled | PayHere calls | DynamoDB reads | DynamoDB writes |',
    '|---|---|---|---|---|',
    ...runs.map((run, i) => `| ${i + 1} | ${run.settled} | ${run.calls} | ${run.reads} | ${run.writes} |`),
    `| all ${runs.length} runs | ${total} | ${runs.reduce((s, r) => s + r.calls, 0)} | ${runs.reduce((s, r) => s + r.reads, 0)} | ${runs.reduce((s, r) => s + r.writes, 0)} |`,
    '',
    `At a run every two minutes, ${UNKNOWN} unknowns are settled within ${runs.length * 2} minutes of the settle delay, taking at most ${maxCalls} of PayHere's 20 calls in any 10 s.`,
  ];
  return { lines, failures };
}
