/**
 * A DynamoDB-compatible server (dynalite, in memory) on loopback for `npm start` and the tests,
 * with the service's tables created. No AWS account, no Docker, no mock.
 */
import { type IncomingHttpHeaders, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32 } from 'node:zlib';

/**
 * The table name serverless.yml gives the functions for `--stage local`
 * (`${self:service}-${sls:stage}-idempotency`); tests/e2e checks that the two agree.
 */
export const LOCAL_IDEMPOTENCY_TABLE = 'payhere-payments-api-local-idempotency';
/** The ledger's table for `--stage local` (`${self:service}-${sls:stage}-ledger`). */
export const LOCAL_LEDGER_TABLE = 'payhere-payments-api-local-ledger';

/** The shared budget's and token's table for `--stage local` (`${self:service}-${sls:stage}-state`). */
export const LOCAL_STATE_TABLE = 'payhere-payments-api-local-state';

/** What the functions read to find the local tables (serverless.yml gives the same names for `--stage local`). */
export const LOCAL_TABLES_ENVIRONMENT = {
  IDEMPOTENCY_TABLE: LOCAL_IDEMPOTENCY_TABLE,
  LEDGER_TABLE: LOCAL_LEDGER_TABLE,
  STATE_TABLE: LOCAL_STATE_TABLE,
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
  asDynamoDbAnswers(server, options.delayMs ?? 0);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
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
  options: { settleIndex?: boolean } = {},
): Promise<void> {
  await localRequest(endpoint, 'CreateTable', {
    TableName: table,
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      ...(options.settleIndex
        ? [
            { AttributeName: 'settleQueue', AttributeType: 'S' },
            { AttributeName: 'settleAt', AttributeType: 'N' },
          ]
        : []),
    ],
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
    // The settle job's index, as serverless.yml declares it on the idempotency table and the ledger.
    ...(options.settleIndex
      ? {
          GlobalSecondaryIndexes: [
            {
              IndexName: 'settle',
              KeySchema: [
                { AttributeName: 'settleQueue', KeyType: 'HASH' },
                { AttributeName: 'settleAt', KeyType: 'RANGE' },
              ],
              Projection: { ProjectionType: 'KEYS_ONLY' },
            },
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
    createTable(endpoint, LOCAL_LEDGER_TABLE, { settleIndex: true }),
    createTable(endpoint, LOCAL_STATE_TABLE),
  ]);
}

/** Marks the few requests this module sends dynalite itself: they are not delayed again. */
const OWN_REQUEST = 'x-local-dynamodb-own';

/**
 * What dynalite lacks of DynamoDB's answers, added around its request handler: a write that asked
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` gets the item as it is in its
 * ConditionalCheckFailedException (`Item`), as DynamoDB sends it (dynalite's issue #182); read
 * just after the failure, so another write may land in between, which DynamoDB's own answer
 * excludes: callers may use it only as a view to write against, conditionally. And, when
 * `delayMs` is set, no answer leaves sooner than that after its request arrived.
 */
function asDynamoDbAnswers(server: Server, delayMs: number): void {
  const answer = server.listeners('request') as Array<(request: unknown, response: unknown) => void>;
  server.removeAllListeners('request');
  const keySchemas = new Map<string, Promise<string[]>>();
  server.on('request', (req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    const due = Date.now() + (req.headers[OWN_REQUEST] === undefined ? delayMs : 0);
    const send = res.end.bind(res) as (body?: string) => ServerResponse;
    const end = (body?: string): ServerResponse => {
      const wait = due - Date.now();
      if (wait <= 0) return send(body);
      setTimeout(() => send(body), wait);
      return res;
    };
    Object.assign(res, {
      end: (body?: string) => {
        if (res.statusCode !== 400 || !body?.includes('ConditionalCheckFailedException')) return end(body);
        const input = JSON.parse(Buffer.concat(chunks).toString('utf8')) as WriteInput;
        if (input.ReturnValuesOnConditionCheckFailure !== 'ALL_OLD') return end(body);
        const { port } = server.address() as AddressInfo;
        const own = ownRequest(port, req.headers);
        itemAsItIs(own, String(req.headers['x-amz-target']), input, keySchemas).then(
          (item) => {
            const withItem = JSON.stringify({ ...JSON.parse(body), ...(item ? { Item: item } : {}) });
            res.setHeader('Content-Length', Buffer.byteLength(withItem));
            res.setHeader('x-amz-crc32', crc32(withItem));
            end(withItem);
          },
          () => end(body),
        );
        return res;
      },
    });
    for (const listener of answer) listener(req, res);
    // dynalite's own reader is attached: this one sees the same chunks.
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
  });
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
