import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseWebhookSecret, webhookHeaders } from '../../lib/webhooks/signature.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../scripts/webhook-receiver.ts';
import { newWebhookSecret } from '../helpers/webhooks.ts';

/** npm start's receiver (docs/operator.md "Webhooks"): what it verifies, prints and lists. */
let receiver: WebhookReceiver;
const printed: string[] = [];
const body = JSON.stringify({
  id: 'evt_01',
  type: 'order.succeeded',
  object: { type: 'order', id: 'Order-1' },
});

beforeAll(async () => {
  receiver = await startWebhookReceiver({ print: (line) => printed.push(line) });
});
afterAll(() => receiver.close());

const post = (headers: Record<string, string>, text = body) =>
  fetch(receiver.url, { method: 'POST', headers, body: text });

describe('the local webhook receiver', () => {
  it('takes a delivery signed with its secret (204), prints it and lists it', async () => {
    const headers = webhookHeaders(parseWebhookSecret('secret', receiver.secret), 'evt_01', Date.now(), body);

    expect((await post(headers)).status).toBe(204);
    expect(printed.at(-1)).toBe('Webhook received: order.succeeded order Order-1 (evt_01)');
    const listed = await (await fetch(receiver.url.replace('/webhooks', '/received'))).json();
    expect(listed).toMatchObject([{ id: 'evt_01', type: 'order.succeeded', verified: true }]);
  });

  it('refuses (400) a delivery signed with another secret, an altered body, or an old timestamp', async () => {
    const other = parseWebhookSecret('secret', newWebhookSecret());
    const own = parseWebhookSecret('secret', receiver.secret);

    expect((await post(webhookHeaders(other, 'evt_01', Date.now(), body))).status).toBe(400);
    expect(
      (await post(webhookHeaders(own, 'evt_01', Date.now(), body), body.replace('Order-1', 'Order-2')))
        .status,
    ).toBe(400);
    expect((await post(webhookHeaders(own, 'evt_01', Date.now() - 10 * 60_000, body))).status).toBe(400);
    expect(printed.at(-1)).toMatch(/^Webhook REFUSED/);
  });
});
