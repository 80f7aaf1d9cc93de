import {
  ConfigError,
  type Env,
  httpsOrigins,
  httpsUrl,
  settleDelayMs,
  wholeNumber,
} from '../config/config.ts';

/**
 * How orders are priced and where PayHere reports on them (docs/contract.md "Prices" and "notify_url").
 * - pricing `merchant` (default): a customer charges only an order the merchant priced for it;
 *   `client`: the app prices its own orders (a customer can then pay what it likes).
 * - publicBaseUrl: the API's public base URL; its `/gateway/notify` is set as every charge's
 *   notify_url and every checkout's.
 * - notifyUrlOrigins: origins a request's own notify_url may point at (none by default).
 */
export interface OrdersConfig {
  pricing: 'merchant' | 'client';
  publicBaseUrl: string | undefined;
  notifyUrlOrigins: readonly string[];
  /**
   * How long after a money request's window closed (or a success was reported) PayHere's records
   * showing nothing settle it as not done (SETTLE_DELAY_SECONDS, default 10 minutes).
   */
  settleDelayMs: number;
  /**
   * How far apart the two looks at PayHere's records that must both show nothing before an unknown
   * charge is settled as not done (SETTLE_SECOND_LOOK_SECONDS, default one settle interval, two
   * minutes): a payment PayHere finishes late has time to show.
   */
  secondLookMs: number;
  /**
   * How long a charge PayHere answered pending waits for its payment's notification before
   * PayHere's records decide it (PENDING_CHARGE_LIMIT_SECONDS, default one day).
   */
  pendingLimitMs: number;
  /** How long notifications' identities and what is kept apart stay (NOTIFICATION_KEEP_DAYS, default 90). */
  notificationKeepDays: number;
  /**
   * Declined or refused charges an order takes per window before it refuses more (card testing
   * through the merchant's account): ORDER_FAILED_ATTEMPTS, default 3 an hour.
   */
  failedAttempts: { count: number; windowMs: number };
}

export function loadOrdersConfig(env: Env): OrdersConfig {
  const pricing = env.CHARGE_PRICING?.trim() || 'merchant';
  if (pricing !== 'merchant' && pricing !== 'client') {
    throw new ConfigError('Invalid configuration: CHARGE_PRICING must be merchant or client.');
  }
  const base = env.PUBLIC_BASE_URL?.trim();
  return {
    pricing,
    publicBaseUrl: base ? httpsUrl('PUBLIC_BASE_URL', base).href.replace(/\/+$/, '') : undefined,
    notifyUrlOrigins: httpsOrigins('NOTIFY_URL_ORIGINS', env.NOTIFY_URL_ORIGINS),
    settleDelayMs: settleDelayMs(env),
    secondLookMs: wholeNumber(env, 'SETTLE_SECOND_LOOK_SECONDS', 120, 0) * 1000,
    pendingLimitMs: wholeNumber(env, 'PENDING_CHARGE_LIMIT_SECONDS', 86_400, 1) * 1000,
    notificationKeepDays: wholeNumber(env, 'NOTIFICATION_KEEP_DAYS', 90, 1),
    failedAttempts: attemptsPerWindow(env),
  };
}

/** ORDER_FAILED_ATTEMPTS's default: 3 an hour. */
export const DEFAULT_FAILED_ATTEMPTS = { count: 3, windowMs: 3_600_000 };

function attemptsPerWindow(env: Env): { count: number; windowMs: number } {
  const text = env.ORDER_FAILED_ATTEMPTS?.trim();
  if (!text) return { ...DEFAULT_FAILED_ATTEMPTS };
  const match = /^([1-9][0-9]{0,5})\/([1-9][0-9]{3,9})$/.exec(text);
  if (!match) {
    throw new ConfigError(
      'Invalid configuration: ORDER_FAILED_ATTEMPTS must be <attempts>/<milliseconds>, e.g. 3/3600000.',
    );
  }
  return { count: Number(match[1]), windowMs: Number(match[2]) };
}

export const NOTIFY_PATH = '/gateway/notify';
