import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConfigError, type Env, httpUrl, required } from '../config/config.ts';
import { IdempotencyStore } from './store.ts';

/** SPEC.md: the first complete answer is kept at least 24 hours. */
export const MIN_TTL_SECONDS = 86_400;

export interface IdempotencyConfig {
  table: string;
  ttlSeconds: number;
  region: string;
  /** A local DynamoDB-compatible server (dynalite); unset in AWS. */
  endpoint?: string;
}

/** Read and check the store's configuration; a bad value names its variable, never its value. */
export function loadIdempotencyConfig(env: Env): IdempotencyConfig {
  const table = required(env, 'IDEMPOTENCY_TABLE');
  const ttl = env.IDEMPOTENCY_TTL_SECONDS?.trim();
  const ttlSeconds = ttl ? Number(ttl) : MIN_TTL_SECONDS;
  if ((ttl && !/^\d+$/.test(ttl)) || !Number.isSafeInteger(ttlSeconds) || ttlSeconds < MIN_TTL_SECONDS) {
    throw new ConfigError(
      `Invalid configuration: IDEMPOTENCY_TTL_SECONDS must be a whole number of seconds, at least ${MIN_TTL_SECONDS}.`,
    );
  }
  const endpoint = env.DYNAMODB_ENDPOINT?.trim();
  if (endpoint) httpUrl('DYNAMODB_ENDPOINT', endpoint);
  return {
    table,
    ttlSeconds,
    region: env.AWS_REGION?.trim() || 'ap-south-1',
    ...(endpoint ? { endpoint } : {}),
  };
}

/**
 * The container's idempotency store, built from the environment at start-up (a bad variable fails
 * here). Building the client opens no connection and resolves no credentials (both happen on the
 * first request). Timeouts are explicit: the SDK's defaults would wait far longer than a
 * request's budget.
 */
export function idempotencyStoreFromEnvironment(env: Env = process.env): IdempotencyStore {
  const config = loadIdempotencyConfig(env);
  const client = new DynamoDBClient({
    region: config.region,
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 1_000, requestTimeout: 2_000 },
  });
  return new IdempotencyStore({ client, table: config.table, ttlSeconds: config.ttlSeconds });
}
