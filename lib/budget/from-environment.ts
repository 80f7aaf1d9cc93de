import { ConfigError, type Env, required } from '../config/config.ts';
import { dynamoDbClient, loadDynamoDbConfig } from '../config/dynamodb.ts';
import { CallerShares, loadSharesConfig } from './caller-shares.ts';
import { SharedStateTable, type StateTableOptions } from './state-table.ts';

/**
 * How long one request to the shared table may take before the table counts as unreachable and
 * the container falls back to its own share: the budget must never cost a caller seconds.
 * DynamoDB answers in milliseconds; STATE_TABLE_TIMEOUT_MS changes it (a loaded test machine).
 */
export const STATE_TABLE_TIMEOUT_MS = 500;

function timeoutMs(env: Env): number {
  const value = env.STATE_TABLE_TIMEOUT_MS?.trim();
  if (!value) return STATE_TABLE_TIMEOUT_MS;
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new ConfigError(
      'Invalid configuration: STATE_TABLE_TIMEOUT_MS must be a whole number of milliseconds.',
    );
  }
  return Number(value);
}

/** The shared state table (STATE_TABLE) as every module that keeps items in it reaches it. */
export function stateTableFromEnvironment(env: Env = process.env): StateTableOptions {
  return {
    client: dynamoDbClient(loadDynamoDbConfig(env)),
    table: required(env, 'STATE_TABLE'),
    timeoutMs: timeoutMs(env),
  };
}

/** The deployment's shared budget and token (STATE_TABLE); every function that calls PayHere needs it. */
export function sharedStateFromEnvironment(env: Env = process.env): SharedStateTable {
  return new SharedStateTable(stateTableFromEnvironment(env));
}

/** Each caller's share of PayHere's budget, counted in the shared state table (STATE_TABLE). */
export function callerSharesFromEnvironment(env: Env = process.env): CallerShares {
  return new CallerShares({ ...stateTableFromEnvironment(env), config: loadSharesConfig(env) });
}
