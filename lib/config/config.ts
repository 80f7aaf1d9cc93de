import * as z from 'zod/mini';

export interface GatewayCredentials {
  appId: string;
  appSecret: string;
  merchantId: string;
  merchantSecret: string;
  /** The merchant secrets of the merchant's apps: PayHere signs SDK payments with the app's own. */
  appMerchantSecrets: readonly string[];
}

/** Where the gateway credentials come from; the client only ever sees this interface. */
export interface CredentialsProvider {
  get(): Promise<GatewayCredentials>;
  /** The gateway rejected the credentials: the next `get` must look again (they may have rotated). */
  invalidate(): void;
}

export interface Config {
  gatewayBaseUrl: string;
  credentials: { source: 'env'; value: GatewayCredentials } | { source: 'secret'; secretId: string };
  rateLimit: { limit: number; windowMs: number };
  /** Each container's own share while the shared budget's table cannot be reached. */
  fallbackRateLimit: { limit: number; windowMs: number };
}

/** Configuration that cannot work: names the variable, never its value. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export type Env = Record<string, string | undefined>;

/** The trimmed value of `name`, or a ConfigError naming it. */
export function required(env: Env, name: string): string {
  const value = env[name]?.trim();
  if (!value) throw new ConfigError(`Missing configuration: set ${name}.`);
  return value;
}

/** A whole number from `name`, `fallback` when unset; anything else fails, naming the variable. */
export function wholeNumber(env: Env, name: string, fallback: number, least: number): number {
  const text = env[name]?.trim();
  if (!text) return fallback;
  const value = Number(text);
  if (!/^[0-9]{1,9}$/.test(text) || value < least) {
    throw new ConfigError(`Invalid configuration: ${name} must be a whole number, at least ${least}.`);
  }
  return value;
}

/**
 * How long after a money request's window closed (or a success was reported) PayHere's records
 * showing nothing settle it as not done (SETTLE_DELAY_SECONDS, default 10 minutes).
 */
export function settleDelayMs(env: Env): number {
  return configEnvironment(env).SETTLE_DELAY_SECONDS * 1000;
}

/** The region Lambda runs in (AWS_REGION); the service's home region in local runs. */
export function awsRegion(env: Env): string {
  return configEnvironment(env).AWS_REGION;
}

/** `value` (the trimmed value of `name`) if it is an absolute http(s) URL, or a ConfigError naming `name`. */
export function httpUrl(name: string, value: string): string {
  let protocol: string | undefined;
  try {
    protocol = new URL(value).protocol;
  } catch {
    // reported below
  }
  if (protocol !== 'https:' && protocol !== 'http:') {
    throw new ConfigError(`Invalid configuration: ${name} must be an absolute http(s) URL.`);
  }
  return value;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * `value` (the trimmed value of `name`) as a URL if it is absolute https, or http on loopback for
 * local runs; otherwise a ConfigError naming `name`. What goes over plain HTTP beyond this machine
 * (app credentials, keys, notifications) can be read or changed on the way.
 */
export function httpsUrl(name: string, value: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    // reported below
  }
  const loopback = url?.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (!url || (url.protocol !== 'https:' && !loopback)) {
    throw new ConfigError(
      `Invalid configuration: ${name} must be an absolute https URL (http only on loopback).`,
    );
  }
  return url;
}

/**
 * A comma-separated list of origins (`https://host[:port]`, http only on loopback), each as a
 * browser sends it in `Origin`; empty when `value` is. Anything else (a path, a wildcard, user
 * info) is a ConfigError naming `name`: an origin matches exactly or not at all.
 */
export function httpsOrigins(name: string, value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const url = httpsUrl(name, entry);
      if (url.href !== `${url.origin}/` || !/^([a-z0-9.-]+|\[[0-9a-f:.]+\])$/.test(url.hostname)) {
        throw new ConfigError(
          `Invalid configuration: ${name} must list origins only (https://host[:port], comma-separated).`,
        );
      }
      return url.origin;
    });
}

/** `<requests>/<milliseconds>` from `name`'s value. */
function rateLimit(name: string, value: string): Config['rateLimit'] {
  const match = /^(\d+)\/(\d+)$/.exec(value);
  const limit = Number(match?.[1]);
  const windowMs = Number(match?.[2]);
  if (!match || limit < 1 || windowMs < 1) {
    throw new ConfigError(`Invalid configuration: ${name} must look like 20/10000 (requests/ms).`);
  }
  return { limit, windowMs };
}

/** PayHere's limit: 20 requests per 10 seconds per merchant, all endpoints together. */
const PAYHERE_RATE_LIMIT = { limit: 20, windowMs: 10_000 };
/**
 * A container's own share while the shared table cannot be reached: 2 per 10 s (one of them
 * reserved for money calls and tokens), so ten containers cut off from the table at once still
 * stay within PayHere's 20.
 */
export const DEFAULT_FALLBACK_RATE_LIMIT = { limit: 2, windowMs: 10_000 };

/** A variable's value, trimmed; blank is unset. */
const text = z.pipe(
  z.optional(z.string()),
  z.transform((value) => value?.trim() || undefined),
);

/**
 * A variable read by `read` when it is set (its ConfigError, which names the variable and never
 * the value, is the issue's message), `fallback` when it is not.
 */
