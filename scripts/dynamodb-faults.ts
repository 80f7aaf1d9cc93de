/**
 * Scripted failures of the local DynamoDB, as the PayHere sandbox has them (sandbox/faults.ts): each
 * injected fault replaces (or delays) the normal answer of the next matching requests, so that a
 * test, or someone running `npm start`, sees what the service does when DynamoDB fails it. Matched
 * by operation and, optionally, by table and the prefix of an item's `pk`, so that one test can fault
 * the ledger's order writes without touching what other tests send the same server.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as z from 'zod/mini';
import { check } from '../sandbox/validate.ts';

export type DynamoDbFault =
  /** Applied, then the connection reset without an answer: the write landed, its answer was lost. */
  | { kind: 'applyAndLose' }
  /** 500 InternalFailure; not applied. */
  | { kind: 'status500' }
  /** Applied, then 500 InternalFailure instead of its answer. */
  | { kind: 'applyThen500' }
  /** 400 ProvisionedThroughputExceededException, as DynamoDB throttles; not applied. */
  | { kind: 'throttle' }
  /** Applied at once, answered `ms` later; `beforeApplying`: `ms` later, applied and answered. */
  | { kind: 'slow'; ms: number; beforeApplying?: boolean };

/** DynamoDB's operations by their `X-Amz-Target` name: dynalite's, and the transactions it lacks. */
export const DYNAMODB_OPERATIONS = [
  'BatchGetItem',
  'BatchWriteItem',
  'CreateTable',
  'DeleteItem',
  'DeleteTable',
  'DescribeTable',
  'DescribeTimeToLive',
  'GetItem',
  'ListTables',
  'ListTagsOfResource',
  'PutItem',
  'Query',
  'Scan',
  'TagResource',
  'TransactGetItems',
  'TransactWriteItems',
  'UntagResource',
  'UpdateItem',
  'UpdateTable',
] as const;

export type DynamoDbOperation = (typeof DYNAMODB_OPERATIONS)[number];

/** Which requests a fault is for: all that are given must hold. */
export interface DynamoDbFaultMatch {
  /** `*`: any operation. */
  operation: DynamoDbOperation | '*';
  table?: string;
  /** The start of the `pk` of an item the request names (its Key or Item); a Query or Scan names none. */
  keyPrefix?: string;
}

/** What a request names: its operation, and each table and item key it touches. */
export interface DynamoDbRequest {
  operation: string;
  targets: Array<{ table: string; pk?: string }>;
}

interface Injected {
  match: DynamoDbFaultMatch;
  fault: DynamoDbFault;
  remaining: number;
}

function matches(match: DynamoDbFaultMatch, request: DynamoDbRequest): boolean {
  if (match.operation !== '*' && match.operation !== request.operation) return false;
  if (match.table === undefined && match.keyPrefix === undefined) return true;
  return request.targets.some(
    (target) =>
      (match.table === undefined || target.table === match.table) &&
      (match.keyPrefix === undefined || target.pk?.startsWith(match.keyPrefix) === true),
  );
}

export class DynamoDbFaultController {
  #queue: Injected[] = [];

  /** Adds a fault for the next `times` requests that match (an operation alone, or `*`, for short). */
  inject(match: DynamoDbFaultMatch | DynamoDbFaultMatch['operation'], fault: DynamoDbFault, times = 1): void {
    if (!(times >= 1 && (Number.isInteger(times) || times === Number.POSITIVE_INFINITY))) {
      throw new RangeError(`times must be a positive integer or Infinity, got ${times}`);
    }
    this.#queue.push({
      match: typeof match === 'string' ? { operation: match } : { ...match },
      fault,
      remaining: times,
    });
  }

  /**
   * Removes every fault, or only those injected for `table`: a test file clears its own table's
   * without touching the faults other files, running at the same time, injected for theirs.
   */
  clear(table?: string): void {
    this.#queue = table === undefined ? [] : this.#queue.filter((entry) => entry.match.table !== table);
  }

  /** How many fault uses are left (Infinity if one is unlimited), or only those injected for `table`. */
  pending(table?: string): number {
    return this.#queue
      .filter((entry) => table === undefined || entry.match.table === table)
      .reduce((sum, entry) => sum + entry.remaining, 0);
  }

  /** The fault for this request, consumed in the order injected; undefined when there is none. */
  take(request: DynamoDbRequest): DynamoDbFault | undefined {
    const index = this.#queue.findIndex((entry) => matches(entry.match, request));
    const entry = this.#queue[index];
    if (!entry) return undefined;
    entry.remaining -= 1;
    if (entry.remaining <= 0) this.#queue.splice(index, 1);
    return entry.fault;
  }
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null;

function pkOf(item: unknown): string | undefined {
  const pk = isObject(item) ? item.pk : undefined;
  return isObject(pk) && typeof pk.S === 'string' ? pk.S : undefined;
}

