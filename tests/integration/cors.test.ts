import { afterEach, describe, expect, it, vi } from 'vitest';

// Read once per container, when a handler loads (the deploy sets it from CORS_ORIGINS).
process.env.CORS_ORIGINS = 'https://app.example.com, http://localhost:5173';

import { SEED } from '../../sandbox/server.ts';
import { trustTestIssuer, withToken } from '../helpers/auth.ts';
import { apiEvent, invoke } from '../helpers/events.ts';
import { call, handlerOf, useTestGateway } from '../helpers/gateway.ts';
import { ROUTES } from '../helpers/routes.ts';

/**
 * With CORS_ORIGINS set, a function's answer lets exactly those browser origins read it, whatever
 * the answer (success, refusal before authentication, replay); API Gateway answers the preflight
 * (tests/e2e/package-production.test.ts checks it in the template).
 */
useTestGateway();

afterEach(() => {
  vi.unstubAllEnvs();
});

const EXPOSED = 'Idempotent-Replayed, Retry-After, Age';

const chargeBody = () => ({
  type: 'PAYMENT',
  order_id: `Cors-${Math.random().toString(36).slice(2, 10)}`,
  items: 'Taxi Hire 123',
  currency: 'LKR',
  amount: 345.67,
  customer_token: SEED.customerTokens.success,
});

describe('an answer to a listed origin', () => {
  it.each(['https://app.example.com', 'http://localhost:5173'])(
    'echoes %s and exposes the service headers',
    async (origin) => {
      const answer = await call('listSubscriptions', { headers: { Origin: origin } });

      expect(answer.statusCode).toBe(200);
      expect(answer.headers).toMatchObject({
        'Access-Control-Allow-Origin': origin,
        'Access-Control-Expose-Headers': EXPOSED,
        Vary: 'Origin',
      });
      expect(answer.headers['Access-Control-Allow-Credentials']).toBeUndefined();
    },
  );

  it('reaches a refusal made before the caller is known', async () => {
    const answer = await call('charge', {
      headers: { Authorization: '', origin: 'https://app.example.com' },
    });

    expect(answer.statusCode).toBe(401);
    expect(answer.headers).toMatchObject({
      'Access-Control-Allow-Origin': 'https://app.example.com',
      Vary: 'Origin',
      'Cache-Control': 'no-store',
    });
  });

  it('is added to a replay for whichever origin asks now, never stored with the answer', async () => {
    const body = chargeBody();
    const key = `cors-${body.order_id}`;
    await call('charge', { body, idempotencyKey: key, headers: { Origin: 'https://app.example.com' } });

    const fromApp = await call('charge', {
      body,
      idempotencyKey: key,
      headers: { Origin: 'http://localhost:5173' },
    });
    const fromNative = await call('charge', { body, idempotencyKey: key });

    expect(fromApp.headers).toMatchObject({
      'Idempotent-Replayed': 'true',
      'Access-Control-Allow-Origin': 'http://localhost:5173',
    });
    expect(fromNative.headers['Idempotent-Replayed']).toBe('true');
    expect(fromNative.headers['Access-Control-Allow-Origin']).toBeUndefined();
  });
});

describe('an answer to any other request', () => {
  it.each([
    ['an origin not listed', { Origin: 'https://evil.example.com' }],
    ['a listed host on another scheme', { Origin: 'http://app.example.com' }],
    ['a listed origin with a trailing slash', { Origin: 'https://app.example.com/' }],
    ['the origin "null"', { Origin: 'null' }],
    ['no origin (a native app)', {}],
  ])('%s: nothing allowed, only Vary: Origin', async (_, headers) => {
    const answer = await call('listSubscriptions', { headers });

    expect(answer.statusCode).toBe(200);
    expect(answer.headers.Vary).toBe('Origin');
    expect(answer.headers['Access-Control-Allow-Origin']).toBeUndefined();
    expect(answer.headers['Access-Control-Expose-Headers']).toBeUndefined();
  });

  it('two Origin headers, even both listed: nothing allowed', async () => {
    const event = apiEvent({
      ...ROUTES.listSubscriptions,
      headers: await withToken('listSubscriptions', { Origin: 'https://app.example.com' }),
    });
    event.multiValueHeaders.Origin = ['https://app.example.com', 'http://localhost:5173'];

    const answer = await invoke(await handlerOf('listSubscriptions'), event);

    expect(answer.headers['Access-Control-Allow-Origin']).toBeUndefined();
  });
});

describe('a CORS_ORIGINS a function cannot use', () => {
  it.each([
    ['a plain http origin beyond loopback', 'http://app.example.com'],
    ['a path', 'https://app.example.com/app'],
    ['a wildcard', '*'],
  ])('%s stops the function at start-up, naming CORS_ORIGINS', async (_, value) => {
    vi.resetModules();
    vi.stubEnv('CORS_ORIGINS', value);
    trustTestIssuer();

    await expect(import('../../functions/getCheckout.ts')).rejects.toThrow(
      /^Invalid configuration: CORS_ORIGINS /,
    );
  });
});
