import { callerSharesFromEnvironment, sharedStateFromEnvironment } from '../budget/environment.ts';
import { loadConfig, requireMerchantCredentials } from '../config/config.ts';
import { credentialsFor } from '../config/secrets.ts';
import { createPayHere, type PayHere, payHereFromEnvironment } from '../gateway/index.ts';
import { ledgerFromEnvironment } from '../ledger/environment.ts';
import { Confirmations } from '../notifications/confirm.ts';
import { sharedReadStoreFromEnvironment } from '../reads/environment.ts';
import { SharedReads } from '../reads/shared-reads.ts';
import { Ownership } from './access.ts';
import { Charging } from './charge.ts';
import { Checkouts } from './checkout.ts';
import { loadOrdersConfig } from './config.ts';
import { Holds } from './holds.ts';
import { OrderPayments } from './payments.ts';
import { OrderReports } from './reports.ts';
import { SubscriptionCancels } from './subscriptions.ts';

/** Cancelling subscriptions over the container's PayHere client: what cannot change anything costs PayHere nothing. */
export function subscriptionCancelsFromEnvironment(payhere: PayHere): SubscriptionCancels {
  const store = sharedReadStoreFromEnvironment();
  return new SubscriptionCancels({
    payhere,
    ledger: ledgerFromEnvironment(),
    reads: new SharedReads({ payhere, store }),
    invalidation: store,
  });
}

/** What proves a hold's token (a capture or release PayHere accepted). */
export function holdsFromEnvironment(): Holds {
  return new Holds(ledgerFromEnvironment());
}

/** The container's ownership checks, built from the environment at start-up (a bad variable fails here). */
export function ownershipFromEnvironment(): Ownership {
  return new Ownership(ledgerFromEnvironment());
}

export function chargingFromEnvironment(): Charging {
  return new Charging({
    payhere: payHereFromEnvironment(),
    ledger: ledgerFromEnvironment(),
    config: loadOrdersConfig(process.env),
    invalidation: sharedReadStoreFromEnvironment(),
  });
}

/** retrievePayments' reads, and what a refund drops, over the container's PayHere client. */
export function orderPaymentsFromEnvironment(payhere: PayHere): OrderPayments {
  const store = sharedReadStoreFromEnvironment();
  return new OrderPayments({
    reads: new SharedReads({ payhere, store }),
    ledger: ledgerFromEnvironment(),
    invalidation: store,
  });
}

export function checkoutsFromEnvironment(): Checkouts {
  const config = loadConfig(process.env);
  requireMerchantCredentials(config);
  const credentials = credentialsFor(config);
  const ledger = ledgerFromEnvironment();
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

/** PayHere's live Merchant API host (GATEWAY.md "Hosts"); every other gateway is a sandbox. */
const LIVE_HOST = 'www.payhere.lk';
