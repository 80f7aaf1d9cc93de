import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FEED_SETTLE_MS } from '../../lib/events/store.ts';
import { WebhookDeliverer } from '../../lib/webhooks/deliverer.ts';
import { webhookEndpointsFor } from '../../lib/webhooks/endpoint-secret.ts';
import { webhookSource } from '../../lib/webhooks/endpoints.ts';
import { webhookStoreFromEnvironment } from '../../lib/webhooks/from-environment.ts';
import { postWebhook } from '../../lib/webhooks/post.ts';
import { type Sandbox, startSandbox } from '../../sandbox/server.ts';
import type { Offline } from '../../scripts/offline.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, tokenFor } from '../helpers/auth.ts';
import { startOfflineAgainst } from '../helpers/offline.ts';
import { customer } from '../helpers/orders.ts';
import { newWebhookSecret } from '../helpers/webhooks.ts';

/**
 * The merchant's backend learns a payment through npm start's stack (serverless-offline, the
 * sandbox as PayHere, the local DynamoDB): a checkout paid in the sandbox reaches the merchant's
 * receiver as one `order.succeeded`, signed as Standard Webhooks says and verified with the
 * `standardwebhooks` library a receiver would use; a receiver down for its first tries gets it later,
 * once; PayHere's notification replayed makes no second event; the event the feed lists after a
 * cursor is the one delivered. The retries' clock is injected into the deliverer: nothing waits.
 */
const SECRET = newWebhookSecret();
let sandbox: Sandbox;
let offline: Offline;
let api: string;
let receiver: http.Server;
/** The receiver's answers to come: 503 while any are left, then 204. */
let failuresLeft = 0;
const received: { id: string; status: number; body: any }[] = [];

beforeAll(async () => {
  receiver = http.createServer(async (request, response) => {
    const parts: Buffer[] = [];
    for await (const part of request) parts.push(part as Buffer);
    const payload = Buffer.concat(parts).toString('utf8');
    const headers = Object.fromEntries(
      ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [
        name,
        String(request.headers[name]),
      ]),
    );
    let body: any;
    try {
      body = new Webhook(SECRET).verify(payload, headers);
    } catch (error) {
      // A delivery whose signature does not verify is refused, and recorded as such.
      received.push({
        id: headers['webhook-id']!,
        status: 400,
        body: { refused: String(error), object: {} },
      });
      response.writeHead(400).end();
      return;
    }
    const status = failuresLeft > 0 ? 503 : 204;
    if (failuresLeft > 0) failuresLeft--;
    received.push({ id: headers['webhook-id']!, status, body });
    response.writeHead(status).end();
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;
  process.env.MERCHANT_WEBHOOK_URL = receiverUrl;
  process.env.MERCHANT_WEBHOOK_SECRET = SECRET;
  sandbox = await startSandbox({ rateLimit: false });
  ({ offline, api } = await startOfflineAgainst(sandbox, {
    ...TEST_AUTH_ENV,
    MERCHANT_WEBHOOK_URL: receiverUrl,
    MERCHANT_WEBHOOK_SECRET: SECRET,
  }));
}, 120_000);

afterAll(async () => {
  await offline?.stop();
  await sandbox?.close();
  receiver?.close();
});

async function merchant(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${await tokenFor(MERCHANT_SCOPES)}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as { msg: string; data: any } };
}

/** A checkout of Alice's, the merchant's priced, paid in the sandbox (PayHere notifies the service). */
async function paidCheckout() {
  const created = await merchant(
    'POST',
    '/checkouts',
    { kind: 'payment', items: 'Door bell', currency: 'LKR', amount: 1500 },
    { 'on-behalf-of': customer('alice') },
  );
  expect(created.status).toBe(201);
  const completed = await sandbox.completeCheckout({ ...created.body.data, outcome: 'success' });
  expect(completed.deliveries).toEqual([expect.objectContaining({ status: 200 })]);
  return { orderId: created.body.data.order_id as string, delivery: completed.deliveries[0]! };
}

/** Until `check` holds (the background relay and delivery after the notification's answer), at most 10 s. */
async function eventually(check: () => boolean): Promise<void> {
  for (let waited = 0; !check() && waited < 10_000; waited += 50)
    await new Promise((resolve) => setTimeout(resolve, 50));
}

/** Every event the merchant's feed lists after `cursor` (from the start: null), and where it ends. */
async function eventsAfter(
  cursor: string | null,
): Promise<{ events: { id: string; type: string; object: { id: string } }[]; cursor: string | null }> {
  const events = [];
  for (;;) {
    const page = await merchant('GET', `/events?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    expect(page.status).toBe(200);
    events.push(...page.body.data.events);
    cursor = page.body.data.next_cursor ?? cursor;
    if (!page.body.data.has_more) return { events, cursor };
  }
}

const ofOrder = (orderId: string) => received.filter((delivery) => delivery.body.object.id === orderId);

describe('a checkout paid in the sandbox', () => {
  it('reaches the merchant’s receiver as one signed order.succeeded; replayed, PayHere’s notification adds none', async () => {
    // Where the merchant's feed stood before the payment (null: nothing listed yet, from the start).
    const before = (await eventsAfter(null)).cursor;
    const { orderId, delivery } = await paidCheckout();
    await eventually(() => ofOrder(orderId).length > 0);
    await sandbox.replayNotification(delivery.id);

    const deliveries = ofOrder(orderId);
    expect(deliveries).toEqual([
      {
        id: expect.stringMatching(/^evt_/),
        status: 204,
        body: expect.objectContaining({
          type: 'order.succeeded',
          sequence: 1,
          object: { type: 'order', id: orderId },
          data: expect.objectContaining({ order_id: orderId, status: 'succeeded', amount: 1500 }),
        }),
      },
    ]);
    expect(deliveries[0]!.body.id).toBe(deliveries[0]!.id);
    // The feed lists an event once it is FEED_SETTLE_MS old (a cursor never passes one still being
    // written): after the cursor taken before the payment, it holds the delivered event, under its id.
    await new Promise((resolve) => setTimeout(resolve, FEED_SETTLE_MS + 100));
    const after = (await eventsAfter(before)).events.filter((event) => event.object.id === orderId);
    expect(after.map((event) => [event.id, event.type])).toEqual([[deliveries[0]!.id, 'order.succeeded']]);
    expect(ofOrder(orderId)).toHaveLength(1);
  });

  it('reaches a receiver down for its first two tries later, once', async () => {
    failuresLeft = 2;
    const { orderId } = await paidCheckout();
    await eventually(() => ofOrder(orderId).length > 0);
    // deliverWebhooks' scheduled runs, the clock (the deliverer's and the receiver's, which checks
    // the signature's time) moved past each retry's delay: 5 s, then 5 min, then once more.
    const deliverer = new WebhookDeliverer({
      store: webhookStoreFromEnvironment(),
      endpoints: webhookEndpointsFor(webhookSource(process.env), process.env),
      post: postWebhook,
      now: () => Date.now(),
    });
    let now = Date.now();
    try {
      for (const delay of [6_000, 301_000, 1_801_000]) {
        now += delay;
        vi.useFakeTimers({ toFake: ['Date'], now });
        await deliverer.run();
      }
    } finally {
      vi.useRealTimers();
    }

    const deliveries = ofOrder(orderId);
    expect(deliveries.map((delivery) => delivery.status)).toEqual([503, 503, 204]);
    expect(new Set(deliveries.map((delivery) => delivery.id)).size).toBe(1);
  });
});
