import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDeliverer } from '../../lib/webhooks/deliverer.ts';
import { environmentWebhookEndpoints, webhookSource } from '../../lib/webhooks/endpoints.ts';
import { webhookStoreFromEnvironment } from '../../lib/webhooks/from-environment.ts';
import { postWebhook } from '../../lib/webhooks/post.ts';
import { call } from '../helpers/gateway.ts';
import { customerToken } from '../helpers/orders.ts';
import { newWebhookSecret, putEvent, startReceiver } from '../helpers/webhooks.ts';

/**
 * The merchant's webhook routes (docs/app.md "Webhooks"): the deliveries with their attempts, status
 * and last error, and an event made due again on demand; a customer gets 403, as for the
 * reconciliation report. The events are the file's own table's, written as the relay writes them.
 */
const H = 3_600_000;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const secret = newWebhookSecret();
const store = webhookStoreFromEnvironment();
let clock = Date.now() - 2 * H;

const deliverer = () =>
  new WebhookDeliverer({
    store,
    endpoints: environmentWebhookEndpoints(
      webhookSource({ MERCHANT_WEBHOOK_URL: receiver.url, MERCHANT_WEBHOOK_SECRET: secret }),
    ),
    post: postWebhook,
    now: () => clock,
  });

let delivered: string;
let failing: string;
let quiet: string;

beforeAll(async () => {
  receiver = await startReceiver();
  // Oldest first: one delivered, one failing (503), one published without endpoints.
  delivered = (await putEvent({ publishedAt: clock, endpoints: ['default'] })).id;
  failing = (await putEvent({ publishedAt: clock + 1, endpoints: ['default'], type: 'order.failed' })).id;
  quiet = (await putEvent({ publishedAt: clock + 2 })).id;
  receiver.answer((got) => (got.headers['webhook-id'] === failing ? 503 : 200));
  clock += 10;
  await deliverer().run();
});
afterAll(() => receiver.close());

describe('GET /gateway/api/webhooks/deliveries', () => {
  it('lists each delivery, newest event first, with its attempts, status and last error', async () => {
    const answer = await call('webhookDeliveries', { query: { limit: '100' } });

    expect(answer.statusCode).toBe(200);
    const mine = answer.body.data.deliveries.filter((row: { event_id: string }) =>
      [delivered, failing, quiet].includes(row.event_id),
    );
    expect(mine).toEqual([
      {
        event_id: failing,
        type: 'order.failed',
        object: { type: 'order', id: expect.any(String) },
        endpoint: 'default',
        status: 'pending',
        attempts: 1,
        last_status: 503,
        last_error: 'HTTP 503',
        last_attempt_at: new Date(clock).toISOString(),
        next_attempt_at: new Date(clock + 5_000).toISOString(),
        delivered_at: null,
      },
      {
        event_id: delivered,
        type: 'order.succeeded',
        object: { type: 'order', id: expect.any(String) },
        endpoint: 'default',
        status: 'delivered',
        attempts: 1,
        last_status: 200,
        last_error: null,
        last_attempt_at: new Date(clock).toISOString(),
        next_attempt_at: null,
        delivered_at: new Date(clock).toISOString(),
      },
    ]);
  });

  it('filters by status and endpoint, and pages with next_cursor', async () => {
    const pending = await call('webhookDeliveries', {
      query: { status: 'pending', endpoint: 'default', limit: '100' },
    });
    expect(pending.body.data.deliveries.map((row: { event_id: string }) => row.event_id)).toContain(failing);
    expect(pending.body.data.deliveries.map((row: { event_id: string }) => row.event_id)).not.toContain(
      delivered,
    );
    const other = await call('webhookDeliveries', { query: { endpoint: 'crm' } });
    expect(other.body.data).toEqual({ deliveries: [], next_cursor: null });

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await call('webhookDeliveries', { query: { limit: '1', ...(cursor ? { cursor } : {}) } });
      expect(page.statusCode).toBe(200);
      expect(page.body.data.deliveries.length).toBeLessThanOrEqual(1);
      seen.push(...page.body.data.deliveries.map((row: { event_id: string }) => row.event_id));
      cursor = page.body.data.next_cursor ?? undefined;
    } while (cursor);
    expect(seen.filter((id) => [delivered, failing].includes(id))).toEqual([failing, delivered]);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('refuses an altered cursor', async () => {
    const answer = await call('webhookDeliveries', { query: { cursor: 'bm90LWEtY3Vyc29y' } });

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.errors).toEqual([
      { path: 'query.cursor', message: 'is not a cursor this list gave' },
    ]);
  });

  it('is the merchant’s only: a customer gets 403', async () => {
    const token = await customerToken('webhook-reader');
    const answer = await call('webhookDeliveries', { headers: { Authorization: `Bearer ${token}` } });

    expect(answer.statusCode).toBe(403);
    expect(answer.body.data.code).toBe('forbidden');
  });
});

describe('POST /gateway/api/events/{id}/redeliver', () => {
  it('makes a delivered event due again, its attempts kept, and it is delivered again', async () => {
    const answer = await call('redeliverEvent', { id: delivered });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.data).toEqual({
      event_id: delivered,
      endpoints: ['default'],
      due_at: expect.any(String),
    });
    const due = await store.event(delivered);
    expect(due!.deliveries.default).toMatchObject({ status: 'pending', attempts: 1 });
    const before = receiver.received.filter((got) => got.headers['webhook-id'] === delivered).length;
    clock = Date.now() + 1_000;
    await deliverer().run();
    expect(receiver.received.filter((got) => got.headers['webhook-id'] === delivered)).toHaveLength(
      before + 1,
    );
    expect((await store.event(delivered))!.deliveries.default).toMatchObject({
      status: 'delivered',
      attempts: 2,
    });
  });

  it('enables a disabled endpoint again', async () => {
    // A streak of its own, from whatever the deliveries above left: failing since 0, disabled at 24 h.
    await store.enable('default');
    await store.failed('default', 0, 'HTTP 500', 0);
    expect(await store.disable('default', 24 * H, 24 * H)).toBe(true);

    expect((await call('redeliverEvent', { id: failing, query: { endpoint: 'default' } })).statusCode).toBe(
      200,
    );
    expect(await store.endpoint('default')).toEqual({});
  });

  it('answers 404 for an event that does not exist, 400 for an endpoint it has none of, 409 with no endpoint at all', async () => {
    expect((await call('redeliverEvent', { id: 'evt_doesnotexist' })).statusCode).toBe(404);
    const unknownEndpoint = await call('redeliverEvent', { id: delivered, query: { endpoint: 'crm' } });
    expect(unknownEndpoint.statusCode).toBe(400);
    expect(unknownEndpoint.body.data.errors[0].path).toBe('query.endpoint');
    expect((await call('redeliverEvent', { id: quiet })).statusCode).toBe(409);
  });

  it('answers 409 while a deliverer holds the event', async () => {
    const event = await store.event(failing);
    expect(
      await store.claim(event!.pk, 'a-deliverer', Date.now() + 1_000, Date.now() + 60_000),
    ).toBeDefined();

    const answer = await call('redeliverEvent', { id: failing });

    expect(answer.statusCode).toBe(409);
    expect(answer.body.data.code).toBe('conflict');
  });

  it('is the merchant’s only: a customer gets 403 and nothing changes', async () => {
    const token = await customerToken('webhook-reader');
    const answer = await call('redeliverEvent', {
      id: delivered,
      headers: { Authorization: `Bearer ${token}` },
    });

    expect(answer.statusCode).toBe(403);
    expect((await store.event(delivered))!.deliveries.default!.status).toBe('delivered');
  });
});
