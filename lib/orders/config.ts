import { ConfigError, type Env } from '../config/config.ts';

/**
 * How orders are priced and where PayHere reports on them (SPEC.md "Prices" and "notify_url").
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
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** An https URL (http only on loopback, for local runs), or a ConfigError naming `name`. */
function publicUrl(name: string, value: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    // reported below
  }
  const local = url?.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (!url || (url.protocol !== 'https:' && !local)) {
    throw new ConfigError(`Invalid configuration: ${name} must be an https URL (http only on loopback).`);
  }
  return url;
}

export function loadOrdersConfig(env: Env): OrdersConfig {
  const pricing = env.CHARGE_PRICING?.trim() || 'merchant';
  if (pricing !== 'merchant' && pricing !== 'client') {
    throw new ConfigError('Invalid configuration: CHARGE_PRICING must be merchant or client.');
  }
  const base = env.PUBLIC_BASE_URL?.trim();
  const origins = (env.NOTIFY_URL_ORIGINS ?? '')
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '')
    .map((origin) => {
      const url = publicUrl('NOTIFY_URL_ORIGINS', origin);
      if (url.origin !== origin.replace(/\/$/, '')) {
        throw new ConfigError(
          'Invalid configuration: NOTIFY_URL_ORIGINS must list origins only (scheme://host[:port]).',
        );
      }
      return url.origin;
    });
  return {
    pricing,
    publicBaseUrl: base ? publicUrl('PUBLIC_BASE_URL', base).href.replace(/\/+$/, '') : undefined,
    notifyUrlOrigins: origins,
  };
}

export const NOTIFY_PATH = '/gateway/notify';
