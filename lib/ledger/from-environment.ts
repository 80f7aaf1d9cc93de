import { type Env, required } from '../config/config.ts';
import { dynamoDbClient, loadDynamoDbConfig } from '../config/dynamodb.ts';
import { LedgerReconciliationReads } from './reconciliation.ts';
import { LedgerStore, type LedgerStoreOptions } from './store.ts';

/**
 * The container's ledger, built from the environment at start-up (a bad variable fails here);
 * `onEvents` is told the item of each write that recorded events (the relay publishes them).
 */
export function ledgerFromEnvironment(
  env: Env = process.env,
  onEvents?: LedgerStoreOptions['onEvents'],
): LedgerStore {
  const table = required(env, 'LEDGER_TABLE');
  return new LedgerStore({
    client: dynamoDbClient(loadDynamoDbConfig(env)),
    table,
    ...(onEvents ? { onEvents } : {}),
  });
}

/** What the reconciliation report reads of the ledger. */
export function reconciliationReadsFromEnvironment(env: Env = process.env): LedgerReconciliationReads {
  const table = required(env, 'LEDGER_TABLE');
  return new LedgerReconciliationReads({ client: dynamoDbClient(loadDynamoDbConfig(env)), table });
}
