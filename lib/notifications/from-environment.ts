import { callerSharesFromEnvironment, sharedStateFromEnvironment } from '../budget/from-environment.ts';
import { loadConfig, requireMerchantCredentials } from '../config/config.ts';
import { credentialsFor } from '../config/secrets.ts';
import { createPayHere } from '../gateway/index.ts';
import { loadOrdersConfig } from '../orders/config.ts';
import { Confirmations } from '../orders/confirmations.ts';
import { ledgerWithEvents } from '../orders/from-environment.ts';
import { sharedReadStoreFromEnvironment } from '../reads/from-environment.ts';
import { NotificationReceiver } from './receiver.ts';

/** The container's receiver, built from the environment at start-up (a bad variable fails here). */
export function notificationReceiverFromEnvironment(): NotificationReceiver {
  const config = loadConfig(process.env);
  requireMerchantCredentials(config);
  const credentials = credentialsFor(config);
  const ledger = ledgerWithEvents();
  // One credentials provider for both: the secret is read once per container.
  const payhere = createPayHere(config, {
    credentials,
    sharedState: sharedStateFromEnvironment(process.env),
    shares: callerSharesFromEnvironment(process.env),
  });
  const orders = loadOrdersConfig(process.env);
  return new NotificationReceiver({
    ledger,
    credentials,
    confirmations: new Confirmations({ payhere }),
    invalidation: sharedReadStoreFromEnvironment(),
    settleDelayMs: orders.settleDelayMs,
    keepDays: orders.notificationKeepDays,
    failedAttempts: orders.failedAttempts,
  });
}
