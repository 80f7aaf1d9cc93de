import * as z from 'zod/mini';
import type { Env } from '../config/config.ts';
import { SECRET_MAX_AGE_MS, type SecretsClient, secretsClientFor } from '../config/secrets.ts';
import { describeError, log } from '../log/log.ts';
import {
  environmentWebhookEndpoints,
  type WebhookEndpoint,
  type WebhookEndpoints,
  type WebhookSource,
} from './endpoints.ts';
import { parseWebhookSecret } from './signature.ts';

/**
 * The endpoints of a deployed stage: their URLs and secrets in one Secrets Manager secret
 * (MERCHANT_WEBHOOKS_SECRET_ID), JSON `[{"id", "url", "secret"}]`, https only, read at the first
 * delivery and kept 5 minutes, as the gateway credentials are (lib/config/secrets.ts).
 */
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

/**
 * The configured endpoints, from the environment or the secret. Apart from ./endpoints.ts so that
 * only the deliverer bundles the Secrets Manager client: the routes and the relay never read it.
 */
export function webhookEndpointsFor(source: WebhookSource, env: Env = process.env): WebhookEndpoints {
  if (source.kind === 'secret') {
    return secretWebhookEndpoints({ secretId: source.secretId, client: secretsClientFor(env) });
  }
  return environmentWebhookEndpoints(source);
}