function variable<T>(read: (value: string) => T): z.ZodMiniType<T | undefined>;
function variable<T>(read: (value: string) => T, fallback: T): z.ZodMiniType<T>;
function variable<T>(read: (value: string) => T, fallback?: T) {
  return z.pipe(
    text,
    z.transform((value, ctx) => {
      if (value === undefined) return fallback;
      try {
        return read(value);
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        ctx.issues.push({ code: 'custom', message: error.message, input: value });
        return z.NEVER;
      }
    }),
  );
}

/**
 * The configuration modules' variables (this module, ./dynamodb.ts, ./secrets.ts) in one schema:
 * each is read, checked and given its default here, once per environment. Which are required
 * depends on the function (credentials from the environment or from a secret): its loader says.
 */
const CONFIG_ENVIRONMENT = z.object({
  GATEWAY_BASE_URL: variable((value) => httpsUrl('GATEWAY_BASE_URL', value).href.replace(/\/+$/, '')),
  GATEWAY_SECRET_ID: text,
  GATEWAY_APP_ID: text,
  GATEWAY_APP_SECRET: text,
  // Only checkouts and notifications need these (requireMerchantCredentials): optional here.
  GATEWAY_MERCHANT_ID: text,
  GATEWAY_MERCHANT_SECRET: text,
  GATEWAY_APP_MERCHANT_SECRETS: variable(
    (value) =>
      value
        .split(',')
        .map((secret) => secret.trim())
        .filter((secret) => secret !== ''),
    [],
  ),
  GATEWAY_RATE_LIMIT: variable((value) => rateLimit('GATEWAY_RATE_LIMIT', value), PAYHERE_RATE_LIMIT),
  GATEWAY_RATE_LIMIT_FALLBACK: variable(
    (value) => rateLimit('GATEWAY_RATE_LIMIT_FALLBACK', value),
    DEFAULT_FALLBACK_RATE_LIMIT,
  ),
  SETTLE_DELAY_SECONDS: variable(
    (value) => wholeNumber({ SETTLE_DELAY_SECONDS: value }, 'SETTLE_DELAY_SECONDS', 600, 0),
    600,
  ),
  AWS_REGION: variable((value) => value, 'ap-south-1'),
  DYNAMODB_ENDPOINT: variable((value) => httpUrl('DYNAMODB_ENDPOINT', value)),
  AWS_ENDPOINT_URL_SECRETS_MANAGER: variable((value) => httpUrl('AWS_ENDPOINT_URL_SECRETS_MANAGER', value)),
});

export type ConfigEnvironment = z.infer<typeof CONFIG_ENVIRONMENT>;
const CONFIG_VARIABLES = Object.keys(CONFIG_ENVIRONMENT.shape);

let parsed: { of: string; environment: ConfigEnvironment } | undefined;

/**
 * `env`'s configuration variables, parsed by the schema: once for as long as their values stay
 * the same (a container's whole life; a test that changes one gets it parsed again). The first
 * variable that cannot work fails it, with a ConfigError naming it.
 */
export function configEnvironment(env: Env): ConfigEnvironment {
  const of = JSON.stringify(CONFIG_VARIABLES.map((name) => env[name]));
  if (parsed?.of !== of) {
    const result = CONFIG_ENVIRONMENT.safeParse(env);
    if (!result.success) throw new ConfigError(result.error.issues[0]!.message);
    parsed = { of, environment: result.data };
  }
  return parsed.environment;
}

/** The trimmed value of `name` in the parsed environment, or a ConfigError naming it. */
function requiredOf<Name extends keyof ConfigEnvironment>(
  environment: ConfigEnvironment,
  name: Name,
): NonNullable<ConfigEnvironment[Name]> {
  const value = environment[name];
  if (value === undefined) throw new ConfigError(`Missing configuration: set ${name}.`);
  return value as NonNullable<ConfigEnvironment[Name]>;
}

export function loadConfig(env: Env): Config {
  const environment = configEnvironment(env);
  const secretId = environment.GATEWAY_SECRET_ID;
  return {
    gatewayBaseUrl: requiredOf(environment, 'GATEWAY_BASE_URL'),
    credentials: secretId
      ? { source: 'secret', secretId }
      : {
          source: 'env',
          value: {
            appId: requiredOf(environment, 'GATEWAY_APP_ID'),
            appSecret: requiredOf(environment, 'GATEWAY_APP_SECRET'),
            merchantId: environment.GATEWAY_MERCHANT_ID ?? '',
            merchantSecret: environment.GATEWAY_MERCHANT_SECRET ?? '',
            appMerchantSecrets: environment.GATEWAY_APP_MERCHANT_SECRETS,
          },
        },
    rateLimit: environment.GATEWAY_RATE_LIMIT,
    fallbackRateLimit: environment.GATEWAY_RATE_LIMIT_FALLBACK,
  };
}

/**
 * For the functions that sign checkouts or verify notifications: in the environment (local runs),
 * the merchant id and secret must be set; a deployed stage's secret document always has them.
 */
export function requireMerchantCredentials(config: Config): void {
  if (config.credentials.source !== 'env') return;
  const { merchantId, merchantSecret } = config.credentials.value;
  if (!merchantId) throw new ConfigError('Missing configuration: set GATEWAY_MERCHANT_ID.');
  if (!merchantSecret) throw new ConfigError('Missing configuration: set GATEWAY_MERCHANT_SECRET.');
}

/** Credentials from the environment (local runs): nothing to refresh. */
export function environmentCredentials(value: GatewayCredentials): CredentialsProvider {
  return { get: async () => value, invalidate: () => {} };
}
