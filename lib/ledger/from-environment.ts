import { type Env, required } from '../config/config.ts';
import { dynamoDbClient, loadDynamoDbConfig } from '../config/dynamodb.ts';
import { LedgerStore } from './store.ts';

/** The container's ledger, built from the environment at start-up (a bad variable fails here). */
export function ledgerFromEnvironment(env: Env = process.env): LedgerStore {
  const table = required(env, 'LEDGER_TABLE');
  return new LedgerStore({ client: dynamoDbClient(loadDynamoDbConfig(env)), table });
}
