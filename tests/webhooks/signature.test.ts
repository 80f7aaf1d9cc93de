import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config.ts';
import { parseWebhookSecret, webhookHeaders, webhookSignature } from '../../lib/webhooks/signature.ts';
import { verifyStandardWebhook } from '../helpers/standard-webhooks.ts';

// The Standard Webhooks reference implementations' own test vector.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const BODY = '{"id":"evt_01","type":"order.succeeded","data":{"order_id":"Order-1"}}';

describe('Standard Webhooks signing (docs/app.md "Webhooks")', () => {
  it('signs the specification’s test vector exactly as its reference implementations do', () => {
    const key = parseWebhookSecret('secret', VECTOR.secret);

    expect(webhookSignature(key, VECTOR.id, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
  });

  it('sends webhook-id, this attempt’s unix seconds and a signature a receiver verifies', () => {
    const now = Date.parse('2026-01-02T03:04:05.678Z');
    const headers = webhookHeaders(parseWebhookSecret('secret', SECRET), 'evt_01', now, BODY);

    expect(headers['webhook-id']).toBe('evt_01');
    expect(headers['webhook-timestamp']).toBe(String(Math.floor(now / 1000)));
    expect(headers['content-type']).toBe('application/json');
    expect(verifyStandardWebhook(SECRET, BODY, headers, Math.floor(now / 1000))).toEqual(JSON.parse(BODY));
  });

  it('fails verification with another secret, an altered body, another id or timestamp', () => {
    const now = Date.now();
    const seconds = Math.floor(now / 1000);
    const headers = webhookHeaders(parseWebhookSecret('secret', SECRET), 'evt_01', now, BODY);
    const other = `whsec_${Buffer.alloc(32, 8).toString('base64')}`;

    expect(() => verifyStandardWebhook(other, BODY, headers, seconds)).toThrow('No matching signature');
    expect(() => verifyStandardWebhook(SECRET, BODY.replace('Order-1', 'Order-2'), headers, seconds)).toThrow(
      'No matching signature',
    );
    expect(() =>
      verifyStandardWebhook(SECRET, BODY, { ...headers, 'webhook-id': 'evt_02' }, seconds),
    ).toThrow('No matching signature');
    expect(() =>
      verifyStandardWebhook(SECRET, BODY, { ...headers, 'webhook-timestamp': String(seconds + 1) }, seconds),
    ).toThrow('No matching signature');
  });

  it.each([
    ['no prefix', Buffer.alloc(32).toString('base64')],
    ['not base64', 'whsec_not*base64'],
    ['a key of 16 bytes', `whsec_${Buffer.alloc(16).toString('base64')}`],
    ['a key of 65 bytes', `whsec_${Buffer.alloc(65).toString('base64')}`],
  ])('refuses a secret with %s, naming the variable only', (_case, text) => {
    expect(() => parseWebhookSecret('MERCHANT_WEBHOOK_SECRET', text)).toThrow(ConfigError);
    expect(() => parseWebhookSecret('MERCHANT_WEBHOOK_SECRET', text)).toThrow(
      /^Invalid configuration: MERCHANT_WEBHOOK_SECRET/,
    );
  });
});
