import { sharedStateFromEnvironment } from '../budget/from-environment.ts';
import { type Env, loadConfig, requireMerchantCredentials, wholeNumber } from '../config/config.ts';
import { CONNECT_TIMEOUT_MS, createPayHere } from '../gateway/index.ts';
import { idempotencyStoreFromEnvironment } from '../idempotency/from-environment.ts';
import { ChargeEngine } from '../orders/charge-engine.ts';
import { loadOrdersConfig } from '../orders/config.ts';
import { Confirmations } from '../orders/confirmations.ts';
import { settleDepsFromEnvironment } from '../orders/from-environment.ts';
import { MoneySettlement } from '../orders/money-settlement.ts';
import { OrderReports } from '../orders/reports.ts';
import { SubscriptionStandings } from '../orders/standings.ts';
import { CappedTransport } from './capped-transport.ts';
import { SettleJob, type SettleLimits } from './job.ts';
import { OpenCharges } from './open-charges.ts';

/**
 * The settle job's limits per run (SETTLE_MAX_ITEMS, SETTLE_MAX_CALLS). Its calls take only what
 * live calls leave of the budget (lib/budget/limiter.ts, idle work), so the defaults sit above what
 * a run can get in its time: the budget and the deadline bound a run, the caps only a runaway one.
 * Lower SETTLE_MAX_CALLS to leave PayHere more room than the live reserve.
 */
export function loadSettleLimits(env: Env): SettleLimits {
  return {
    items: wholeNumber(env, 'SETTLE_MAX_ITEMS', 300, 1),
    calls: wholeNumber(env, 'SETTLE_MAX_CALLS', 300, 1),
  };
}

/**
 * The settle job of the scheduled function, over a PayHere client of its own (the shared budget and
 * token) whose calls it caps per run.
 */
export function settleJobFromEnvironment(env: Env = process.env): {
  job: SettleJob;
  transport: CappedTransport;
} {
  const config = loadConfig(env);
  requireMerchantCredentials(config);
  const limits = loadSettleLimits(env);
  const transport = new CappedTransport(config.gatewayBaseUrl, {
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    cap: limits.calls,
  });
  const payhere = createPayHere(config, { sharedState: sharedStateFromEnvironment(env), transport });
  const deps = settleDepsFromEnvironment(payhere);
  const orders = loadOrdersConfig(env);
  const chargeEngine = new ChargeEngine({
    payhere,
    ledger: deps.ledger,
    config: orders,
    ...(deps.invalidation ? { invalidation: deps.invalidation } : {}),
  });
  // Money's kind of read; within the job every call is idle work anyway (lib/settle/job.ts).
  const confirmations = new Confirmations({ payhere, reserved: true });
  const reports = new OrderReports({
    ledger: deps.ledger,
    confirmations,
    keepDays: orders.notificationKeepDays,
  });
  const standings = new SubscriptionStandings({
    ledger: deps.ledger,
    confirmations,
    settleDelayMs: orders.settleDelayMs,
    ...(deps.invalidation ? { invalidation: deps.invalidation } : {}),
  });
  const store = idempotencyStoreFromEnvironment(env);
  const job = new SettleJob({
    store,
    ledger: deps.ledger,
    money: new MoneySettlement({ ...deps, chargeEngine }),
    reports,
    standings,
    openCharges: new OpenCharges({
      ledger: deps.ledger,
      store,
      chargeEngine,
      settleDelayMs: deps.settleDelayMs,
    }),
    limits,
    calls: () => transport.calls,
  });
  return { job, transport };
}
