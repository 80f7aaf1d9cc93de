import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { dynamoDbClient, loadDynamoDbConfig } from '../../lib/config/dynamodb.ts';
import { PutItemCommand } from '../../lib/dynamodb/index.ts';

/** A new `whsec_` secret of 32 bytes. */
export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

const BASE32 = '0123456789abcdefghjkmnpqrstvwxyz';
/** An event id as the relay makes them: `evt_` and 26 base32 characters. */
export const newEventId = () => `evt_${Array.from(randomBytes(26), (byte) => BASE32[byte % 32]).join('')}`;

export interface TestEvent {
  id?: string;
  type?: string;
  objectId?: string;
  sequence?: number;
  /** When the relay published it (ms). */
  publishedAt: number;
  /** The endpoints configured when it was published; none: no deliveries. */
  endpoints?: string[];
  data?: Record<string, unknown>;
}

/**
 * Puts one event item into the file's events table (EVENTS_TABLE) exactly as the relay writes it
 * (the contract between lib/events/ and lib/webhooks/: design of issue 36, "The events table").
 */
export async function putEvent(event: TestEvent, table = process.env.EVENTS_TABLE!) {
  const id = event.id ?? newEventId();
  const type = event.type ?? 'order.succeeded';
  const objectId = event.objectId ?? `Order-${id.slice(4, 12)}`;
  const sequence = event.sequence ?? 1;
  const createdAt = event.publishedAt - 5;
  const body = JSON.stringify({
    id,
    type,
    created_at: new Date(createdAt).toISOString(),
    object: { type: 'order', id: objectId },
    sequence,
    // An order.succeeded's data as lib/orders/events.ts writes it (the events' contract checks it).
    data: event.data ?? {
      order_id: objectId,
      kind: 'charge',
      status: 'succeeded',
      amount: 100,
      currency: 'LKR',
      payment_id: '320040000001',
      subscription_id: null,
      evidence: 'charge_succeeded',
    },
  });
  const endpoints = event.endpoints ?? [];
  const item = {
    pk: { S: `event#${id}` },
    id: { S: id },
    type: { S: type },
    objectType: { S: 'order' },
    objectId: { S: objectId },
    sequence: { N: String(sequence) },
    createdAt: { N: String(createdAt) },
    body: { S: body },
    feed: { S: 'events' },
    feedKey: { S: `${String(event.publishedAt).padStart(13, '0')}#${id}` },
    publishedAt: { N: String(event.publishedAt) },
    expiresAt: { N: String(Math.floor(event.publishedAt / 1000) + 35 * 86_400) },
    ...(endpoints.length === 0
      ? {}
      : {
          deliveries: {
            M: Object.fromEntries(
              endpoints.map((endpoint) => [
                endpoint,
                {
                  M: {
                    status: { S: 'pending' },
                    attempts: { N: '0' },
                    nextAt: { N: String(event.publishedAt) },
                  },
                },
              ]),
            ),
          },
          dueQueue: { S: 'deliveries' },
          dueAt: { N: String(event.publishedAt) },
        }),
  };
  await dynamoDbClient(loadDynamoDbConfig(process.env)).send(
    new PutItemCommand({ TableName: table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }),
  );
  return { id, body };
}

export interface Received {
  headers: Record<string, string>;
  body: string;
}

/**
 * A merchant's receiver on loopback: it keeps what it received and answers each request with what
 * `answer` says (200 by default).
 */
export async function startReceiver() {
  const received: Received[] = [];
  let answer: (request: Received, index: number) => number | Promise<number> = () => 200;
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const got: Received = {
      headers: Object.fromEntries(
        Object.entries(request.headers).map(([name, value]) => [name, String(value)]),
      ),
      body: Buffer.concat(chunks).toString('utf8'),
    };
    received.push(got);
    const status = await answer(got, received.length - 1);
    response.writeHead(status).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    answer(with_: typeof answer) {
      answer = with_;
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
