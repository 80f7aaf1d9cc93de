/**
 * vitest globalSetup: one dynalite on loopback for the whole run, with the idempotency table and the
 * ledger under the names serverless-offline gives them (`--stage local`), so in-process handlers and
 * the e2e functions share them. Tests never collide in them: every request carries a fresh random
 * key, and every order a test charges or creates has an id of its own (tests/helpers/orders.ts).
 * Tests fault it over HTTP (tests/helpers/dynamodb-faults.ts), each narrowed to what it alone writes.
 *
 * It runs in a process of its own (tests/setup/dynamodb-process.ts), not in vitest's: there it
 * shared one event loop with vitest's transforms and reports, and with several test files at once
 * its answers came later than the service's 1 s DynamoDB timeout.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { TestProject } from 'vitest/node';
import { LOCAL_TABLES_ENVIRONMENT } from '../../scripts/local-dynamodb.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    idempotencyTable: string;
    ledgerTable: string;
    stateTable: string;
  }
}

export default async function setup(project: TestProject) {
  const child = spawn(process.execPath, [path.join(import.meta.dirname, 'dynamodb-process.ts')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  const ready = once(createInterface({ input: child.stdout }), 'line') as Promise<[string]>;
  const early = exited.then(([code]) => `the local DynamoDB exited (${code}) before it was ready`);
  const line = await Promise.race([ready.then(([first]) => first), early]);
  if (!line.startsWith('{')) throw new Error(line);
  const { endpoint } = JSON.parse(line) as { endpoint: string };
  project.provide('dynamodbEndpoint', endpoint);
  project.provide('idempotencyTable', LOCAL_TABLES_ENVIRONMENT.IDEMPOTENCY_TABLE);
  project.provide('ledgerTable', LOCAL_TABLES_ENVIRONMENT.LEDGER_TABLE);
  project.provide('stateTable', LOCAL_TABLES_ENVIRONMENT.STATE_TABLE);
  return async () => {
    // Closing its stdin stops it (tests/setup/dynamodb-process.ts).
    child.stdin.end();
    await exited;
  };
}
