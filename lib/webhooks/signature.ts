import { createHmac } from 'node:crypto';
import { ConfigError } from '../config/config.ts';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): a delivery carries `webhook-id`
 * (the event's id, the same on every attempt, so a receiver drops a repeat), `webhook-timestamp`
 * (this attempt's unix seconds, so a receiver refuses an old replay) and `webhook-signature`
 * (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`), keyed with the endpoint's secret:
 * `whsec_` then base64, the key being the decoded bytes. Any Standard Webhooks library verifies it.
 */
export const SECRET_PREFIX = 'whsec_';

/** The spec asks for keys of 24 to 64 bytes; shorter ones are guessable, longer ones unusual. */
const KEY_BYTES = { least: 24, most: 64 };

/** The key bytes of a `whsec_<base64>` secret, or a ConfigError naming `name` (never the value). */
export function parseWebhookSecret(name: string, text: string): Buffer {
  const encoded = text.startsWith(SECRET_PREFIX) ? text.slice(SECRET_PREFIX.length) : undefined;
  if (encoded === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) {
    throw new ConfigError(`Invalid configuration: ${name} must be a whsec_<base64> webhook secret.`);
  }
  const key = Buffer.from(encoded, 'base64');
  if (key.length < KEY_BYTES.least || key.length > KEY_BYTES.most) {
    throw new ConfigError(
      `Invalid configuration: ${name} must hold ${KEY_BYTES.least} to ${KEY_BYTES.most} bytes after whsec_.`,
    );
  }
  return key;
}

/** `v1,<signature>` of one attempt. */
export function webhookSignature(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The headers of one attempt to deliver `body` as event `id`, at `nowMs`. */
export function webhookHeaders(key: Buffer, id: string, nowMs: number, body: string): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': webhookSignature(key, id, timestamp, body),
  };
}
