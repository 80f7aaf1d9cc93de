/**
 * vitest globalSetup: one dynalite on loopback for the whole run, with the idempotency table and the
 * ledger under the names serverless-offline gives them (`--stage local`), so in-process handlers and
 * the e2e functions share them. Tests never collide in them: every request carries a fresh random
 * key, and every order a test charges or creates has an id of its own (tests/helpers/orders.ts).
 * Tests fault it over HTTP (tests/helpers/dynamodb-faults.ts), each narrowed to what it alone writes.
 */
import type { TestProject } from 'vitest/node';
import {
  createLocalTables,
  LOCAL_TABLES_ENVIRONMENT,
  startLocalDynamoDB,
} from '../../scripts/local-dynamodb.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    idempotencyTable: string;
    ledgerTable: string;
    stateTable: string;
  }
}

export default async function setup(project: TestProject) {
  const dynamodb = await startLocalDynamoDB();
  await createLocalTables(dynamodb.endpoint);
  project.provide('dynamodbEndpoint', dynamodb.endpoint);
  project.provide('idempotencyTable', LOCAL_TABLES_ENVIRONMENT.IDEMPOTENCY_TABLE);
  project.provide('ledgerTable', LOCAL_TABLES_ENVIRONMENT.LEDGER_TABLE);
  project.provide('stateTable', LOCAL_TABLES_ENVIRONMENT.STATE_TABLE);
  return () => dynamodb.close();
}
