import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import { type ApiClient, accessToken, apiClient, call } from './helpers.ts';

let sandbox: Sandbox;
let api: ApiClient;
let token: string;

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false });
});
afterAll(() => sandbox.close());
beforeEach(async () => {
  sandbox.reset();
  token = await accessToken(sandbox);
  api = apiClient(sandbox, token);
});

const charge = {
  type: 'PAYMENT',
  order_id: 'OrderF1',
  items: 'Fault test',
  currency: 'LKR',
  amount: 10,
  customer_token: SEED.customerTokens.success,
};
const cancelActive = { subscription_id: SEED.subscriptions.active };

async function activeStatus(): Promise<string> {
  return (await api.get(`subscription/${SEED.subscriptions.active}`)).json.data.status;
}

/** The low-level cause of a failed fetch (undici wraps it in "fetch failed"). */
async function fetchFailure(promise: Promise<unknown>): Promise<{ code?: string; name?: string }> {
  try {
    await promise;
  } catch (error) {
    const cause = (error as { cause?: { code?: string; name?: string } }).cause;
    return cause ?? (error as { name?: string });
  }
  throw new Error('the request was answered');
}

describe('fault injection', () => {
  it('latency: delays, then answers normally', async () => {
    sandbox.faults.inject('search', { kind: 'latency', ms: 150 });
    const started = performance.now();
    const answer = await api.search(SEED.orders.sample);

    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    expect(answer.json.status).toBe(1);
    expect(sandbox.faults.pending()).toBe(0);
  });

  it('reset: the charge happens but the client sees a connection error', async () => {
    sandbox.faults.inject('charge', { kind: 'reset' });
    const failure = await fetchFailure(api.post('payment/charge', charge));
    const search = await api.search('OrderF1');

    expect(['ECONNRESET', 'UND_ERR_SOCKET']).toContain(failure.code);
    expect(search.json.data).toHaveLength(1);
    expect(sandbox.counters().charge).toBe(1);
  });

  it('resetBeforeProcessing: the client sees a connection error and nothing happened', async () => {
    sandbox.faults.inject('charge', { kind: 'resetBeforeProcessing' });
    const failure = await fetchFailure(api.post('payment/charge', charge));
    const search = await api.search('OrderF1');

    expect(['ECONNRESET', 'UND_ERR_SOCKET']).toContain(failure.code);
    expect(search.json.msg).toBe('No payments found');
  });

  it('status: answers an HTML error page without processing by default', async () => {
    sandbox.faults.inject('cancel', { kind: 'status', status: 503 });
    const answer = await api.post('subscription/cancel', cancelActive);

    expect(answer.status).toBe(503);
    expect(answer.headers.get('content-type')).toContain('text/html');
    expect(answer.text).toContain('503 Service Unavailable');
    expect(await activeStatus()).toBe('ACTIVE');
  });

  it('status with process: the state changes before the error answer', async () => {
    sandbox.faults.inject('cancel', {
      kind: 'status',
      status: 502,
      body: '{"message":"Bad gateway"}',
      contentType: 'application/json',
      process: true,
    });
    const answer = await api.post('subscription/cancel', cancelActive);

    expect(answer.status).toBe(502);
    expect(answer.json).toEqual({ message: 'Bad gateway' });
    expect(await activeStatus()).toBe('CANCELLED');
  });

  it('nonJson: 200 with an HTML body, processing only when asked', async () => {
    sandbox.faults.inject('cancel', { kind: 'nonJson' });
    sandbox.faults.inject('cancel', { kind: 'nonJson', process: true });
    const unprocessed = await api.post('subscription/cancel', cancelActive);
    const statusAfterFirst = await activeStatus();
    const processed = await api.post('subscription/cancel', cancelActive);

    expect(unprocessed.status).toBe(200);
    expect(unprocessed.headers.get('content-type')).toContain('text/html');
    expect(unprocessed.json).toBeUndefined();
    expect(statusAfterFirst).toBe('ACTIVE');
    expect(processed.text).toContain('<html>');
    expect(await activeStatus()).toBe('CANCELLED');
  });

  it('rateLimited: 429 with the configured Retry-After', async () => {
    sandbox.faults.inject('search', { kind: 'rateLimited', retryAfterSeconds: 7 });
    const answer = await api.search(SEED.orders.sample);

    expect(answer.status).toBe(429);
    expect(answer.headers.get('retry-after')).toBe('7');
    expect(answer.json).toEqual({ status: -1, msg: 'Too many requests', data: null });
  });

  it('invalidToken: 401 invalid_token once, while the token stays valid', async () => {
    sandbox.faults.inject('listSubscriptions', { kind: 'invalidToken' });
    const rejected = await api.get('subscription');
    const next = await api.get('subscription');

    expect(rejected.status).toBe(401);
    expect(rejected.json).toEqual({
      error: 'invalid_token',
      error_description: `Access token expired: ${token}`,
    });
    expect(next.status).toBe(200);
  });

  it('hang: never answers and changes nothing', async () => {
    sandbox.faults.inject('cancel', { kind: 'hang' });
    const failure = await fetchFailure(
      call(sandbox, 'POST', '/merchant/v1/subscription/cancel', {
        token,
        json: cancelActive,
        signal: AbortSignal.timeout(200),
      }),
    );

    expect(failure.name).toBe('TimeoutError');
    expect(await activeStatus()).toBe('ACTIVE');
  });

  it('close() ends hanging and delayed requests at once', async () => {
    const other = await startSandbox();
    other.faults.inject('token', { kind: 'hang' });
    other.faults.inject('token', { kind: 'latency', ms: 60_000 });
    const hanging = fetchFailure(accessToken(other));
    const delayed = fetchFailure(accessToken(other));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    await other.close();

    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await hanging).toHaveProperty('code');
    expect(await delayed).toHaveProperty('code');
  });

  it("'*' matches any endpoint, times repeats, and faults apply in the order injected", async () => {
    sandbox.faults.inject('*', { kind: 'status', status: 500 }, 2);
    sandbox.faults.inject('search', { kind: 'status', status: 504 });
    const statuses = [
      (await api.get('subscription')).status,
      (await api.search(SEED.orders.sample)).status,
      (await api.search(SEED.orders.sample)).status,
      (await api.search(SEED.orders.sample)).status,
    ];

    expect(statuses).toEqual([500, 500, 504, 200]);
  });

  it('searchPending: the retrieval answers status 0, "payment pending", with no data', async () => {
    sandbox.faults.inject('search', { kind: 'searchPending' });
    sandbox.faults.inject('search', { kind: 'searchPending', msg: 'Payment is pending' });
    const pending = await api.search(SEED.orders.sample);
    const worded = await api.search(SEED.orders.withoutPayments);
    const next = await api.search(SEED.orders.sample);

    expect(pending.status).toBe(200);
    expect(pending.json).toEqual({ status: 0, msg: 'Payment pending', data: null });
    expect(worded.json).toEqual({ status: 0, msg: 'Payment is pending', data: null });
    expect(next.json.data).toHaveLength(1);
  });

  it('searchFailed: status -1 worded otherwise than "No payments found", though payments exist', async () => {
    sandbox.faults.inject('search', { kind: 'searchFailed' });
    sandbox.faults.inject('search', { kind: 'searchFailed', msg: 'Internal error' });
    const failed = await api.search(SEED.orders.sample);
    const worded = await api.search(SEED.orders.sample);

    expect(failed.status).toBe(200);
    expect(failed.json).toEqual({ status: -1, msg: 'Error occurred', data: null });
    expect(worded.json).toEqual({ status: -1, msg: 'Internal error', data: null });
  });

  it("search faults are PayHere's answers: a request its token check refuses gets that refusal", async () => {
    sandbox.faults.inject('search', { kind: 'searchPending' });
    const unauthenticated = await call(sandbox, 'GET', `/merchant/v1/payment/search?order_id=x`, {
      token: 'not-a-token',
    });

    expect(unauthenticated.status).toBe(401);
    expect(sandbox.faults.pending()).toBe(0);
  });

  it('search faults are refused on any other endpoint', () => {
    expect(() => sandbox.faults.inject('charge', { kind: 'searchPending' })).toThrow(RangeError);
    expect(() => sandbox.faults.inject('*', { kind: 'searchFailed' })).toThrow(RangeError);
    expect(sandbox.faults.pending()).toBe(0);
  });

  it('clear() drops the faults not yet used', async () => {
    sandbox.faults.inject('search', { kind: 'status', status: 500 }, Number.POSITIVE_INFINITY);
    sandbox.faults.clear();

    expect((await api.search(SEED.orders.sample)).status).toBe(200);
  });
});

