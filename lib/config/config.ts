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
  /**
   * How many containers may call PayHere on their own shares at once (GATEWAY_FALLBACK_CONTAINERS,
   * the reserved concurrency of the functions that set it); 0, the default: no container has a
   * share of its own, and calls wait for the table (docs/budget.md "The fallback").
   */
  fallbackContainers: number;
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
  return wholeNumber(env, 'SETTLE_DELAY_SECONDS', 600, 0) * 1000;
}

/** The region Lambda runs in (AWS_REGION); the service's home region in local runs. */
export function awsRegion(env: Env): string {
  return env.AWS_REGION?.trim() || 'ap-south-1';
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

function gatewayBaseUrl(env: Env): string {
  return httpsUrl('GATEWAY_BASE_URL', required(env, 'GATEWAY_BASE_URL')).href.replace(/\/+$/, '');
}

/** `<requests>/<milliseconds>` from `name`, or `fallback` when it is blank. */
function rateLimit(env: Env, name: string, fallback: Config['rateLimit']): Config['rateLimit'] {
  const value = env[name]?.trim();
  if (!value) return fallback;
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

export function loadConfig(env: Env): Config {
  const secretId = env.GATEWAY_SECRET_ID?.trim();
  return {
    gatewayBaseUrl: gatewayBaseUrl(env),
    credentials: secretId
      ? { source: 'secret', secretId }
      : {
          source: 'env',
          value: {
            appId: required(env, 'GATEWAY_APP_ID'),
            appSecret: required(env, 'GATEWAY_APP_SECRET'),
            // Only checkouts and notifications need these (requireMerchantCredentials): optional here.
            merchantId: env.GATEWAY_MERCHANT_ID?.trim() ?? '',
            merchantSecret: env.GATEWAY_MERCHANT_SECRET?.trim() ?? '',
            appMerchantSecrets: (env.GATEWAY_APP_MERCHANT_SECRETS ?? '')
              .split(',')
              .map((secret) => secret.trim())
              .filter((secret) => secret !== ''),
          },
        },
    ...budgetLimits(env),
  };
}

/**
 * PayHere's budget and the containers' own shares. Those shares are slots of the budget the table
 * never gives out, so they must fit in it with a slot to spare, and each must count over a window
 * at least as long as the budget's (a container's calls in any window are then at most its share).
 */
function budgetLimits(env: Env): Pick<Config, 'rateLimit' | 'fallbackRateLimit' | 'fallbackContainers'> {
  const budget = rateLimit(env, 'GATEWAY_RATE_LIMIT', PAYHERE_RATE_LIMIT);
  const fallback = rateLimit(env, 'GATEWAY_RATE_LIMIT_FALLBACK', DEFAULT_FALLBACK_RATE_LIMIT);
  const containers = wholeNumber(env, 'GATEWAY_FALLBACK_CONTAINERS', 0, 0);
  if (
    containers > 0 &&
    (containers * fallback.limit >= budget.limit || fallback.windowMs < budget.windowMs)
  ) {
    throw new ConfigError(
      'Invalid configuration: GATEWAY_FALLBACK_CONTAINERS × GATEWAY_RATE_LIMIT_FALLBACK must stay below GATEWAY_RATE_LIMIT, over a window at least as long.',
    );
  }
  return { rateLimit: budget, fallbackRateLimit: fallback, fallbackContainers: containers };
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

/** Gateway credentials given in the environment (local runs): nothing to refresh. */
export function environmentGatewayCredentials(value: GatewayCredentials): CredentialsProvider {
  return { get: async () => value, invalidate: () => {} };
}
