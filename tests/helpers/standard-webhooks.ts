import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * A receiver's check of a delivery, written from the Standard Webhooks specification alone (not from
 * lib/webhooks/): the key is the base64 after `whsec_`; the signed content `<webhook-id>.<webhook-timestamp>.<body>`;
 * `webhook-signature` is a space-separated list of `v1,<base64 HMAC-SHA256>`, one of which must match;
 * a timestamp more than 5 minutes from the receiver's clock is refused. Answers the parsed body, or
 * throws, as the `standardwebhooks` library's `Webhook.verify` does.
 */
export function verifyStandardWebhook(
  secret: string,
  body: string,
  headers: Record<string, string | undefined>,
  nowSeconds = Math.floor(Date.now() / 1000),
): unknown {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures) throw new Error('Missing required headers');
  const seconds = Number(timestamp);
  if (!Number.isInteger(seconds)) throw new Error('Invalid Signature Headers');
  if (Math.abs(nowSeconds - seconds) > 300) throw new Error('Message timestamp too old or too new');
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  for (const entry of signatures.split(' ')) {
    const [version, value] = entry.split(',');
    if (version !== 'v1' || value === undefined) continue;
    const given = Buffer.from(value, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return JSON.parse(body);
  }
  throw new Error('No matching signature found');
}
