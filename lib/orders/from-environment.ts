import { callerSharesFromEnvironment, sharedStateFromEnvironment } from '../budget/from-environment.ts';
import {
  ConfigError,
  loadConfig,
  requireMerchantCredentials,
  settleDelayMs,
  wholeNumber,
} from '../config/config.ts';
import { credentialsFor } from '../config/secrets.ts';
import type { AttributeValue } from '../dynamodb/index.ts';
import { eventRelayFromEnvironment } from '../events/from-environment.ts';
import type { EventRelay } from '../events/relay.ts';
import { createPayHere, type PayHere, payHereFromEnvironment } from '../gateway/index.ts';
import { idempotencyStoreFromEnvironment } from '../idempotency/from-environment.ts';
import { ledgerFromEnvironment, reconciliationReadsFromEnvironment } from '../ledger/from-environment.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { afterAnswer } from '../net/background.ts';
import {
  paymentSnapshotsFromEnvironment,
  sharedReadStoreFromEnvironment,
} from '../reads/from-environment.ts';
import { RefundStatuses } from '../reads/refund-statuses.ts';
import { SharedReads } from '../reads/shared-reads.ts';
import { SubscriptionPages } from '../reads/subscription-pages.ts';
import { webhookEndpointIds } from '../webhooks/endpoints.ts';
import { deliverSoon } from '../webhooks/from-environment.ts';
import { Ownership } from './access.ts';
import { Captures } from './captures.ts';
import { ChargeEngine } from './charge-engine.ts';
import { Charges } from './charges.ts';
import { Checkouts } from './checkout.ts';
import { loadOrdersConfig } from './config.ts';
import { Confirmations } from './confirmations.ts';
import { Holds } from './holds.ts';
import type { SettleDeps } from './money-settlement.ts';
import { OrderLists } from './order-lists.ts';
import { OrderPayments } from './payments.ts';
import { MAX_CHECKS, ReconciliationReports } from './reconciliation.ts';
import { RefundRecords } from './refund-records.ts';
import { Refunds } from './refunds.ts';
import { OrderReports } from './reports.ts';
import { SubscriptionRetries } from './retries.ts';
import { SubscriptionLists } from './subscription-lists.ts';
import { SubscriptionCancels } from './subscriptions.ts';

/** The container's relay of the ledger's events to the events table, made with its first ledger. */
let relay: EventRelay | undefined;
/** Items whose events wait for the relay, with the outbox as their latest write left it (undefined: read it). */
const unpublished = new Map<string, Record<string, AttributeValue> | undefined>();

/**
 * The container's ledger, whose writes that record events have them published after the answer
 * (lib/events/relay.ts; the scheduled relay publishes what a frozen or ended container could not),
 * each with a delivery due to every webhook endpoint.
 */
export function ledgerWithEvents(): LedgerStore {
  relay ??= eventRelayFromEnvironment(() => webhookEndpointIds());
  const events = relay;
  return ledgerFromEnvironment(process.env, (pk, written) => {
    // One relay per item, after the answer: a request that writes two events on one item (a
    // refund's slot, then its outcome) publishes both at once, and never while it is answering.
    const queued = unpublished.has(pk);
    unpublished.set(pk, queued && unpublished.get(pk) === undefined ? undefined : written);
    if (queued) return;
    afterAnswer(async () => {
      const latest = unpublished.get(pk);
      unpublished.delete(pk);
      const published = await events.publish(pk, latest);
      // Delivered at once where the endpoint is local; deployed, by deliverWebhooks' next run.
      await deliverSoon(published.map((event) => event.id));
    });
  });
}

/** Cancelling subscriptions over the container's PayHere client: what cannot change anything costs PayHere nothing. */
export function subscriptionCancelsFromEnvironment(payhere: PayHere): SubscriptionCancels {
  const store = sharedReadStoreFromEnvironment();
  return new SubscriptionCancels({
    payhere,
    ledger: ledgerWithEvents(),
    reads: new SharedReads({ payhere, store }),
    invalidation: store,
    settling: settleDepsFromEnvironment(payhere),
  });
}

/** What proves a hold's token (a capture or release PayHere accepted). */
export function holdsFromEnvironment(): Holds {
  return new Holds(ledgerWithEvents());
}

/** The container's ownership checks, built from the environment at start-up (a bad variable fails here). */
export function ownershipFromEnvironment(): Ownership {
  return new Ownership(ledgerWithEvents());
}

export function chargeEngineFromEnvironment(): ChargeEngine {
  return new ChargeEngine({
    payhere: payHereFromEnvironment(),
    ledger: ledgerWithEvents(),
    config: loadOrdersConfig(process.env),
    invalidation: sharedReadStoreFromEnvironment(),
  });
}

/** The charge route's work, with the settle delay a repeat of an unknown charge settles by. */
export function chargesFromEnvironment(): Charges {
  return new Charges({
    chargeEngine: chargeEngineFromEnvironment(),
    settleDelayMs: settleDelayMs(process.env),
  });
}

