import * as z from 'zod/mini';
import { ConfigError, type Env, httpsUrl } from '../config/config.ts';
import { SECRET_MAX_AGE_MS, type SecretsClient, secretsClientFor } from '../config/secrets.ts';
import { describeError, log } from '../log/log.ts';
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
    if (ids.length === 0 || ids.some((id) => !ENDPOINT_ID.test(id)) || new Set(ids).size !== ids.length) {
      throw new ConfigError(
        'Invalid configuration: MERCHANT_WEBHOOK_ENDPOINT_IDS must list the endpoints’ ids (a-z, 0-9, -; at most 32 characters each), comma-separated, once each.',
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

const SecretDocument = z.array(z.object({ id: z.string(), url: z.string(), secret: z.string() }));

/** A secret that cannot be used: the log names the secret and the problem, never its content. */
export class WebhookSecretError extends Error {
  constructor(secretId: string, problem: string) {
    super(`The webhook secret ${secretId} ${problem}.`);
    this.name = 'WebhookSecretError';
  }
}

function parseSecret(secretId: string, text: string | undefined): Map<string, WebhookEndpoint> {
  let json: unknown;
  try {
    json = JSON.parse(text ?? '');
  } catch {
    throw new WebhookSecretError(secretId, 'is not JSON');
  }
  const parsed = SecretDocument.safeParse(json);
  if (!parsed.success) throw new WebhookSecretError(secretId, 'is not a list of {id, url, secret}');
  const endpoints = new Map<string, WebhookEndpoint>();
  for (const entry of parsed.data) {
    let url: URL;
    let key: Buffer;
    try {
      url = new URL(entry.url);
      key = parseWebhookSecret('secret', entry.secret);
    } catch {
      throw new WebhookSecretError(secretId, `has an invalid url or secret for endpoint ${entry.id}`);
    }
    // A deployed stage delivers over https only: an event is the merchant's business.
    if (url.protocol !== 'https:')
      throw new WebhookSecretError(secretId, `has a url that is not https for endpoint ${entry.id}`);
    endpoints.set(entry.id, { id: entry.id, url: url.href, key });
  }
  return endpoints;
}

export interface SecretWebhookEndpointsOptions {
  secretId: string;
  client: SecretsClient;
  now?: () => number;
  maxAgeMs?: number;
}

/** The endpoints kept in a secret: read on first use, kept `maxAgeMs`; a failed read is not kept. */
export function secretWebhookEndpoints(options: SecretWebhookEndpointsOptions): WebhookEndpoints {
  const now = options.now ?? Date.now;
  const maxAgeMs = options.maxAgeMs ?? SECRET_MAX_AGE_MS;
  let cached: { value: Map<string, WebhookEndpoint>; at: number } | undefined;
  let pending: Promise<Map<string, WebhookEndpoint>> | undefined;
  async function read(): Promise<Map<string, WebhookEndpoint>> {
    const at = now();
    let text: string | undefined;
    try {
      ({ SecretString: text } = await options.client.getSecretValue({ SecretId: options.secretId }));
    } catch (error) {
      log.error('the webhook secret cannot be read', {
        secretId: options.secretId,
        error: describeError(error),
      });
      throw error;
    }
    const value = parseSecret(options.secretId, text);
    cached = { value, at };
    return value;
  }
  return {
    get() {
      if (cached && now() - cached.at < maxAgeMs) return Promise.resolve(cached.value);
      pending ??= read().finally(() => {
        pending = undefined;
      });
      return pending;
    },
  };
}

/** The configured endpoints, from the environment or the secret. */
export function webhookEndpointsFor(source: WebhookSource, env: Env = process.env): WebhookEndpoints {
  if (source.kind === 'secret') {
    return secretWebhookEndpoints({ secretId: source.secretId, client: secretsClientFor(env) });
  }
  const endpoints = new Map(source.kind === 'env' ? [[source.endpoint.id, source.endpoint]] : []);
  return { get: () => Promise.resolve(endpoints) };
}
