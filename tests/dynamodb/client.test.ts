import { getEventListeners } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createTcpServer } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AwsAbortError, AwsConnectionError, AwsServiceError, AwsTimeoutError } from '../../lib/aws/errors.ts';
import { backoffMs, isRetryableAwsError } from '../../lib/aws/retry.ts';
import {
  awsCredentialsFromEnvironment,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '../../lib/dynamodb/index.ts';
import { freePort } from '../helpers/ports.ts';
import { timersLeftBy } from '../helpers/timers.ts';

/**
 * A DynamoDB stand-in on loopback that answers each request as the test scripts it: the layer's
 * retries, errors and timeouts seen from the wire, as DynamoDB would see them.
 */
interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}
type Answer = { status: number; body: unknown } | 'hang' | 'reset';

const servers: Server[] = [];

/** A loopback server answering as `handler` does, closed after the test; its endpoint and itself. */
async function loopback(handler: (request: IncomingMessage, response: ServerResponse) => void) {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** An answer's headers at once, then the body as `write` sends it (stalling, trickling, dropping). */
const partialAnswer = (write: (request: IncomingMessage, response: ServerResponse) => void) =>
  loopback((request, response) => {
    response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'content-length': '1000' });
    write(request, response);
  });

async function fakeDynamoDb(answers: Answer[]) {
  const seen: Seen[] = [];
  const { server, endpoint } = await loopback(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    seen.push({ method: request.method!, url: request.url!, headers: request.headers, body });
    const answer = answers.shift() ?? { status: 200, body: {} };
    if (answer === 'hang') return;
    if (answer === 'reset') {
      request.socket.destroy();
      return;
    }
    response.writeHead(answer.status, { 'content-type': 'application/x-amz-json-1.0' });
    response.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
  });
  return { server, endpoint, seen };
}

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const credentials = () => ({ accessKeyId: 'AKIDTEST', secretAccessKey: 'secret', sessionToken: 'session' });
const client = (
  endpoint: string,
  options: { maxAttempts?: number; connectTimeoutMs?: number; requestTimeoutMs?: number } = {},
) => new DynamoDBClient({ region: 'ap-south-1', endpoint, credentials, ...options });

const conditionFailed = (item?: object) => ({
  status: 400,
  body: {
    __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
    message: 'The conditional request failed',
    ...(item ? { Item: item } : {}),
  },
});
const put = new PutItemCommand({
  TableName: 'ledger',
  Item: { pk: { S: 'order#1' } },
  ConditionExpression: 'attribute_not_exists(pk)',
});

