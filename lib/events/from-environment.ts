import { type Env, required } from '../config/config.ts';
import { dynamoDbClient, loadDynamoDbConfig } from '../config/dynamodb.ts';
import { EventRelay } from './relay.ts';
import { EventStore } from './store.ts';

/** The events table (EVENTS_TABLE), built from the environment at start-up (a bad variable fails here). */
export function eventStoreFromEnvironment(env: Env = process.env): EventStore {
  return new EventStore({
    client: dynamoDbClient(loadDynamoDbConfig(env)),
    table: required(env, 'EVENTS_TABLE'),
  });
}

/** The relay from the ledger's outboxes (LEDGER_TABLE) to the events table, for `endpoints`' deliveries. */
export function eventRelayFromEnvironment(
  endpoints: () => readonly string[],
  env: Env = process.env,
): EventRelay {
  return new EventRelay({
    client: dynamoDbClient(loadDynamoDbConfig(env)),
    ledgerTable: required(env, 'LEDGER_TABLE'),
    events: eventStoreFromEnvironment(env),
    endpoints,
  });
}
