/**
 * vitest globalSetup: one dynalite on loopback for the whole run, with the idempotency table under
 * the name serverless-offline gives it (`--stage local`), so in-process handlers and the e2e
 * functions share it. Tests never collide in it: every request carries a fresh random key.
 */
import type { TestProject } from 'vitest/node';
import {
  createIdempotencyTable,
  LOCAL_IDEMPOTENCY_TABLE,
  startLocalDynamoDB,
} from '../../scripts/local-dynamodb.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    idempotencyTable: string;
  }
}

export default async function setup(project: TestProject) {
  const dynamodb = await startLocalDynamoDB();
  await createIdempotencyTable(dynamodb.endpoint, LOCAL_IDEMPOTENCY_TABLE);
  project.provide('dynamodbEndpoint', dynamodb.endpoint);
  project.provide('idempotencyTable', LOCAL_IDEMPOTENCY_TABLE);
  return () => dynamodb.close();
}
