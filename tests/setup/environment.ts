/**
 * vitest setupFiles: runs in each test worker before its test file, so the money handlers (imported
 * lazily by tests/helpers/gateway.ts) find the idempotency store and the ledger at start-up, as in a
 * deployment. Each test file gets a ledger table of its own: the ledger remembers orders and
 * PayHere's ids for good, and the sandboxes of different files hand out the same ids.
 * Likewise the shared state (PayHere's budget and token).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { inject } from 'vitest';
import { createTable, LOCAL_AWS_ENVIRONMENT, LOCAL_EVENTS_TABLE } from '../../scripts/local-dynamodb.ts';
import { GENEROUS_SHARES, LOOK_AGAIN_AT_ONCE } from '../helpers/test-environment.ts';

const ledgerTable = `${inject('ledgerTable')}-${randomUUID()}`;
// The shared budget and token too: each file's sandbox issues tokens of its own.
const stateTable = `${inject('stateTable')}-${randomUUID()}`;
// And the events: each file's ledger writes events of its own.
const eventsTable = `${LOCAL_EVENTS_TABLE}-${randomUUID()}`;
await Promise.all([
  createTable(inject('dynamodbEndpoint'), ledgerTable, {
    settleIndex: true,
    chargesIndex: true,
    orderLists: true,
    outboxIndex: true,
  }),
  createTable(inject('dynamodbEndpoint'), stateTable),
  createTable(inject('dynamodbEndpoint'), eventsTable, { events: true }),
]);

Object.assign(process.env, LOCAL_AWS_ENVIRONMENT, GENEROUS_SHARES, LOOK_AGAIN_AT_ONCE, {
  // The Node processes tests start (osls for invoke local and serverless-offline, npm start) keep
  // the code they compiled, so the next one of the run loads osls, its plugins and esbuild's
  // wrapper without compiling them again.
  NODE_COMPILE_CACHE: path.resolve(import.meta.dirname, '../../node_modules/.cache/node-compile-cache'),
  DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
  IDEMPOTENCY_TABLE: inject('idempotencyTable'),
  LEDGER_TABLE: ledgerTable,
  STATE_TABLE: stateTable,
  EVENTS_TABLE: eventsTable,
});
