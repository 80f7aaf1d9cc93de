import { randomUUID } from 'node:crypto';
import { SHARED_READS } from '../lib/reads/store.ts';
import { SANDBOX_CREDENTIALS, startSandbox } from '../sandbox/server.ts';
import { createTable, LOCAL_AWS_ENVIRONMENT, startLocalDynamoDB } from '../scripts/local-dynamodb.ts';
import { ROUTE_SCOPES, TEST_AUTH_ENV, tokenFor } from '../tests/helpers/auth.ts';
import { apiEvent } from '../tests/helpers/events.ts';
import { type GatewayRouteName, IDEMPOTENT_ROUTES, ROUTES } from '../tests/helpers/routes.ts';
import { gatewaySecret, startFakeSecretsManager } from '../tests/helpers/secrets-manager.ts';
import { validRequest } from '../tests/resilience/fixtures.ts';

const TABLE = 'payhere-payments-api-bench-idempotency';
const LEDGER_TABLE = 'payhere-payments-api-bench-ledger';
const STATE_TABLE = 'payhere-payments-api-bench-state';
const EVENTS_TABLE = 'payhere-payments-api-bench-events';
/** The floor's own budget item, so that its slots never stand in the handler's way. */
export const FLOOR_STATE_TABLE = 'payhere-payments-api-bench-floor-state';
const SECRET_ID = 'payhere-payments-api/bench/gateway';

/** The upstream call a route makes: what the bare-undici floor sends to the same sandbox. */
export interface UpstreamCall {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  /**
   * A read's answer shared in the state table (lib/reads/): the items the handler looks up, at
   * once. A warm read finds them fresh, so the floor's upstream work is these lookups, not PayHere.
   */
  shared?: string[];
}

export interface Prepared {
  event: ReturnType<typeof apiEvent>;
  upstream: UpstreamCall;
}

export interface BenchDistances {
  /** Every PayHere request waits this long before the sandbox answers it, once `distant()` is called. */
  payhereDelayMs?: number;
  /** Every DynamoDB request waits this long before dynalite answers it. */
  dynamodbDelayMs?: number;
}

/**
 * Everything a deployed function talks to, on loopback: the PayHere sandbox (no rate limit),
 * DynamoDB (dynalite), Secrets Manager (holding the gateway credentials) and a token issuer whose
 * keys are given inline, as a deployment may. At no distance unless `distances` says otherwise.
 */