/** retrievePayments' reads, and what a refund drops, over the container's PayHere client. */
export function orderPaymentsFromEnvironment(payhere: PayHere): OrderPayments {
  const store = sharedReadStoreFromEnvironment();
  const ledger = ledgerWithEvents();
  return new OrderPayments({
    reads: new SharedReads({ payhere, store, refundStatuses: new RefundStatuses({ ledger }) }),
    ledger,
    invalidation: store,
  });
}

export function checkoutsFromEnvironment(): Checkouts {
  const config = loadConfig(process.env);
  requireMerchantCredentials(config);
  const credentials = credentialsFor(config);
  const ledger = ledgerWithEvents();
  const orders = loadOrdersConfig(process.env);
  const reports = new OrderReports({
    ledger,
    confirmations: new Confirmations({
      payhere: createPayHere(config, {
        credentials,
        sharedState: sharedStateFromEnvironment(process.env),
        shares: callerSharesFromEnvironment(process.env),
      }),
    }),
    keepDays: orders.notificationKeepDays,
  });
  return new Checkouts({
    ledger,
    credentials,
    config: orders,
    sandbox: new URL(config.gatewayBaseUrl).hostname !== LIVE_HOST,
    refresh: (order, deadline) => reports.refresh(order, deadline),
  });
}

/** PayHere's live Merchant API host (docs/payhere.md "Hosts"); every other gateway is a sandbox. */
const LIVE_HOST = 'www.payhere.lk';

/** What a money route settles its unknown requests with, over the container's PayHere client. */
export function settleDepsFromEnvironment(payhere: PayHere): SettleDeps {
  const ledger = ledgerWithEvents();
  return {
    payhere,
    ledger,
    holds: new Holds(ledger),
    settleDelayMs: settleDelayMs(process.env),
    invalidation: sharedReadStoreFromEnvironment(),
  };
}

/** Captures of holds over the container's PayHere client. */
export function capturesFromEnvironment(payhere: PayHere): Captures {
  return new Captures({
    payhere,
    ownership: ownershipFromEnvironment(),
    holds: holdsFromEnvironment(),
    reads: sharedReadStoreFromEnvironment(),
    settling: settleDepsFromEnvironment(payhere),
  });
}

/** Refunds and releases over the container's PayHere client. */
export function refundsFromEnvironment(payhere: PayHere): Refunds {
  return new Refunds({
    payhere,
    ownership: ownershipFromEnvironment(),
    holds: holdsFromEnvironment(),
    payments: orderPaymentsFromEnvironment(payhere),
    settling: settleDepsFromEnvironment(payhere),
    records: idempotencyStoreFromEnvironment(),
    balances: refundRecordsFromEnvironment(),
  });
}

/** A payment's refund records and what is left of it, from the ledger. */
export function refundRecordsFromEnvironment(): RefundRecords {
  return new RefundRecords({ ledger: ledgerWithEvents(), ownership: ownershipFromEnvironment() });
}

/** Retries of failed subscriptions over the container's PayHere client. */
export function subscriptionRetriesFromEnvironment(payhere: PayHere): SubscriptionRetries {
  return new SubscriptionRetries({
    payhere,
    ownership: ownershipFromEnvironment(),
    invalidation: sharedReadStoreFromEnvironment(),
    settling: settleDepsFromEnvironment(payhere),
  });
}

/** The order lists, answered from the ledger's indexes. */
export function orderListsFromEnvironment(): OrderLists {
  return new OrderLists(ledgerWithEvents());
}

/**
 * The reconciliation report over the container's PayHere client: RECONCILIATION_CHECKS (5) orders
 * read from PayHere per request at most, and a comparison read again once older than
 * RECONCILIATION_MAX_AGE_SECONDS (a day) when a request has calls to spare.
 */
export function reconciliationReportsFromEnvironment(
  payhere: PayHere,
  env = process.env,
): ReconciliationReports {
  const ledger = reconciliationReadsFromEnvironment(env);
  return new ReconciliationReports({
    ledger,
    refundStatuses: new RefundStatuses({ ledger }),
    snapshots: paymentSnapshotsFromEnvironment(env),
    payhere,
    checks: reconciliationChecks(env),
    maxAgeMs: wholeNumber(env, 'RECONCILIATION_MAX_AGE_SECONDS', 86_400, 1) * 1000,
  });
}

/** RECONCILIATION_CHECKS: at most MAX_CHECKS, so that no request of the report waits on many PayHere calls. */
function reconciliationChecks(env: NodeJS.ProcessEnv): number {
  const checks = wholeNumber(env, 'RECONCILIATION_CHECKS', 5, 0);
  if (checks > MAX_CHECKS)
    throw new ConfigError(`Invalid configuration: RECONCILIATION_CHECKS must be at most ${MAX_CHECKS}.`);
  return checks;
}

/** The subscription lists, a page at a time, over the container's shared reads of PayHere's list. */
export function subscriptionListsFromEnvironment(reads: SharedReads): SubscriptionLists {
  return new SubscriptionLists({
    ownership: ownershipFromEnvironment(),
    pages: new SubscriptionPages({ reads, store: sharedReadStoreFromEnvironment() }),
  });
}
