import { DynamoDBClient } from '../dynamodb/index.ts';
import { awsRegion, type Env, httpUrl } from './config.ts';

export interface DynamoDbConfig {
  region: string;
  /** A local DynamoDB-compatible server (dynalite); unset in AWS. */
  endpoint?: string;
}

export function loadDynamoDbConfig(env: Env): DynamoDbConfig {
  const endpoint = env.DYNAMODB_ENDPOINT?.trim();
  if (endpoint) httpUrl('DYNAMODB_ENDPOINT', endpoint);
  return { region: awsRegion(env), ...(endpoint ? { endpoint } : {}) };
}

/**
 * The client's limits: a request to DynamoDB answers in milliseconds or not at all, so each try
 * gets half a second to connect (when it needs a new connection) and a second to answer, three
 * tries in all (lib/aws/client.ts holds each try to both, and to their sum end to end).
 */
export const DYNAMODB_ATTEMPTS = 3;
export const DYNAMODB_CONNECT_TIMEOUT_MS = 500;
export const DYNAMODB_REQUEST_TIMEOUT_MS = 1_000;
/** The SDK's standard backoff between the tries: at most 100 ms, then 200 ms. */
const DYNAMODB_BACKOFF_MS = 300;
/** The longest one write can take before it fails for good. */
export const DYNAMODB_WRITE_WORST_MS =
  DYNAMODB_ATTEMPTS * (DYNAMODB_CONNECT_TIMEOUT_MS + DYNAMODB_REQUEST_TIMEOUT_MS) + DYNAMODB_BACKOFF_MS;
/**
 * What a money request must keep for the writes after PayHere answered: the ledger's (sent
 * together), then the idempotency record's. Its answer is then out before the function's timeout,
 * however slow the table.
 */
export const WRITES_AFTER_ANSWER_MS = 2 * DYNAMODB_WRITE_WORST_MS;

const clients = new Map<string, DynamoDBClient>();

/**
 * One DynamoDB client per container for every table (idempotency, ledger, shared state): one
 * keep-alive pool (lib/aws/client.ts's, per origin). Building it opens no connection and reads no credentials
 * (both happen on the first request). Timeouts are explicit: a request's budget is small.
 */
export function dynamoDbClient(config: DynamoDbConfig): DynamoDBClient {
  const id = `${config.region} ${config.endpoint ?? ''}`;
  let client = clients.get(id);
  if (!client) {
    client = new DynamoDBClient({
      region: config.region,
      ...(config.endpoint ? { endpoint: config.endpoint } : {}),
      maxAttempts: DYNAMODB_ATTEMPTS,
      connectTimeoutMs: DYNAMODB_CONNECT_TIMEOUT_MS,
      requestTimeoutMs: DYNAMODB_REQUEST_TIMEOUT_MS,
    });
    clients.set(id, client);
  }
  return client;
}
