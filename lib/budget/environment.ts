import { type Env, required } from '../config/config.ts';
import { dynamoDbClient, loadDynamoDbConfig } from '../config/dynamodb.ts';
import { SharedStateTable } from './state-table.ts';

/**
 * How long one request to the shared table may take before the table counts as unreachable and
 * the container falls back to its own share: the budget must never cost a caller seconds.
 */
export const STATE_TABLE_TIMEOUT_MS = 500;

/** The deployment's shared budget and token (STATE_TABLE); every function that calls PayHere needs it. */
export function sharedStateFromEnvironment(env: Env = process.env): SharedStateTable {
  const table = required(env, 'STATE_TABLE');
  return new SharedStateTable({
    client: dynamoDbClient(loadDynamoDbConfig(env)),
    table,
    timeoutMs: STATE_TABLE_TIMEOUT_MS,
  });
}
