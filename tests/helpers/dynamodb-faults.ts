import { inject } from 'vitest';
import type { DynamoDbFault, DynamoDbFaultMatch } from '../../scripts/dynamodb-faults.ts';

/**
 * Faults of a local DynamoDB injected over HTTP (scripts/dynamodb-faults.ts), the test run's by
 * default: the one a service in serverless-offline's workers talks to, which shares no memory with
 * the test. That server is every test file's at once, so narrow a fault to what the test alone
 * sends: a table of its own, or a key prefix only its orders have.
 */
export interface DynamoDbInjection extends DynamoDbFaultMatch {
  fault: DynamoDbFault;
  /** 1 by default. */
  times?: number;
}

async function control(
  endpoint: string,
  method: string,
  body?: unknown,
  query = '',
): Promise<number | 'Infinity'> {
  const answer = await fetch(`${endpoint}/__dynamodb/faults${query}`, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  const text = await answer.text();
  if (!answer.ok) throw new Error(`${method} /__dynamodb/faults: ${answer.status} ${text}`);
  return (JSON.parse(text) as { pending: number | 'Infinity' }).pending;
}

/** Injects `injection`; the fault uses then pending. */
export function injectDynamoDbFault(
  injection: DynamoDbInjection,
  endpoint: string = inject('dynamodbEndpoint'),
): Promise<number | 'Infinity'> {
  const { times, ...rest } = injection;
  return control(endpoint, 'POST', {
    ...rest,
    ...(times === undefined ? {} : { times: Number.isFinite(times) ? times : 'Infinity' }),
  });
}

/** How many fault uses are left ('Infinity' if one is unlimited); with `table`, of that table's faults only. */
export function pendingDynamoDbFaults(
  endpoint: string = inject('dynamodbEndpoint'),
  table?: string,
): Promise<number | 'Infinity'> {
  return control(
    endpoint,
    'GET',
    undefined,
    table === undefined ? '' : `?table=${encodeURIComponent(table)}`,
  );
}

/**
 * Clears the faults injected for `table` (the test file's own), leaving those other files, running
 * at the same time on the same server, injected for theirs; every fault without it: for a server of
 * the test's own, or at the end of the run.
 */
export async function clearDynamoDbFaults(
  endpoint: string = inject('dynamodbEndpoint'),
  table?: string,
): Promise<void> {
  await control(
    endpoint,
    'DELETE',
    undefined,
    table === undefined ? '' : `?table=${encodeURIComponent(table)}`,
  );
}