describe('the light DynamoDB client', () => {
  it("sends DynamoDB's JSON API: POST /, the operation in X-Amz-Target, the SDK's input as the body, signed", async () => {
    // Prepare
    const table = await fakeDynamoDb([{ status: 200, body: { Item: { pk: { S: 'k' }, n: { N: '7' } } } }]);
    const input = { TableName: 'state', Key: { pk: { S: 'k' } }, ConsistentRead: true };

    // Act
    const answer = await client(table.endpoint).send(new GetItemCommand(input));

    // Assess
    expect(answer).toEqual({ Item: { pk: { S: 'k' }, n: { N: '7' } } });
    const [request] = table.seen;
    expect(request).toMatchObject({ method: 'POST', url: '/' });
    expect(JSON.parse(request!.body)).toEqual(input);
    expect(request!.headers['content-type']).toBe('application/x-amz-json-1.0');
    expect(request!.headers['x-amz-target']).toBe('DynamoDB_20120810.GetItem');
    expect(request!.headers['x-amz-security-token']).toBe('session');
    expect(request!.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDTEST\/\d{8}\/ap-south-1\/dynamodb\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target, Signature=[0-9a-f]{64}$/,
    );
  });

  it('names a refusal as the SDK does, the part of __type after #, and carries the item the condition saw', async () => {
    // Prepare
    const table = await fakeDynamoDb([conditionFailed({ pk: { S: 'order#1' }, state: { S: 'paid' } })]);

    // Act
    const error = await client(table.endpoint)
      .send(put)
      .catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      name: 'ConditionalCheckFailedException',
      message: 'The conditional request failed',
      Item: { pk: { S: 'order#1' }, state: { S: 'paid' } },
    });
  });

  it('never repeats a failed condition or an invalid request', async () => {
    const table = await fakeDynamoDb([
      conditionFailed(),
      { status: 400, body: { __type: 'com.amazon.coral.validation#ValidationException', message: 'bad' } },
    ]);
    const dynamodb = client(table.endpoint);

    await expect(dynamodb.send(put)).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
    await expect(dynamodb.send(put)).rejects.toMatchObject({ name: 'ValidationException', message: 'bad' });
    expect(table.seen).toHaveLength(2);
  });

  it("tries again after DynamoDB's own failure and after throttling", async () => {
    const table = await fakeDynamoDb([
      {
        status: 500,
        body: { __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'oops' },
      },
      {
        status: 400,
        body: {
          __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
          message: 'slow down',
        },
      },
      { status: 200, body: { Attributes: { pk: { S: 'order#1' } } } },
    ]);

    const answer = await client(table.endpoint).send(
      new UpdateItemCommand({ TableName: 'ledger', Key: { pk: { S: 'order#1' } }, ReturnValues: 'ALL_NEW' }),
    );

    expect(answer).toEqual({ Attributes: { pk: { S: 'order#1' } } });
    expect(table.seen).toHaveLength(3);
    // Every try is signed afresh (same body, same target).
    expect(new Set(table.seen.map((request) => request.body)).size).toBe(1);
  });

  it('gives up after its tries with the last failure, named', async () => {
    const failure = { status: 503, body: 'Service Unavailable' };
    const table = await fakeDynamoDb([failure, failure, failure, { status: 200, body: {} }]);

    await expect(client(table.endpoint, { maxAttempts: 3 }).send(put)).rejects.toMatchObject({
      name: 'DynamoDBHttp503',
      statusCode: 503,
    });
    expect(table.seen).toHaveLength(3);
  });

  it('tries again after a connection lost before the answer', async () => {
    const table = await fakeDynamoDb(['reset', { status: 200, body: {} }]);

    await expect(client(table.endpoint).send(put)).resolves.toEqual({});
    expect(table.seen).toHaveLength(2);
  });

  it('leaves no listener on the caller’s signal once its tries are over, answered or refused', async () => {
    // Prepare: one signal for a retried request and a refused one, as a request's deadline is shared.
    const table = await fakeDynamoDb([
      { status: 500, body: {} },
      { status: 200, body: { Item: { pk: { S: 'k' } } } },
      conditionFailed(),
    ]);
    const signal = AbortSignal.timeout(60_000);
    const dynamodb = client(table.endpoint);

    // Act
    await dynamodb.send(new GetItemCommand({ TableName: 'state', Key: { pk: { S: 'k' } } }), {
      abortSignal: signal,
    });
    const refused = await dynamodb.send(put, { abortSignal: signal }).catch((error: unknown) => error);

    // Assess
    expect(table.seen).toHaveLength(3);
    expect(refused).toMatchObject({ name: 'ConditionalCheckFailedException' });
    expect(getEventListeners(signal, 'abort')).toEqual([]);
  });

  it('leaves no timer running once its tries are over: neither its own limit per try nor the caller’s', async () => {
    // Prepare: a retried request and a refused one, each under the caller's limit.
    const table = await fakeDynamoDb([
      { status: 500, body: {} },
      { status: 200, body: {} },
      conditionFailed(),
    ]);
    const dynamodb = client(table.endpoint, { connectTimeoutMs: 1_111, requestTimeoutMs: 7_777 });

    // Act
    const left = await timersLeftBy([1_111 + 7_777, 60_003], async () => {
      await dynamodb.send(put, { timeoutMs: 60_003 });
      await dynamodb.send(put, { timeoutMs: 60_003 }).catch(() => {});
    });

    // Assess: a limit left running fires in some later request's time.
    expect(table.seen).toHaveLength(3);
    expect(left).toEqual([]);
  });

  it('ends at the caller’s timeoutMs as at a timeout signal: AbortError, TimeoutError, no try after', async () => {
    // Prepare
    const table = await fakeDynamoDb(['hang', { status: 200, body: {} }]);

    // Act
    const error = await client(table.endpoint, { requestTimeoutMs: 5_000 })
      .send(put, { timeoutMs: 100 })
      .catch((caught: unknown) => caught);

    // Assess
    expect(error).toMatchObject({ name: 'AbortError' });
    expect((error as Error).cause).toMatchObject({ name: 'TimeoutError' });
    expect(table.seen).toHaveLength(1);
  });

  it('abandons a try that gets no answer in time and tries again', async () => {
    // Prepare
    const table = await fakeDynamoDb(['hang', { status: 200, body: { Item: { pk: { S: 'k' } } } }]);
    const started = performance.now();

    // Act
    const answer = await client(table.endpoint, { requestTimeoutMs: 200 }).send(
      new GetItemCommand({ TableName: 'state', Key: { pk: { S: 'k' } } }),
    );

    // Assess
    expect(answer.Item).toEqual({ pk: { S: 'k' } });
    expect(table.seen).toHaveLength(2);
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('fails with TimeoutError when its last try gets no answer in time', async () => {
    const table = await fakeDynamoDb(['hang', 'hang']);

    await expect(
      client(table.endpoint, { requestTimeoutMs: 150, maxAttempts: 2 }).send(put),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(table.seen).toHaveLength(2);
  });

  it("stops at once on the caller's abort, with AbortError and no further try", async () => {
    // Prepare
    const table = await fakeDynamoDb(['hang', { status: 200, body: {} }]);
    const started = performance.now();

    // Act
    const error = await client(table.endpoint, { requestTimeoutMs: 5_000 })
      .send(put, { abortSignal: AbortSignal.timeout(100) })
      .catch((caught: unknown) => caught);

    // Assess
    expect(error).toMatchObject({ name: 'AbortError' });
    expect((error as Error).cause).toMatchObject({ name: 'TimeoutError' });
    expect(performance.now() - started).toBeLessThan(1_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(table.seen).toHaveLength(1);
  });

  it('sends nothing once the signal has ended, and does not wait out a backoff after it ends', async () => {
    // Prepare: every backoff as long as it gets, 99 ms.
    vi.spyOn(Math, 'random').mockReturnValue(0.999);
    const table = await fakeDynamoDb([
      { status: 500, body: {} },
      { status: 200, body: {} },
    ]);
    const dynamodb = client(table.endpoint);
    const controller = new AbortController();

    // Act
    const early = dynamodb.send(put, { abortSignal: AbortSignal.abort() }).catch((caught: unknown) => caught);
    const sent = dynamodb.send(put, { abortSignal: controller.signal }).catch((caught: unknown) => caught);
    while (table.seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    await new Promise((resolve) => setTimeout(resolve, 30)); // the 500 is in: the client waits to try again
    controller.abort();
    const abortedAt = performance.now();
    const error = await sent;
    const stoppedAfterMs = performance.now() - abortedAt;
    await new Promise((resolve) => setTimeout(resolve, 150));

    // Assess
    expect(await early).toMatchObject({ name: 'AbortError' });
    expect(error).toMatchObject({ name: 'AbortError' });
    expect(stoppedAfterMs).toBeLessThan(50);
    expect(table.seen).toHaveLength(1);
  });

  it('waits a jittered backoff that doubles: at most 100 ms, then 200 ms', () => {
    expect(backoffMs(1, () => 0.999)).toBe(99);
    expect(backoffMs(2, () => 0.999)).toBe(199);
    expect(backoffMs(1, () => 0)).toBe(0);
  });

  it('signs with the credentials Lambda puts in the environment, and refuses to send without them', async () => {
    // Prepare
    const table = await fakeDynamoDb([{ status: 200, body: {} }]);
    const env = {
      AWS_ACCESS_KEY_ID: 'AKIDENV',
      AWS_SECRET_ACCESS_KEY: 'env-secret',
      AWS_SESSION_TOKEN: 'env-token',
    };
    const signed = new DynamoDBClient({
      region: 'ap-south-1',
      endpoint: table.endpoint,
      credentials: () => awsCredentialsFromEnvironment(env),
    });
    const unsigned = new DynamoDBClient({
      region: 'ap-south-1',
      endpoint: table.endpoint,
      credentials: () => awsCredentialsFromEnvironment({ AWS_ACCESS_KEY_ID: 'AKIDENV' }),
    });

    // Act
    await signed.send(put);
    const refusal = await unsigned.send(put).catch((caught: unknown) => caught);

    // Assess
    expect(table.seen[0]!.headers.authorization).toContain('Credential=AKIDENV/');
    expect(table.seen[0]!.headers['x-amz-security-token']).toBe('env-token');
    expect(refusal).toMatchObject({ name: 'CredentialsError' });
    expect((refusal as Error).message).toContain('AWS_SECRET_ACCESS_KEY');
    expect(table.seen).toHaveLength(1);
  });
});

describe('which failures are worth another try', () => {
  it('are throttling, 5xx, a lost connection and a silent one; never a refusal of the request or a bug', () => {
    const refusal = (name: string, status: number) => new AwsServiceError(name, 'no', status);

    expect(isRetryableAwsError(refusal('ProvisionedThroughputExceededException', 400))).toBe(true);
    expect(isRetryableAwsError(refusal('ThrottlingException', 400))).toBe(true);
    expect(isRetryableAwsError(refusal('InternalServerError', 500))).toBe(true);
    expect(isRetryableAwsError(new AwsConnectionError('DynamoDB', 'ECONNRESET', undefined))).toBe(true);
    expect(isRetryableAwsError(new AwsTimeoutError('DynamoDB', 'connect', 500))).toBe(true);
    expect(isRetryableAwsError(new AwsTimeoutError('DynamoDB', 'answer', 1_000))).toBe(true);
    expect(isRetryableAwsError(refusal('ConditionalCheckFailedException', 400))).toBe(false);
    expect(isRetryableAwsError(refusal('ValidationException', 400))).toBe(false);
    expect(isRetryableAwsError(refusal('ResourceNotFoundException', 400))).toBe(false);
    expect(isRetryableAwsError(new AwsAbortError('DynamoDB', undefined))).toBe(false);
    expect(isRetryableAwsError(new TypeError('Do not know how to serialize a BigInt'))).toBe(false);
    // A raw socket error never reaches the retry rule: the client names it first (below).
    expect(isRetryableAwsError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))).toBe(
      false,
    );
  });
});

describe("the light client's connection (node:http)", () => {
  it('calls a loopback server that accepts but never answers a request timeout, and gives up after its tries', async () => {
    // Prepare
    const table = await fakeDynamoDb(['hang', 'hang']);
    const started = performance.now();

    // Act
    const error = await client(table.endpoint, { requestTimeoutMs: 300, maxAttempts: 2 })
      .send(put)
      .catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(AwsTimeoutError);
    expect(error).toMatchObject({ name: 'TimeoutError', phase: 'answer' });
    expect(table.seen).toHaveLength(2);
    expect(performance.now() - started).toBeGreaterThanOrEqual(2 * 290);
  });

  it('calls a connection that is never established a connect timeout, long before the request timeout', async () => {
    // Prepare: a TCP server that accepts but never speaks TLS, so the https connection is never
    // ready: the connect timeout covers the handshake (no non-routable address is reliable on
    // every machine; this is, on loopback).
    const silent = createTcpServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const started = performance.now();

    // Act
    const error = await client(`https://127.0.0.1:${port}`, {
      connectTimeoutMs: 200,
      requestTimeoutMs: 10_000,
      maxAttempts: 1,
    })
      .send(put)
      .catch((caught: unknown) => caught)
      .finally(() => silent.close());
    const elapsed = performance.now() - started;

    // Assess
    expect(error).toBeInstanceOf(AwsTimeoutError);
    expect(error).toMatchObject({
      name: 'TimeoutError',
      phase: 'connect',
      message: 'No connection to DynamoDB within 200 ms',
    });
    expect(errorCodeOf(error)).toBe('CONNECT_TIMEOUT');
    expect(elapsed).toBeGreaterThanOrEqual(190);
    expect(elapsed).toBeLessThan(3_000);
  });

  it('calls an answer that stops between its bytes a request timeout, counted from its last byte', async () => {
    // Prepare: the headers and half a body at once, then nothing more.
    const stalling = await partialAnswer((_request, response) => {
      response.write('{"Item":');
      setTimeout(() => response.write('{'), 150);
    });
    const started = performance.now();

    // Act: a connect limit long enough that only the stall can end the try.
    const error = await client(stalling.endpoint, {
      connectTimeoutMs: 5_000,
      requestTimeoutMs: 300,
      maxAttempts: 1,
    })
      .send(put)
      .catch((caught: unknown) => caught);
    const elapsed = performance.now() - started;

    // Assess: not 300 ms from the start: the second byte came at 150 ms and restarted the limit.
    expect(error).toBeInstanceOf(AwsTimeoutError);
    expect(error).toMatchObject({ name: 'TimeoutError', phase: 'answer' });
    expect(errorCodeOf(error)).toBe('BODY_TIMEOUT');
    expect(elapsed).toBeGreaterThanOrEqual(440);
    expect(elapsed).toBeLessThan(2_000);
  });

  it('gives a try no longer than its two limits together, however slowly its answer trickles in', async () => {
    // Prepare: a byte every 50 ms, each well within the limit between bytes, never the end.
    const trickling = await partialAnswer((_request, response) => {
      const timer = setInterval(() => response.write(' '), 50);
      response.on('close', () => clearInterval(timer));
    });
    const started = performance.now();

    // Act
    const error = await client(trickling.endpoint, {
      connectTimeoutMs: 200,
      requestTimeoutMs: 300,
      maxAttempts: 1,
    })
      .send(put)
      .catch((caught: unknown) => caught);
    const elapsed = performance.now() - started;

    // Assess
    expect(error).toBeInstanceOf(AwsTimeoutError);
    expect(error).toMatchObject({
      name: 'TimeoutError',
      phase: 'answer',
      message: 'DynamoDB did not answer within 500 ms',
    });
    expect(elapsed).toBeGreaterThanOrEqual(490);
    expect(elapsed).toBeLessThan(1_500);
  });

  it('calls a connection lost in the middle of the answer a connection failure, at once', async () => {
    // Prepare: the headers and half a body, then the connection drops.
    const dropping = await partialAnswer((request, response) => {
      response.write('{"Item":', () => setTimeout(() => request.socket.destroy(), 20));
    });
    const started = performance.now();

    // Act
    const error = await client(dropping.endpoint, { requestTimeoutMs: 5_000, maxAttempts: 1 })
      .send(put)
      .catch((caught: unknown) => caught);

    // Assess: named, and long before any limit.
    expect(error).toBeInstanceOf(AwsConnectionError);
    expect(error).toMatchObject({ name: 'ConnectionError', code: 'ECONNRESET' });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('gives a request on a kept connection its answer limit, not the connect limit', async () => {
    // Prepare: the first request connects and is answered at once; the second, on the same
    // connection, is answered after 300 ms: beyond the connect limit, within the answer limit.
    let requests = 0;
    const sockets = new Set<unknown>();
    const table = await loopback((request, response) => {
      sockets.add(request.socket);
      const delay = requests++ === 0 ? 0 : 300;
      setTimeout(() => {
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        response.end('{}');
      }, delay);
    });
    const dynamodb = client(table.endpoint, {
      connectTimeoutMs: 100,
      requestTimeoutMs: 2_000,
      maxAttempts: 1,
    });

    // Act
    await dynamodb.send(put);
    const second = await dynamodb.send(put).catch((caught: unknown) => caught);

    // Assess
    expect(second).toEqual({});
    expect(sockets.size).toBe(1);
  });

  it('keeps one connection for the requests that follow each other', async () => {
    // Prepare
    const table = await fakeDynamoDb([]);
    const sockets = new Set<unknown>();
    table.server.on('connection', (socket) => sockets.add(socket));
    const dynamodb = client(table.endpoint);

    // Act
    for (let i = 0; i < 3; i++) await dynamodb.send(put);

    // Assess
    expect(table.seen).toHaveLength(3);
    expect(sockets.size).toBe(1);
  });

  it('calls a refused connection a connection failure', async () => {
    const port = await freePort();

    const error = await client(`http://127.0.0.1:${port}`, { maxAttempts: 2 })
      .send(put)
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(AwsConnectionError);
    expect(error).toMatchObject({ name: 'ConnectionError', code: 'ECONNREFUSED' });
  });

  it('calls a connection lost before the answer a connection failure when it is the last try', async () => {
    const table = await fakeDynamoDb(['reset']);

    const error = await client(table.endpoint, { maxAttempts: 1 })
      .send(put)
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(AwsConnectionError);
    expect(['UND_ERR_SOCKET', 'ECONNRESET']).toContain((error as AwsConnectionError).code);
    expect(table.seen).toHaveLength(1);
  });
});

function errorCodeOf(error: unknown): unknown {
  return ((error as Error).cause as { code?: unknown } | undefined)?.code;
}
