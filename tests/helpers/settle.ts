/**
 * The settle job in-process (lib/settle/), as the scheduled function builds it, with its clock moved
 * ahead so that tests need not wait out the settle delay; and an idempotency table of the test
 * file's own, since the job settles every record due in its table, and other files' are not its.
 */
import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { sharedStateFromEnvironment } from '../../lib/budget/from-environment.ts';
import type { SharedStateTable } from '../../lib/budget/state-table.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { CONNECT_TIMEOUT_MS, createPayHere } from '../../lib/gateway/index.ts';
import { IdempotencyStore } from '../../lib/idempotency/store.ts';
import type { LedgerStore } from '../../lib/ledger/store.ts';
import { ChargeEngine } from '../../lib/orders/charge-engine.ts';
import { loadOrdersConfig } from '../../lib/orders/config.ts';
import { Confirmations } from '../../lib/orders/confirmations.ts';
import { Holds } from '../../lib/orders/holds.ts';
import { MoneySettlement } from '../../lib/orders/money-settlement.ts';
import { OrderReports } from '../../lib/orders/reports.ts';
import { SubscriptionStandings } from '../../lib/orders/standings.ts';
import { CappedTransport } from '../../lib/settle/capped-transport.ts';
import { SettleJob, type SettleLimits } from '../../lib/settle/job.ts';
import { OpenCharges } from '../../lib/settle/open-charges.ts';
import { createTable } from '../../scripts/local-dynamodb.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { clockedCappedTransport, type VirtualClock } from './virtual-clock.ts';

/**
 * An idempotency table for this file's money handlers (set before the first of them loads) and
 * the store over it.
 */
export async function ownIdempotencyTable(): Promise<IdempotencyStore> {
  const table = `settle-idempotency-${randomUUID()}`;
  await createTable(inject('dynamodbEndpoint'), table, { settleIndex: true });
  process.env.IDEMPOTENCY_TABLE = table;
  return new IdempotencyStore({ client: localClient(), table, ttlSeconds: 86_400 });
}

/** What a settle job runs on besides the test file's tables, when a test says. */
export interface SettleJobOptions {
  /** Its clock and the budget's (the Lambda's), moved by waits instead of waiting; runs last `runMs`. */
  clock?: VirtualClock;
  /** The budget it shares (the test file's STATE_TABLE by default). */
  sharedState?: SharedStateTable;
  /** PayHere's budget, `GATEWAY_RATE_LIMIT` (the tests' generous one by default). */
  rateLimit?: { limit: number; windowMs: number };
}

/** A settle job over `store` and `ledger` whose clock runs `later` ms ahead. */
export function settleJob(
  store: IdempotencyStore,
  ledger: LedgerStore,
  later: number,
  limits: SettleLimits = { items: 25, calls: 10 },
  options: SettleJobOptions = {},
) {
  const { clock } = options;
  const now = () => (clock?.now() ?? Date.now()) + later;
  const loaded = loadConfig(process.env);
  const config = options.rateLimit ? { ...loaded, rateLimit: options.rateLimit } : loaded;
  const transport = clock
    ? clockedCappedTransport(clock, config.gatewayBaseUrl, limits.calls)
    : new CappedTransport(config.gatewayBaseUrl, { connectTimeoutMs: CONNECT_TIMEOUT_MS, cap: limits.calls });
  const payhere = createPayHere(config, {
    sharedState: options.sharedState ?? sharedStateFromEnvironment(process.env),
    transport,
    ...(clock ? { now: clock.now, sleep: clock.sleep } : {}),
  });
  const orders = loadOrdersConfig(process.env);
  const deps = { payhere, ledger, holds: new Holds(ledger), settleDelayMs: orders.settleDelayMs, now };
  const chargeEngine = new ChargeEngine({ payhere, ledger, config: orders });
  const confirmations = new Confirmations({ payhere, reserved: true });
  const job = new SettleJob({
    store,
    ledger,
    money: new MoneySettlement({ ...deps, chargeEngine }),
    openCharges: new OpenCharges({
      ledger,
      store,
      chargeEngine,
      settleDelayMs: orders.settleDelayMs,
      now,
    }),
    reports: new OrderReports({ ledger, confirmations, keepDays: 90, now }),
    standings: new SubscriptionStandings({ ledger, confirmations, settleDelayMs: orders.settleDelayMs }),
    limits,
    calls: () => transport.calls,
    now,
    ...(clock ? { clock: clock.now } : {}),
  });
  return {
    /** One run of `runMs` (a new run: its calls count from zero, as the scheduled function's do). */
    run: (runMs = 20_000) => {
      transport.reset();
      return job.run((clock?.now() ?? Date.now()) + runMs);
    },
    calls: () => transport.calls,
  };
}
