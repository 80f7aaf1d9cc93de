/**
 * vitest setupFiles: runs in each test worker before its test file, so the money handlers (imported
 * lazily by tests/helpers/gateway.ts) find the idempotency store at start-up, as in a deployment.
 */
import { inject } from 'vitest';
import { LOCAL_AWS_ENVIRONMENT } from '../../scripts/local-dynamodb.ts';

Object.assign(process.env, LOCAL_AWS_ENVIRONMENT, {
  DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
  IDEMPOTENCY_TABLE: inject('idempotencyTable'),
});
