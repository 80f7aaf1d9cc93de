import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { DynamoDBClient } from '../../lib/dynamodb/index.ts';
import type { Caller } from '../../lib/http/caller.ts';
import { IdempotencyStore } from '../../lib/idempotency/store.ts';
import type { ChargeRequest } from '../../lib/schemas/charge.ts';
import { SEED } from '../../sandbox/server.ts';
import { LOCAL_AWS_ENVIRONMENT } from '../../scripts/local-dynamodb.ts';
import { lambdaContext } from '../helpers/events.ts';

export const DAY_SECONDS = 86_400;
export const HOUR_MS = 3_600_000;

/** A clock the test moves by hand; starts at the real time so gateway dates still make sense. */
export function manualClock(start = Date.now()) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

/** A DynamoDB client for the run's dynalite (tests/setup/dynamodb.ts). */
export function localClient(options: { endpoint?: string; maxAttempts?: number } = {}): DynamoDBClient {
  return new DynamoDBClient({
    endpoint: options.endpoint ?? inject('dynamodbEndpoint'),
    region: LOCAL_AWS_ENVIRONMENT.AWS_REGION,
    credentials: () => ({
      accessKeyId: LOCAL_AWS_ENVIRONMENT.AWS_ACCESS_KEY_ID,
      secretAccessKey: LOCAL_AWS_ENVIRONMENT.AWS_SECRET_ACCESS_KEY,
    }),
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
  });
}

/** The real store on the run's table, with the clock the test chooses. */
export function testStore(now?: () => number, client = localClient()): IdempotencyStore {
  return new IdempotencyStore({
    client,
    table: inject('idempotencyTable'),
    ttlSeconds: DAY_SECONDS,
    ...(now ? { now } : {}),
  });
}

/** A validated request as lib/http/route.ts's route() hands it on, for calling the wrapper directly. */
export function validRequest<Body, Path = undefined>(
  body: Body,
  options: { path?: Path; sub?: string; remainingMs?: number } = {},
) {
  const caller: Caller = {
    sub: options.sub ?? 'test-caller',
    scopes: ['payments:charge', 'merchant'],
    role: 'merchant',
  };
  const context = lambdaContext(options.remainingMs ?? 25_000);
  return {
    body,
    path: options.path as Path,
    caller,
    context,
    deadline: Date.now() + Math.min(20_000, (options.remainingMs ?? 25_000) - 1_000),
  };
}

export function newOrderId(): string {
  return `IDEM-${randomUUID().slice(0, 20)}`;
}

/** A valid charge on a fresh order; `overrides` may make it any other charge. */
export function chargeBody(overrides: Record<string, unknown> = {}): ChargeRequest {
  return {
    type: 'PAYMENT',
    order_id: newOrderId(),
    items: 'Idempotency test',
    currency: 'LKR',
    amount: 345.67,
    customer_token: SEED.customerTokens.success,
    ...overrides,
  } as ChargeRequest;
}