describe('counters', () => {
  it('count every request per endpoint, faulted and rejected ones included', async () => {
    sandbox.faults.inject('search', { kind: 'status', status: 502 });
    await api.search(SEED.orders.sample);
    await api.search(SEED.orders.sample);
    await call(sandbox, 'GET', '/merchant/v1/subscription');
    await api.get(`subscription/${SEED.subscriptions.active}/payments`);

    expect(sandbox.counters()).toEqual({
      token: 1,
      search: 2,
      charge: 0,
      capture: 0,
      refund: 0,
      listSubscriptions: 1,
      getSubscription: 0,
      subscriptionPayments: 1,
      retry: 0,
      cancel: 0,
      unknown: 0,
    });
    sandbox.resetCounters();
    expect(sandbox.counters().search).toBe(0);
  });
});

describe('HTTP control interface', () => {
  it('injects, reports and clears faults', async () => {
    const injected = await call(sandbox, 'POST', '/__sandbox/faults', {
      json: { endpoint: 'search', fault: { kind: 'status', status: 503 }, times: 2 },
    });
    const faulted = await api.search(SEED.orders.sample);
    const pending = await call(sandbox, 'GET', '/__sandbox/faults');
    const cleared = await call(sandbox, 'DELETE', '/__sandbox/faults');
    const normal = await api.search(SEED.orders.sample);

    expect(injected.json).toEqual({ status: 1, msg: 'Fault injected', data: { pending: 2 } });
    expect(faulted.status).toBe(503);
    expect(pending.json.data).toEqual({ pending: 1 });
    expect(cleared.status).toBe(200);
    expect(normal.status).toBe(200);
  });

  it('injects the search faults', async () => {
    const injected = await call(sandbox, 'POST', '/__sandbox/faults', {
      json: { endpoint: 'search', fault: { kind: 'searchFailed', msg: 'Error occurred' } },
    });
    const failed = await api.search(SEED.orders.sample);

    expect(injected.json.data).toEqual({ pending: 1 });
    expect(failed.json).toEqual({ status: -1, msg: 'Error occurred', data: null });
  });

  it('accepts "Infinity" as times', async () => {
    const injected = await call(sandbox, 'POST', '/__sandbox/faults', {
      json: { endpoint: '*', fault: { kind: 'latency', ms: 1 }, times: 'Infinity' },
    });

    expect(injected.json.data).toEqual({ pending: 'Infinity' });
    expect(sandbox.faults.pending()).toBe(Number.POSITIVE_INFINITY);
  });

  it('refuses an invalid injection', async () => {
    const answers = [
      await call(sandbox, 'POST', '/__sandbox/faults', {
        json: { endpoint: 'charge', fault: { kind: 'explode' } },
      }),
      await call(sandbox, 'POST', '/__sandbox/faults', {
        json: { endpoint: 'pay', fault: { kind: 'reset' } },
      }),
      await call(sandbox, 'POST', '/__sandbox/faults', {
        body: 'nope',
        headers: { 'content-type': 'text/plain' },
      }),
      await call(sandbox, 'POST', '/__sandbox/faults', {
        json: { endpoint: 'refund', fault: { kind: 'searchPending' } },
      }),
    ];

    expect(answers.map((answer) => answer.status)).toEqual([400, 400, 400, 400]);
    expect(sandbox.faults.pending()).toBe(0);
  });

  it('reads and clears counters, without counting itself', async () => {
    await api.get('subscription');
    const counters = await call(sandbox, 'GET', '/__sandbox/counters');
    const cleared = await call(sandbox, 'DELETE', '/__sandbox/counters');

    expect(counters.json.data).toMatchObject({ token: 1, listSubscriptions: 1, unknown: 0 });
    expect(cleared.status).toBe(200);
    expect(sandbox.counters().listSubscriptions).toBe(0);
  });

  it('resets the state and expires tokens', async () => {
    await api.post('subscription/cancel', cancelActive);
    const reset = await call(sandbox, 'POST', '/__sandbox/reset');
    token = await accessToken(sandbox);
    api = apiClient(sandbox, token);
    const statusAfterReset = await activeStatus();
    const expire = await call(sandbox, 'POST', '/__sandbox/expire-tokens');
    const expired = await api.get('subscription');

    expect(reset.status).toBe(200);
    expect(statusAfterReset).toBe('ACTIVE');
    expect(expire.status).toBe(200);
    expect(expired.json.error_description).toBe(`Access token expired: ${token}`);
  });

  it('restores the seeded data alone, keeping the tokens', async () => {
    await api.post('subscription/cancel', cancelActive);

    const restored = await call(sandbox, 'POST', '/__sandbox/reset-state');

    expect(restored.status).toBe(200);
    expect(await activeStatus()).toBe('ACTIVE'); // the old token still works
  });

  it('answers 404 for an unknown control path', async () => {
    expect((await call(sandbox, 'GET', '/__sandbox/nothing')).status).toBe(404);
  });
});

describe('connections', () => {
  it('keeps connections alive, and closes idle ones on request', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ reused: boolean; socket: import('node:net').Socket }>((resolve, reject) => {
        const req = request(`${sandbox.url}/merchant/v1/subscription`, { agent }, (res) => {
          res.resume();
          res.on('end', () =>
            resolve({ reused: req.reusedSocket, socket: req.socket as import('node:net').Socket }),
          );
        });
        req.on('error', reject);
        req.end();
      });
    try {
      const first = await get();
      const second = await get();
      const closed = once(second.socket, 'close');
      sandbox.closeIdleConnections();
      await closed;

      expect(first.reused).toBe(false);
      expect(second.reused).toBe(true);
      expect(second.socket).toBe(first.socket);
    } finally {
      agent.destroy();
    }
  });
});
