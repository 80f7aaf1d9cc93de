import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import { type ApiClient, accessToken, apiClient, call, manualClock } from './helpers.ts';

const clock = manualClock();
let sandbox: Sandbox;
let api: ApiClient;

beforeAll(async () => {
  sandbox = await startSandbox({ now: clock.now });
});
afterAll(() => sandbox.close());
beforeEach(async () => {
  sandbox.reset();
  clock.advance(60_000);
  api = apiClient(sandbox, await accessToken(sandbox));
});

describe('rate limit (20 requests per 10 s, token included)', () => {
  it('answers the 21st request in the window with 429 and Retry-After, and admits again after the window', async () => {
    // The token request of beforeEach was the first of the 20.
    for (let i = 0; i < 19; i += 1) {
      expect((await api.get('subscription')).status).toBe(200);
    }
    const limited = await api.get('subscription');
    clock.advance(9_999);
    const stillLimited = await api.get('subscription');
    clock.advance(1);
    const admitted = await api.get('subscription');

    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('10');
    expect(limited.json).toEqual({ status: -1, msg: 'Too many requests', data: null });
    expect(stillLimited.status).toBe(429);
    expect(stillLimited.headers.get('retry-after')).toBe('1');
    expect(admitted.status).toBe(200);
  });

  it('slides: requests leave the window one by one', async () => {
    clock.advance(5_000);
    for (let i = 0; i < 19; i += 1) await api.get('subscription');
    clock.advance(5_000);
    // The token request, 5 s older than the others, has left the window: one slot is free.
    const freed = await api.get('subscription');
    const limited = await api.get('subscription');

    expect(freed.status).toBe(200);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('5');
  });

  it('does not change state for a rejected request, and counts it', async () => {
    for (let i = 0; i < 19; i += 1) await api.get('subscription');
    const rejected = await api.post('subscription/cancel', { subscription_id: SEED.subscriptions.active });
    clock.advance(10_000);
    const status = await api.get(`subscription/${SEED.subscriptions.active}`);

    expect(rejected.status).toBe(429);
    expect(status.json.data.status).toBe('ACTIVE');
    expect(sandbox.counters().cancel).toBe(1);
  });

  it('leaves the control interface and paths outside /merchant/v1 unlimited', async () => {
    for (let i = 0; i < 19; i += 1) await api.get('subscription');
    const control = await call(sandbox, 'GET', '/__sandbox/counters');
    const outside = await call(sandbox, 'GET', '/health');

    expect(control.status).toBe(200);
    expect(outside.status).toBe(404);
    expect((await api.get('subscription')).status).toBe(429);
  });

  it('can be configured or disabled', async () => {
    const tight = await startSandbox({ rateLimit: { limit: 2, windowMs: 60_000 } });
    const open = await startSandbox({ rateLimit: false });
    try {
      const tightStatuses = [];
      for (let i = 0; i < 3; i += 1)
        tightStatuses.push((await call(tight, 'GET', '/merchant/v1/subscription')).status);
      const openStatuses = [];
      for (let i = 0; i < 25; i += 1)
        openStatuses.push((await call(open, 'GET', '/merchant/v1/subscription')).status);

      expect(tightStatuses).toEqual([401, 401, 429]);
      expect(openStatuses).not.toContain(429);
    } finally {
      await Promise.all([tight.close(), open.close()]);
    }
  });
});

describe('arrival log', () => {
  it('records every Merchant API request as it arrived, refused ones included, and no control request', async () => {
    const start = clock.now();
    for (let i = 0; i < 20; i += 1) {
      await api.get('subscription');
      clock.advance(10);
    }
    await call(sandbox, 'GET', '/__sandbox/counters');

    const arrivals = sandbox.arrivals();

    expect(arrivals).toHaveLength(21); // the token of beforeEach, 19 admitted, 1 refused with 429
    expect(arrivals[0]).toEqual({ at: start, endpoint: 'token' });
    expect(arrivals.slice(1).map((a) => a.endpoint)).toEqual(Array(20).fill('listSubscriptions'));
    expect(arrivals.at(-1)!.at).toBe(start + 190);
    expect((await call(sandbox, 'GET', '/__sandbox/arrivals')).json.data).toHaveLength(21);
    sandbox.resetCounters();
    expect(sandbox.arrivals()).toEqual([]);
  });
});