export async function startBenchEnvironment(distances: BenchDistances = {}) {
  const sandbox = await startSandbox({ rateLimit: false });
  const dynamodb = await startLocalDynamoDB({ delayMs: distances.dynamodbDelayMs ?? 0 });
  await createTable(dynamodb.endpoint, TABLE, { settleIndex: true });
  await createTable(dynamodb.endpoint, LEDGER_TABLE, { settleIndex: true });
  await createTable(dynamodb.endpoint, STATE_TABLE);
  await createTable(dynamodb.endpoint, FLOOR_STATE_TABLE);
  await createTable(dynamodb.endpoint, EVENTS_TABLE, { events: true });
  const secrets = await startFakeSecretsManager();
  secrets.secrets.set(SECRET_ID, gatewaySecret(SANDBOX_CREDENTIALS));
  const env: Record<string, string> = {
    ...LOCAL_AWS_ENVIRONMENT,
    ...TEST_AUTH_ENV,
    GATEWAY_BASE_URL: sandbox.url,
    GATEWAY_SECRET_ID: SECRET_ID,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.endpoint,
    IDEMPOTENCY_TABLE: TABLE,
    LEDGER_TABLE,
    STATE_TABLE,
    EVENTS_TABLE,
    DYNAMODB_ENDPOINT: dynamodb.endpoint,
    // The bench measures our code, not PayHere's limit of 20 calls per 10 s: enough slots of the
    // shared budget that no call waits (a slot serves a call every window + 250 ms margin, so the
    // 150 slots reads may take serve some 600 calls a second), in a budget item DynamoDB writes
    // quickly (one attribute a slot: with a million, each write of it took longer than the call).
    GATEWAY_RATE_LIMIT: '200/1',
    // Likewise each caller's share: counted (one write per call, as deployed), never refused.
    CALLER_RATE_LIMIT: '100000/1000',
    CALLER_MONEY_RATE_LIMIT: '100000/1000',
    MERCHANT_RATE_LIMIT: '100000/1000',
    MERCHANT_MONEY_RATE_LIMIT: '100000/1000',
    NOTIFY_RATE_LIMIT: '100000/1000',
    LOG_LEVEL: 'warn',
  };

  /** A fresh, valid request for `route` (a new order, a new hold to capture...) and its upstream call. */
  async function prepare(route: GatewayRouteName): Promise<Prepared> {
    const request = await validRequest(sandbox, route);
    const headers: Record<string, string> = {
      // The merchant: the bench measures the gateway path, not the ownership checks of customers.
      Authorization: `Bearer ${await tokenFor(`${ROUTE_SCOPES[route]} merchant`)}`,
    };
    if (IDEMPOTENT_ROUTES.includes(route)) headers['Idempotency-Key'] = randomUUID();
    const event = apiEvent({
      ...ROUTES[route],
      headers,
      ...(request.id === undefined ? {} : { pathParameters: { id: request.id } }),
      ...(request.body === undefined ? {} : { body: request.body }),
    });
    return { event, upstream: upstreamOf(route, request.id, request.body as Record<string, unknown>) };
  }

  return {
    env,
    sandbox,
    dynamodb,
    secrets,
    prepare,
    /** From now on every PayHere request waits `payhereDelayMs` (set-up done before is not delayed). */
    distant() {
      if (distances.payhereDelayMs) {
        sandbox.faults.inject(
          '*',
          { kind: 'latency', ms: distances.payhereDelayMs },
          Number.POSITIVE_INFINITY,
        );
      }
    },
    async close() {
      await Promise.allSettled([sandbox.close(), dynamodb.close(), secrets.close()]);
    },
  };
}

export type BenchEnvironment = Awaited<ReturnType<typeof startBenchEnvironment>>;

const V1 = '/merchant/v1';

function upstreamOf(
  route: GatewayRouteName,
  id: string | undefined,
  body: Record<string, unknown> | undefined,
): UpstreamCall {
  switch (route) {
    case 'charge':
      return { method: 'POST', path: `${V1}/payment/charge`, body: JSON.stringify(body) };
    case 'capture':
      return { method: 'POST', path: `${V1}/payment/capture`, body: JSON.stringify(body) };
    case 'refund':
      return { method: 'POST', path: `${V1}/payment/refund`, body: JSON.stringify(body) };
    case 'retrievePayments':
      return {
        method: 'GET',
        path: `${V1}/payment/search?order_id=${encodeURIComponent(id!)}`,
        shared: [SHARED_READS.orderPayments(id!).key],
      };
    case 'listSubscriptions':
      return { method: 'GET', path: `${V1}/subscription`, shared: [SHARED_READS.subscriptions.key] };
    case 'getSubscription':
      // Its own item and the shared list, looked up together.
      return {
        method: 'GET',
        path: `${V1}/subscription/${id}`,
        shared: [SHARED_READS.subscription(id!).key, SHARED_READS.subscriptions.key],
      };
    case 'subscriptionPayments':
      return {
        method: 'GET',
        path: `${V1}/subscription/${id}/payments`,
        shared: [SHARED_READS.subscriptionPayments(id!).key],
      };
    case 'retrySubscription':
      return {
        method: 'POST',
        path: `${V1}/subscription/retry`,
        body: JSON.stringify({ subscription_id: Number(id) }),
      };
    case 'cancelSubscription':
      return {
        method: 'POST',
        path: `${V1}/subscription/cancel`,
        body: JSON.stringify({ subscription_id: Number(id) }),
      };
  }
}
