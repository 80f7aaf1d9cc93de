import { ConfigError, type Env, httpsUrl } from '../config/config.ts';
import { parseWebhookSecret } from './signature.ts';

/**
 * The merchant's webhook endpoints (docs/operator.md "Webhooks"). Local runs and tests name one
 * in the environment: MERCHANT_WEBHOOK_URL and MERCHANT_WEBHOOK_SECRET (`whsec_<base64>`), its id
 * `default`, http allowed on loopback. A deployed stage lists its endpoints' ids in
 * MERCHANT_WEBHOOK_ENDPOINT_IDS (comma-separated; what each event is delivered to) and keeps their
 * URLs and secrets in one Secrets Manager secret, MERCHANT_WEBHOOKS_SECRET_ID, JSON
 * `[{"id", "url", "secret"}]`, https only; read at the first delivery and kept 5 minutes, as the
 * gateway credentials are (lib/config/secrets.ts).
 */
export interface WebhookEndpoint {
  id: string;
  url: string;
  /** The signing key: the secret's bytes after `whsec_`. */
  key: Buffer;
}

export const DEFAULT_ENDPOINT_ID = 'default';

const ENDPOINT_ID = /^[a-z0-9][a-z0-9-]{0,31}$/;

export type WebhookSource =
  | { kind: 'none' }
  | { kind: 'env'; endpoint: WebhookEndpoint }
  | { kind: 'secret'; secretId: string; ids: string[] };

/** Where the endpoints come from; a bad variable is a ConfigError naming it (never a secret's value). */
export function webhookSource(env: Env): WebhookSource {
  const secretId = env.MERCHANT_WEBHOOKS_SECRET_ID?.trim();
  if (secretId) {
    const ids = (env.MERCHANT_WEBHOOK_ENDPOINT_IDS ?? '')
      .split(',')
      .map((id) => id.trim())
      .filter((id) => id !== '');
    // A deployed stage always names the secret (serverless.yml's default): no ids, no webhooks.
    if (ids.length === 0) return { kind: 'none' };
    if (ids.some((id) => !ENDPOINT_ID.test(id)) || new Set(ids).size !== ids.length) {
      throw new ConfigError(
        'Invalid configuration: MERCHANT_WEBHOOK_ENDPOINT_IDS must list the endpoints’ ids (a-z, 0-9, -; at most 32 characters each), comma-separated, once each, or be empty (no webhooks).',
      );
    }
    return { kind: 'secret', secretId, ids };
  }
  const url = env.MERCHANT_WEBHOOK_URL?.trim();
  const secret = env.MERCHANT_WEBHOOK_SECRET?.trim();
  if (!url && !secret) return { kind: 'none' };
  if (!url)
    throw new ConfigError('Missing configuration: set MERCHANT_WEBHOOK_URL with MERCHANT_WEBHOOK_SECRET.');
  if (!secret)
    throw new ConfigError('Missing configuration: set MERCHANT_WEBHOOK_SECRET with MERCHANT_WEBHOOK_URL.');
  return {
    kind: 'env',
    endpoint: {
      id: DEFAULT_ENDPOINT_ID,
      url: httpsUrl('MERCHANT_WEBHOOK_URL', url).href,
      key: parseWebhookSecret('MERCHANT_WEBHOOK_SECRET', secret),
    },
  };
}

/**
 * The ids of the endpoints an event published now is to be delivered to (the relay writes one
 * pending delivery per id on the event item): none when no endpoint is configured.
 */
export function webhookEndpointIds(env: Env = process.env): string[] {
  const source = webhookSource(env);
  if (source.kind === 'none') return [];
  return source.kind === 'env' ? [source.endpoint.id] : source.ids;
}

/** The endpoints' URLs and keys, by id. */
export interface WebhookEndpoints {
  get(): Promise<ReadonlyMap<string, WebhookEndpoint>>;
}

/** The endpoint named in the environment (local runs and tests), or none: nothing to read. */
export function environmentWebhookEndpoints(source: WebhookSource): WebhookEndpoints {
  const endpoints = new Map(source.kind === 'env' ? [[source.endpoint.id, source.endpoint]] : []);
  return { get: () => Promise.resolve(endpoints) };
}
