/**
 * A DynamoDB-compatible server (dynalite, in memory) on loopback for `npm start` and the tests,
 * with the service's tables created. No AWS account, no Docker, no mock.
 */
import {
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { LISTED_ATTRIBUTES, ORDER_LIST_HASH_KEYS } from '../lib/ledger/order-lists.ts';
import {
  type DynamoDbFault,
  DynamoDbFaultController,
  handleFaultControl,
  isControlRequest,
  requestOf,
} from './dynamodb-faults.ts';

/**
 * The table name serverless.yml gives the functions for `--stage local`
 * (`${self:service}-${sls:stage}-idempotency`); tests/e2e checks that the two agree.
 */
export const LOCAL_IDEMPOTENCY_TABLE = 'payhere-payments-api-local-idempotency';
/** The ledger's table for `--stage local` (`${self:service}-${sls:stage}-ledger`). */
export const LOCAL_LEDGER_TABLE = 'payhere-payments-api-local-ledger';

/** The shared budget's and token's table for `--stage local` (`${self:service}-${sls:stage}-state`). */
export const LOCAL_STATE_TABLE = 'payhere-payments-api-local-state';

/** The events and their webhook deliveries for `--stage local` (`${self:service}-${sls:stage}-events`). */
export const LOCAL_EVENTS_TABLE = 'payhere-payments-api-local-events';

/** What the functions read to find the local tables (serverless.yml gives the same names for `--stage local`). */
export const LOCAL_TABLES_ENVIRONMENT = {
  IDEMPOTENCY_TABLE: LOCAL_IDEMPOTENCY_TABLE,
  LEDGER_TABLE: LOCAL_LEDGER_TABLE,
  STATE_TABLE: LOCAL_STATE_TABLE,
  EVENTS_TABLE: LOCAL_EVENTS_TABLE,
} as const;

/**
 * Credentials and region for talking to dynalite, which checks neither. Fake on purpose: they keep
 * the SDK from looking for real credentials (files, the instance metadata service) on this machine.
 */
export const LOCAL_AWS_ENVIRONMENT = {
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_REGION: 'ap-south-1',
} as const;

export interface LocalDynamoDB {
  endpoint: string;
  /** Faults for the next matching requests (./dynamodb-faults.ts); over HTTP at `${endpoint}/__dynamodb/faults`. */
  faults: DynamoDbFaultController;
  close(): Promise<void>;
}

export interface LocalDynamoDBOptions {
  port?: number;
  /**
   * Every request is answered no sooner than this long after it arrived: a DynamoDB this far away
   * (the bench compares the service with others at a fixed distance). dynalite works while the
   * answer waits: it serves one request at a time where DynamoDB serves many, so requests sent
   * together would otherwise wait for each other's work on top of the distance. None by default.
   */
  delayMs?: number;
}

export async function startLocalDynamoDB(options: LocalDynamoDBOptions = {}): Promise<LocalDynamoDB> {
  // dynalite is loaded here, not with the module: it costs each test process that imports this
  // module for its names and createTable a few hundred ms of CPU.
  const { default: dynalite } = await import('dynalite');
  // Tables are ACTIVE at once: nothing local should wait for a simulated creation.
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const faults = new DynamoDbFaultController();
  asDynamoDbAnswers(server, options.delayMs ?? 0, faults);
  // Node's server closes a kept-alive connection after 5 s idle, and a request a client writes on
  // it as the close crosses it is reset (ECONNRESET): a race no test means to run (the faults do
  // that on purpose), so idle connections are kept for 2 minutes.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    faults,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections?.();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/**
 * A table as serverless.yml declares the service's tables (key `pk`). dynalite has no TTL deletion;
 * the stores treat expired items as absent anyway, as they must with DynamoDB's lazy deletion
 * (the state table's items only carry `expiresAt` so that an idle table empties itself).
 */
export async function createTable(
  endpoint: string,
  table: string,
  options: {
    settleIndex?: boolean;
    chargesIndex?: boolean;
    orderLists?: boolean;
    /** The ledger's items with events not yet relayed (lib/events/relay.ts). */
    outboxIndex?: boolean;
    /** The events table's: the feed of events in the order they were published, and the deliveries due. */
    events?: boolean;
  } = {},
): Promise<void> {
  // The sparse queues, keyed by a queue (S) and a due time (N).
  const indexes = [
    ...(options.settleIndex ? [['settle', 'settleQueue', 'settleAt'] as const] : []),
    ...(options.chargesIndex ? [['charges', 'chargeQueue', 'chargeDueAt'] as const] : []),
    ...(options.outboxIndex ? [['outbox', 'outboxQueue', 'outboxAt'] as const] : []),
    ...(options.events ? [['due', 'dueQueue', 'dueAt'] as const] : []),
  ];
  // The ledger's order lists (lib/ledger/order-lists.ts): a partition (S) each, sorted by position (S).
  const lists: Record<string, unknown>[] = options.orderLists
    ? (Object.entries(ORDER_LIST_HASH_KEYS) as [string, string][]).map(([name, hash]) => ({
        IndexName: name,
        KeySchema: [
          { AttributeName: hash, KeyType: 'HASH' },
          { AttributeName: 'listedAt', KeyType: 'RANGE' },
        ],
        Projection: {
          ProjectionType: 'INCLUDE',
          NonKeyAttributes: LISTED_ATTRIBUTES.filter((attribute) => attribute !== hash),
        },
      }))
    : [];
  // The events' feed (lib/events/store.ts): one partition, in the order the events were published;
  // and each object's events, in the same order.
  if (options.events)
    for (const [name, hash] of [
      ['feed', 'feed'],
      ['object', 'objectId'],
    ])
      lists.push({
        IndexName: name,
        KeySchema: [
          { AttributeName: hash, KeyType: 'HASH' },
          { AttributeName: 'feedKey', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      });
  const listKeys = [
    ...(options.orderLists ? ['listed', 'owner', 'state', 'listedAt'] : []),
    ...(options.events ? ['feed', 'feedKey', 'objectId'] : []),
  ];
  await localRequest(endpoint, 'CreateTable', {
    TableName: table,
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      ...indexes.flatMap(([, queue, due]) => [
        { AttributeName: queue, AttributeType: 'S' },
        { AttributeName: due, AttributeType: 'N' },
      ]),
      ...listKeys.map((name) => ({ AttributeName: name, AttributeType: 'S' })),
    ],
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
    // The settle job's indexes and the order lists, as serverless.yml declares them.
    ...(indexes.length + lists.length > 0
      ? {
          GlobalSecondaryIndexes: [
            ...indexes.map(([name, queue, due]) => ({
              IndexName: name,
              KeySchema: [
                { AttributeName: queue, KeyType: 'HASH' },
                { AttributeName: due, KeyType: 'RANGE' },
              ],
              Projection: { ProjectionType: 'KEYS_ONLY' },
            })),
            ...lists,
          ],
        }
      : {}),
  });
  // dynalite answers CreateTable with CREATING and turns the table ACTIVE on its next tick; a
  // request in between gets ResourceNotFoundException, so a fast first write could miss it.
  for (let waited = 0; ; waited += 5) {
    const { Table } = (await localRequest(endpoint, 'DescribeTable', { TableName: table })) as {
      Table?: { TableStatus?: string };
    };
    if (Table?.TableStatus === 'ACTIVE') break;
    if (waited >= 5_000) throw new Error(`table ${table} is still ${Table?.TableStatus} after 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * One request to the local DynamoDB's JSON API, with an Authorization header of the right form
 * and no real signature: dynalite checks the form only. Not the AWS SDK, whose load cost each
 * test process a few hundred ms of CPU for two tables. A refusal throws an error named as
 * DynamoDB names it (`ResourceInUseException`, ...).
 */
function localRequest(endpoint: string, operation: string, input: unknown): Promise<unknown> {
  const body = JSON.stringify(input);
  const { AWS_ACCESS_KEY_ID: key, AWS_REGION: region } = LOCAL_AWS_ENVIRONMENT;
  return new Promise((resolve, reject) => {
    const sent = request(
      endpoint,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'content-length': Buffer.byteLength(body),
          'x-amz-target': `DynamoDB_20120810.${operation}`,
          'x-amz-date': '20200101T000000Z',
          authorization: `AWS4-HMAC-SHA256 Credential=${key}/20200101/${region}/dynamodb/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=${'0'.repeat(64)}`,
        },
      },
      (response) => {
        const parts: Buffer[] = [];
        response.on('data', (part: Buffer) => parts.push(part));
        response.on('end', () => {
          const answer = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}');
          if (response.statusCode === 200) return resolve(answer);
          const error = new Error(`${operation}: ${answer.message || answer.Message || response.statusCode}`);
          error.name = String(answer.__type ?? 'DynamoDBError')
            .split('#')
            .pop()!;
          reject(error);
        });
      },
    );
    sent.on('error', reject);
    sent.end(body);
  });
}

/** Every table the functions use, under the names `--stage local` gives them. */
export async function createLocalTables(endpoint: string): Promise<void> {
  await Promise.all([
    createTable(endpoint, LOCAL_IDEMPOTENCY_TABLE, { settleIndex: true }),
    createTable(endpoint, LOCAL_LEDGER_TABLE, {
      settleIndex: true,
      chargesIndex: true,
      orderLists: true,
      outboxIndex: true,
    }),
    createTable(endpoint, LOCAL_STATE_TABLE),
    createTable(endpoint, LOCAL_EVENTS_TABLE, { events: true }),
  ]);
}

/** Marks the few requests this module sends dynalite itself: they are neither delayed again nor faulted. */
const OWN_REQUEST = 'x-local-dynamodb-own';

/**
 * What dynalite lacks of DynamoDB's answers, added around its request handler: a write that asked
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` gets the item as it is in its
 * ConditionalCheckFailedException (`Item`), as DynamoDB sends it (dynalite's issue #182); read
 * just after the failure, so another write may land in between, which DynamoDB's own answer
 * excludes: callers may use it only as a view to write against, conditionally. When `delayMs` is
 * set, no answer leaves sooner than that after its request arrived. And DynamoDB's failures, as
 * `faults` scripts them (./dynamodb-faults.ts), with their controls under `/__dynamodb/`.
 */
function asDynamoDbAnswers(server: Server, delayMs: number, faults: DynamoDbFaultController): void {
  const dynalite = server.listeners('request') as Array<(request: unknown, response: unknown) => void>;
  server.removeAllListeners('request');
  const keySchemas = new Map<string, Promise<string[]>>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (isControlRequest(req)) {
      handleFaultControl(req, res, faults).catch(() => res.destroy());
      return;
    }
    const own = req.headers[OWN_REQUEST] !== undefined;
    const due = Date.now() + (own ? 0 : delayMs);
    const send = res.end.bind(res) as (body?: string) => ServerResponse;
    /** The answer as it leaves: no sooner than its distance allows. */
    const leave = (body?: string): void => {
      const wait = due - Date.now();
      if (wait <= 0) send(body);
      else later(res, wait, () => send(body));
    };
    // The fault is chosen from the whole request (its table and key are in the body), before
    // dynalite applies it, so dynalite is handed the body once it is read.
    readBody(req).then(
      (body) => {
        const fault = own
          ? undefined
          : faults.take(requestOf(String(req.headers['x-amz-target'] ?? ''), parsed(body)));
        if (fault?.kind === 'status500' || fault?.kind === 'throttle') return leave(failure(res, fault.kind));
        const deliver = afterApplying(fault, req, res, leave);
        // dynalite's answer passes through here on its way out.
        Object.assign(res, { end: withItemAsItIs(server, req, res, body, keySchemas, deliver) });
        const apply = () => {
          for (const listener of dynalite) listener(replayed(req, body), res);
        };
        if (fault?.kind === 'slow' && fault.beforeApplying) later(res, fault.ms, apply);
        else apply();
      },
      // The client went away before its request was whole: there is no one to answer.
      () => res.destroy(),
    );
  });
}

/**
 * dynalite's answer, handed to `deliver`; a refused write that asked for the item gets it first.
 * dynalite's ConditionalCheckFailedException has no `Item`: it is read after the refusal.
 */
function withItemAsItIs(
  server: Server,
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
  keySchemas: Map<string, Promise<string[]>>,
  deliver: (answer?: string) => void,
): (answer?: string) => void {
  return (answer) => {
    if (res.statusCode !== 400 || !answer?.includes('ConditionalCheckFailedException'))
      return deliver(answer);
    const input = JSON.parse(body.toString('utf8')) as WriteInput;
    if (input.ReturnValuesOnConditionCheckFailure !== 'ALL_OLD') return deliver(answer);
    const { port } = server.address() as AddressInfo;
    const target = String(req.headers['x-amz-target']);
    itemAsItIs(ownRequest(port, req.headers), target, input, keySchemas).then(
      (item) => {
        const withItem = JSON.stringify({ ...JSON.parse(answer), ...(item ? { Item: item } : {}) });
        res.setHeader('Content-Length', Buffer.byteLength(withItem));
        res.setHeader('x-amz-crc32', crc32(withItem));
        deliver(withItem);
      },
      () => deliver(answer),
    );
  };
}

/** What becomes of dynalite's answer to an applied request under `fault`. */
function afterApplying(
  fault: DynamoDbFault | undefined,
  req: IncomingMessage,
  res: ServerResponse,
  leave: (body?: string) => void,
): (body?: string) => void {
  switch (fault?.kind) {
    case 'applyAndLose':
      // RST rather than FIN: the client sees ECONNRESET, as when the way back is lost.
      return () => req.socket.resetAndDestroy();
    case 'applyThen500':
      return () => leave(failure(res, 'status500'));
    case 'slow':
      return fault.beforeApplying ? leave : (body) => later(res, fault.ms, () => leave(body));
    default:
      return leave;
  }
}

/** DynamoDB's own answers for a failure on its side and for throttling, set on `res`; the body to send. */
function failure(res: ServerResponse, kind: 'status500' | 'throttle'): string {
  const [status, type, message] =
    kind === 'status500'
      ? [
          500,
          'com.amazon.coral.service#InternalFailure',
          'The request processing has failed because of an unknown error, exception or failure.',
        ]
      : [
          400,
          'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
          'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.',
        ];
  const body = JSON.stringify({ __type: type, message });
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/x-amz-json-1.0');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.setHeader('x-amz-crc32', crc32(body));
  return body;
}

/** `work` in `ms`, unless the connection closes first (a client that gave up, or close()). */
function later(res: ServerResponse, ms: number, work: () => void): void {
  const timer = setTimeout(work, ms);
  res.once('close', () => clearTimeout(timer));
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function parsed(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    // dynalite answers it as DynamoDB does (SerializationException); no fault matches its key.
    return undefined;
  }
}

/** The request as dynalite reads it (a stream of its body, its headers, method and URL), the body already read. */
function replayed(req: IncomingMessage, body: Buffer): IncomingMessage {
  return Object.assign(Readable.from([body]), {
    headers: req.headers,
    method: req.method,
    url: req.url,
  }) as unknown as IncomingMessage;
}

interface WriteInput {
  TableName: string;
  Key?: Record<string, unknown>;
  Item?: Record<string, unknown>;
  ReturnValuesOnConditionCheckFailure?: string;
}

type OwnRequest = (operation: string, input: unknown) => Promise<Record<string, unknown>>;

/** A request to dynalite itself, signed as the caller's was (dynalite checks the header's form only). */
function ownRequest(port: number, headers: IncomingHttpHeaders): OwnRequest {
  return (operation, input) =>
    new Promise((resolve, reject) => {
      const body = JSON.stringify(input);
      const sent = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          headers: {
            ...headers,
            'x-amz-target': `DynamoDB_20120810.${operation}`,
            'content-length': Buffer.byteLength(body),
            [OWN_REQUEST]: '1',
          },
        },
        (response) => {
          const parts: Buffer[] = [];
          response.on('data', (part: Buffer) => parts.push(part));
          response.on('end', () => {
            const text = Buffer.concat(parts).toString('utf8');
            if (response.statusCode === 200) resolve(JSON.parse(text));
            else reject(new Error(`${operation}: ${response.statusCode} ${text}`));
          });
        },
      );
      sent.on('error', reject);
      sent.end(body);
    });
}

/** The item a failed write named, as it is now (undefined when there is none). */
async function itemAsItIs(
  own: OwnRequest,
  target: string,
  input: WriteInput,
  keySchemas: Map<string, Promise<string[]>>,
): Promise<unknown> {
  let key = input.Key;
  if (target.endsWith('.PutItem')) {
    if (!keySchemas.has(input.TableName)) {
      keySchemas.set(
        input.TableName,
        own('DescribeTable', { TableName: input.TableName }).then((answer) =>
          (answer as { Table: { KeySchema: Array<{ AttributeName: string }> } }).Table.KeySchema.map(
            (part) => part.AttributeName,
          ),
        ),
      );
    }
    const names = await keySchemas.get(input.TableName)!;
    key = Object.fromEntries(names.map((name) => [name, input.Item?.[name]]));
  }
  const { Item } = (await own('GetItem', { TableName: input.TableName, Key: key, ConsistentRead: true })) as {
    Item?: unknown;
  };
  return Item;
}
