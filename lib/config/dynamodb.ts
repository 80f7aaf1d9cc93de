import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type Env, httpUrl } from './config.ts';

export interface DynamoDbConfig {
  region: string;
  /** A local DynamoDB-compatible server (dynalite); unset in AWS. */
  endpoint?: string;
}

export function loadDynamoDbConfig(env: Env): DynamoDbConfig {
  const endpoint = env.DYNAMODB_ENDPOINT?.trim();
  if (endpoint) httpUrl('DYNAMODB_ENDPOINT', endpoint);
  return { region: env.AWS_REGION?.trim() || 'ap-south-1', ...(endpoint ? { endpoint } : {}) };
}

const clients = new Map<string, DynamoDBClient>();

/**
 * One DynamoDB client per container for every table (idempotency, ledger): one connection pool,
 * one credential lookup. Building it opens no connection and resolves no credentials (both happen
 * on the first request). Timeouts are explicit: the SDK's defaults would wait far longer than a
 * request's budget.
 */
export function dynamoDbClient(config: DynamoDbConfig): DynamoDBClient {
  const id = `${config.region} ${config.endpoint ?? ''}`;
  let client = clients.get(id);
  if (!client) {
    client = new DynamoDBClient({
      region: config.region,
      ...(config.endpoint ? { endpoint: config.endpoint } : {}),
      maxAttempts: 3,
      requestHandler: { connectionTimeout: 1_000, requestTimeout: 2_000 },
    });
    clients.set(id, client);
  }
  return client;
}
