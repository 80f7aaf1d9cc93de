import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config.ts';
import { loadOrdersConfig } from '../../lib/orders/config.ts';

describe('loadOrdersConfig', () => {
  it('defaults to merchant pricing, no public base URL and no other notification origins', () => {
    expect(loadOrdersConfig({})).toEqual({
      pricing: 'merchant',
      publicBaseUrl: undefined,
      notifyUrlOrigins: [],
      settleDelayMs: 600_000,
      pendingLimitMs: 86_400_000,
      notificationKeepDays: 90,
      failedAttempts: { count: 3, windowMs: 3_600_000 },
    });
  });

  it('reads client pricing, the public base URL without a trailing slash, and the allowed origins', () => {
    expect(
      loadOrdersConfig({
        CHARGE_PRICING: 'client',
        PUBLIC_BASE_URL: 'https://pay.example.com/prod/',
        NOTIFY_URL_ORIGINS: 'https://hooks.example.com, https://other.example.com:8443',
        SETTLE_DELAY_SECONDS: '120',
        PENDING_CHARGE_LIMIT_SECONDS: '3600',
        NOTIFICATION_KEEP_DAYS: '30',
        ORDER_FAILED_ATTEMPTS: '5/86400000',
      }),
    ).toEqual({
      pricing: 'client',
      publicBaseUrl: 'https://pay.example.com/prod',
      notifyUrlOrigins: ['https://hooks.example.com', 'https://other.example.com:8443'],
      settleDelayMs: 120_000,
      pendingLimitMs: 3_600_000,
      notificationKeepDays: 30,
      failedAttempts: { count: 5, windowMs: 86_400_000 },
    });
  });

  it('accepts http on loopback only (npm start)', () => {
    expect(loadOrdersConfig({ PUBLIC_BASE_URL: 'http://127.0.0.1:3000' }).publicBaseUrl).toBe(
      'http://127.0.0.1:3000',
    );
  });

  it.each([
    ['CHARGE_PRICING', { CHARGE_PRICING: 'app' }],
    ['PUBLIC_BASE_URL', { PUBLIC_BASE_URL: 'http://pay.example.com' }],
    ['PUBLIC_BASE_URL', { PUBLIC_BASE_URL: 'not a url' }],
    ['NOTIFY_URL_ORIGINS', { NOTIFY_URL_ORIGINS: 'http://hooks.example.com' }],
    ['NOTIFY_URL_ORIGINS', { NOTIFY_URL_ORIGINS: 'https://hooks.example.com/notify' }],
    ['SETTLE_DELAY_SECONDS', { SETTLE_DELAY_SECONDS: '10m' }],
    ['SETTLE_DELAY_SECONDS', { SETTLE_DELAY_SECONDS: '-5' }],
    ['NOTIFICATION_KEEP_DAYS', { NOTIFICATION_KEEP_DAYS: '0' }],
    ['ORDER_FAILED_ATTEMPTS', { ORDER_FAILED_ATTEMPTS: '3 an hour' }],
  ])('refuses a bad %s, naming it', (name, env) => {
    expect(() => loadOrdersConfig(env)).toThrow(ConfigError);
    expect(() => loadOrdersConfig(env)).toThrow(name);
  });
});
