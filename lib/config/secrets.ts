import * as z from 'zod/mini';
import { type GetSecretValueInput, SecretsManagerClient } from '../aws/secrets-manager.ts';
import { GatewayUnavailableError } from '../envelope/errors.ts';
import { describeError, log } from '../log/log.ts';
import {
  awsRegion,
  type Config,
  type CredentialsProvider,
  type Env,
  environmentGatewayCredentials,
  type GatewayCredentials,
  httpUrl,
} from './config.ts';

/** Credentials are looked up again at least this often (docs/contract.md "Secrets and configuration"). */
export const SECRET_MAX_AGE_MS = 5 * 60_000;

/** The secret's JSON document; extra fields are tolerated (rotation lambdas add some). */
const SecretDocument = z.object({
  app_id: z.string().check(z.minLength(1)),
  app_secret: z.string().check(z.minLength(1)),
  merchant_id: z.string().check(z.minLength(1)),
  merchant_secret: z.string().check(z.minLength(1)),
  app_merchant_secrets: z.optional(z.array(z.string().check(z.minLength(1)))),
});

/** The part of the Secrets Manager client this module uses: one GetSecretValue. */
export interface SecretsClient {
  getSecretValue(input: GetSecretValueInput): Promise<{ SecretString?: string | undefined }>;
}

export interface SecretGatewayCredentialsOptions {
  /** Name or ARN of the secret (GATEWAY_SECRET_ID). */
  secretId: string;
  client: SecretsClient;
  /** Clock (ms); tests move it. */
  now?: () => number;
  maxAgeMs?: number;
}

/**
 * A lost answer must not eat the Lambda's whole budget: Secrets Manager answers in milliseconds or
 * not at all, and one retry covers a dropped connection. Where it is: the region Lambda runs in,
 * or AWS_ENDPOINT_URL_SECRETS_MANAGER (the SDK's name for the override, which local runs, the
 * tests and the bench set to a loopback stand-in), checked at start-up. Making the client opens
 * no connection: the first secret does.
 */
export function secretsClientFor(env: Env): SecretsClient {
  const endpoint = env.AWS_ENDPOINT_URL_SECRETS_MANAGER?.trim();
  if (endpoint) httpUrl('AWS_ENDPOINT_URL_SECRETS_MANAGER', endpoint);
  return new SecretsManagerClient({
    region: awsRegion(env),
    endpoint: endpoint || undefined,
    maxAttempts: 2,
    connectTimeoutMs: 2_000,
    requestTimeoutMs: 3_000,
  });
}

/**
 * The operator's log line names the secret and what is wrong with it, never its content (a parse
 * error would quote it); the caller learns only that the credentials are unavailable: a secret's
 * name or ARN (with the account id) is the service's business.
 */
function unusable(secretId: string, problem: string, cause?: unknown): GatewayUnavailableError {
  log.error('the gateway credentials are unavailable', {
    secretId,
    problem: `the secret ${problem}`,
    ...(cause === undefined ? {} : { error: describeError(cause) }),
  });
  return new GatewayUnavailableError(
    'The payment gateway credentials are unavailable right now; try again later.',
    cause,
  );
}

function parseSecret(secretId: string, text: string | undefined): GatewayCredentials {
  if (text === undefined) throw unusable(secretId, 'has no string value');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw unusable(secretId, 'is not JSON');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw unusable(secretId, 'is not a JSON object');
  }
  const parsed = SecretDocument.safeParse(json);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((issue) => String(issue.path[0])))];
    throw unusable(secretId, `lacks a non-empty ${fields.join(', ')}`);
  }
  const document = parsed.data;
  return {
    appId: document.app_id,
    appSecret: document.app_secret,
    merchantId: document.merchant_id,
    merchantSecret: document.merchant_secret,
    appMerchantSecrets: document.app_merchant_secrets ?? [],
  };
}

/**
 * Gateway credentials from one Secrets Manager secret: fetched on first use, kept for at most
 * `maxAgeMs`, fetched again at once after `invalidate` (the gateway rejected them: rotated).
 * Concurrent callers share one fetch; a failed fetch is not kept, so the next call tries again.
 */
export function secretGatewayCredentials(options: SecretGatewayCredentialsOptions): CredentialsProvider {
  const { secretId } = options;
  const now = options.now ?? Date.now;
  const maxAgeMs = options.maxAgeMs ?? SECRET_MAX_AGE_MS;
  const { client } = options;
  let cached: { value: GatewayCredentials; fetchedAt: number } | undefined;
  let pending: Promise<GatewayCredentials> | undefined;

  async function fetchSecret(): Promise<GatewayCredentials> {
    const startedAt = now();
    let text: string | undefined;
    try {
      ({ SecretString: text } = await client.getSecretValue({ SecretId: secretId }));
    } catch (error) {
      throw unusable(secretId, 'cannot be read', error);
    }
    const value = parseSecret(secretId, text);
    cached = { value, fetchedAt: startedAt };
    log.debug('gateway credentials loaded', { secretId });
    return value;
  }

  return {
    get() {
      if (cached && now() - cached.fetchedAt < maxAgeMs) return Promise.resolve(cached.value);
      pending ??= fetchSecret().finally(() => {
        pending = undefined;
      });
      return pending;
    },
    invalidate() {
      cached = undefined;
    },
  };
}

/** Where the configuration says the credentials are: the environment (local runs) or the secret. */
export function credentialsFor(config: Config, env: Env = process.env): CredentialsProvider {
  if (config.credentials.source === 'env') return environmentGatewayCredentials(config.credentials.value);
  return secretGatewayCredentials({ secretId: config.credentials.secretId, client: secretsClientFor(env) });
}
