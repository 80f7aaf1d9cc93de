import { ConfigError, type Env, required, settleDelayMs, wholeNumber } from '../config/config.ts';
import { type DynamoDbConfig, dynamoDbClient, loadDynamoDbConfig } from '../config/dynamodb.ts';
import { IdempotencyStore, LOOK_AGAIN_MS } from './store.ts';

/**
 * docs/contract.md "Idempotency": a day is not enough; a mobile client's offline queue replays later,
 * and a replayed charge past the window would charge again: money keys are kept at least 7 days.
 */
export const MIN_TTL_SECONDS = 7 * 86_400;

export interface IdempotencyConfig extends DynamoDbConfig {
  table: string;
  ttlSeconds: number;
  /** When an unknown money request is due for the settle job: this long after its window closed. */
  settleDelayMs: number;
  /** A repeat of an unknown outcome looks at PayHere at most this often (UNKNOWN_LOOK_AGAIN_SECONDS, 30). */
  lookAgainMs: number;
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
  return {
    table,
    ttlSeconds,
    settleDelayMs: settleDelayMs(env),
    lookAgainMs: wholeNumber(env, 'UNKNOWN_LOOK_AGAIN_SECONDS', LOOK_AGAIN_MS / 1000, 0) * 1000,
    ...loadDynamoDbConfig(env),
  };
}

/** The container's idempotency store, built from the environment at start-up (a bad variable fails here). */
export function idempotencyStoreFromEnvironment(env: Env = process.env): IdempotencyStore {
  const config = loadIdempotencyConfig(env);
  return new IdempotencyStore({
    client: dynamoDbClient(config),
    table: config.table,
    ttlSeconds: config.ttlSeconds,
    settleDelayMs: config.settleDelayMs,
    lookAgainMs: config.lookAgainMs,
  });
}