/** The tables and keys an input names, its batches' and transactions' included. */
function targetsOf(input: unknown): DynamoDbRequest['targets'] {
  if (!isObject(input)) return [];
  const targets: DynamoDbRequest['targets'] = [];
  if (typeof input.TableName === 'string') {
    targets.push({ table: input.TableName, pk: pkOf(input.Key ?? input.Item) });
  }
  // BatchGetItem: { [table]: { Keys } }; BatchWriteItem: { [table]: [{ PutRequest: { Item } } | { DeleteRequest: { Key } }] }.
  if (isObject(input.RequestItems)) {
    for (const [table, requests] of Object.entries(input.RequestItems)) {
      const items = Array.isArray(requests)
        ? requests.map((entry) =>
            isObject(entry)
              ? ((entry.PutRequest as Json)?.Item ?? (entry.DeleteRequest as Json)?.Key)
              : undefined,
          )
        : isObject(requests) && Array.isArray(requests.Keys)
          ? requests.Keys
          : [];
      for (const item of items) targets.push({ table, pk: pkOf(item) });
    }
  }
  // TransactWriteItems, TransactGetItems: [{ Put | Update | Delete | ConditionCheck | Get: { TableName, Key | Item } }].
  if (Array.isArray(input.TransactItems)) {
    for (const entry of input.TransactItems) {
      if (isObject(entry)) for (const action of Object.values(entry)) targets.push(...targetsOf(action));
    }
  }
  return targets;
}

/** A request as faults match it, from its `X-Amz-Target` and its body (undefined when not JSON). */
export function requestOf(target: string, input: unknown): DynamoDbRequest {
  return { operation: target.slice(target.indexOf('.') + 1), targets: targetsOf(input) };
}

const faultSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('applyAndLose') }),
  z.strictObject({ kind: z.literal('status500') }),
  z.strictObject({ kind: z.literal('applyThen500') }),
  z.strictObject({ kind: z.literal('throttle') }),
  z.strictObject({
    kind: z.literal('slow'),
    ms: z.number().check(z.nonnegative()),
    beforeApplying: z.optional(z.boolean()),
  }),
]);

// JSON has no Infinity, so the control route also takes the string "Infinity" (as the sandbox's does).
const injectionSchema = z.strictObject({
  operation: z.enum([...DYNAMODB_OPERATIONS, '*']),
  table: z.optional(z.string().check(z.minLength(1))),
  keyPrefix: z.optional(z.string().check(z.minLength(1))),
  fault: faultSchema,
  times: z.optional(z.union([z.int().check(z.positive()), z.literal('Infinity')])),
});

export interface DynamoDbInjection {
  match: DynamoDbFaultMatch;
  fault: DynamoDbFault;
  times: number;
}

/** Reads a `POST /__dynamodb/faults` body: the injection, or the field that makes it invalid. */
export function parseInjection(
  body: unknown,
): { ok: true; value: DynamoDbInjection } | { ok: false; field: string } {
  const checked = check(injectionSchema, body);
  if (!checked.ok) return checked;
  const { fault, times, ...match } = checked.value;
  return {
    ok: true,
    value: { match, fault, times: times === 'Infinity' ? Number.POSITIVE_INFINITY : (times ?? 1) },
  };
}

/** The controls' paths: dynalite's clients only ever POST to `/`, so none of these is theirs. */
const CONTROL_PREFIX = '/__dynamodb/';
export const FAULTS_PATH = `${CONTROL_PREFIX}faults`;

export function isControlRequest(req: IncomingMessage): boolean {
  return (req.url ?? '/').startsWith(CONTROL_PREFIX);
}

/** The server listens on loopback; this holds should it ever listen elsewhere. */
function fromLoopback(req: IncomingMessage): boolean {
  const address = req.socket.remoteAddress ?? '';
  return address.startsWith('127.') || address === '::1' || address.startsWith('::ffff:127.');
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

// Infinity does not survive JSON.stringify; say it in words.
function pendingOf(faults: DynamoDbFaultController, table?: string): number | string {
  const pending = faults.pending(table);
  return Number.isFinite(pending) ? pending : 'Infinity';
}

/** The body as JSON; undefined when it is not. */
async function jsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * `POST /__dynamodb/faults` injects (`{ operation, table?, keyPrefix?, fault, times? }`), `GET`
 * answers `{ pending }`, `DELETE` clears (`?table=`: that table's faults only, for both): for a server whose requests come from another process
 * (serverless-offline's workers, `npm start`), which cannot reach `faults` itself.
 */
export async function handleFaultControl(
  req: IncomingMessage,
  res: ServerResponse,
  faults: DynamoDbFaultController,
): Promise<void> {
  if (!fromLoopback(req)) return reply(res, 403, { message: 'Fault controls answer loopback only' });
  const { pathname, searchParams } = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (pathname !== FAULTS_PATH) return reply(res, 404, { message: `No control at ${pathname}` });
  switch (req.method) {
    case 'POST': {
      const body = await jsonBody(req);
      if (!isObject(body))
        return reply(res, 400, { message: 'Invalid fault injection: a JSON object expected' });
      const injection = parseInjection(body);
      if (!injection.ok) return reply(res, 400, { message: `Invalid fault injection: ${injection.field}` });
      const { match, fault, times } = injection.value;
      faults.inject(match, fault, times);
      return reply(res, 200, { pending: pendingOf(faults) });
    }
    case 'GET':
      return reply(res, 200, { pending: pendingOf(faults, searchParams.get('table') ?? undefined) });
    case 'DELETE':
      faults.clear(searchParams.get('table') ?? undefined);
      return reply(res, 200, { pending: pendingOf(faults) });
    default:
      res.setHeader('allow', 'GET, POST, DELETE');
      return reply(res, 405, { message: `${req.method} is not a fault control` });
  }
}
