import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClientOptions, createClient } from '../../client/index.ts';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import type { Offline } from '../../scripts/offline.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, tokenFor } from '../helpers/auth.ts';
import { startOfflineAgainst } from '../helpers/offline.ts';

/**
 * The client as an app uses it, against the local stack: the sandbox, and the functions through
 * serverless-offline. Lost answers are made by a fetch that lets the request through and then
 * loses the answer, or by the sandbox's faults.
 */
let sandbox: Sandbox;
let offline: Offline;

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false });
  ({ offline } = await startOfflineAgainst(sandbox, {
    ...TEST_AUTH_ENV,
    ESBUILD_WORK_FOLDER: '.esbuild-client-e2e',
  }));
}, 120_000);

afterAll(async () => {
  await offline?.stop();
  await sandbox?.close();
});

interface Exchange {
  method: string;
  path: string;
  idempotencyKey: string | null;
  status: number;
  retryAfter: string | null;
}

/** The client with a fetch that records each exchange; `loseAnswer` drops the answer of the n-th request. */
function client(options: { loseAnswer?: number; onAnswer?: (exchange: Exchange) => void } = {}) {
  const exchanges: Exchange[] = [];
  const fetching: ClientOptions['fetch'] = async (input, init) => {
    const response = await fetch(input, init);
    const exchange = {
      method: init?.method ?? 'GET',
      path: new URL(String(input)).pathname,
      idempotencyKey: new Headers(init?.headers).get('Idempotency-Key'),
      status: response.status,
      retryAfter: response.headers.get('Retry-After'),
    };
    exchanges.push(exchange);
    options.onAnswer?.(exchange);
    if (exchanges.length === options.loseAnswer) throw new TypeError('Network request failed');
    return response;
  };
  const api = createClient({
    baseUrl: offline.baseUrl,
    token: () => tokenFor(MERCHANT_SCOPES),
    fetch: fetching,
  });
  return { api, exchanges };
}

const chargeOf = (orderId: string) => ({
  type: 'PAYMENT' as const,
  order_id: `${orderId}-${Date.now()}`,
  items: 'Taxi Hire 123',
  currency: 'LKR' as const,
  amount: 345.67,
  customer_token: SEED.customerTokens.success,
});

const charges = () => sandbox.counters().charge ?? 0;

describe('the typed client against the local stack', () => {
  it('charges, then reads the order and the subscriptions, with typed answers', async () => {
    const { api } = client();
    const body = chargeOf('CLIENT');

    const charged = await api.charge({ body });
    const payments = await api.retrievePayments({ path: { id: body.order_id } });
    const subscription = await api.getSubscription({ path: { id: SEED.subscriptions.active } });
    const missing = await api.getSubscription({ path: { id: SEED.subscriptions.unknown } });

    if (charged.httpStatus !== 200) throw new Error(`charge answered ${charged.httpStatus}: ${charged.msg}`);
    expect(charged.data.status_code).toBe(2);
    expect(charged.idempotencyKey).toEqual(expect.any(String));
    if (payments.httpStatus !== 200) throw new Error(`retrievePayments answered ${payments.httpStatus}`);
    expect(payments.data.map((payment) => payment.payment_id)).toEqual([charged.data.payment_id]);
    expect(subscription).toMatchObject({
      httpStatus: 200,
      data: { subscription_id: SEED.subscriptions.active },
    });
    expect(missing).toMatchObject({ httpStatus: 404, status: -1, data: { code: 'not_found' } });
  });

  it('creates a checkout and reads it back', async () => {
    const { api } = client();
    const orderId = `CLIENT-CHECKOUT-${Date.now()}`;

    const created = await api.createCheckout({
      body: { kind: 'payment', order_id: orderId, items: 'Door bell', currency: 'LKR', amount: 1000 },
    });
    const read = await api.getCheckout({ path: { order_id: orderId } });

    expect(created).toMatchObject({ httpStatus: 201, data: { order_id: orderId, hash: expect.any(String) } });
    expect(read).toMatchObject({ httpStatus: 200, data: { order_id: orderId, status: 'created' } });
  });

  it('repeats a charge whose answer was lost with the same key: PayHere is charged once', async () => {
    const { api, exchanges } = client({ loseAnswer: 1 });
    const before = charges();

    const answer = await api.charge({ body: chargeOf('CLIENT-LOST') });

    expect(exchanges.map((exchange) => exchange.status)).toEqual([200, 200]);
    expect(exchanges[1]!.idempotencyKey).toBe(exchanges[0]!.idempotencyKey);
    expect(answer).toMatchObject({
      httpStatus: 200,
      replayed: true,
      idempotencyKey: exchanges[0]!.idempotencyKey,
    });
    expect(charges() - before).toBe(1);
  });

  it('repeats a 202 outcome_unknown with the same key until the charge is settled', async () => {
    // The charge is processed but its answer reset, and the order's payments cannot be searched
    // until the first answer (202) has reached the client.
    sandbox.faults.inject('charge', { kind: 'reset' });
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, Infinity);
    const { api, exchanges } = client({ onAnswer: () => sandbox.faults.clear() });
    const before = charges();

    const answer = await api.charge({ body: chargeOf('CLIENT-UNKNOWN') });

    expect(exchanges.map((exchange) => exchange.status)).toEqual([202, 200]);
    expect(exchanges[1]!.idempotencyKey).toBe(exchanges[0]!.idempotencyKey);
    expect(answer).toMatchObject({ httpStatus: 200, status: 1, data: { status_code: 2 } });
    expect(charges() - before).toBe(1);
  });

  it('honours Retry-After: a repeat while the first is still running waits, then gets the stored answer', async () => {
    sandbox.faults.inject('charge', { kind: 'latency', ms: 1_500 });
    const { api, exchanges } = client();
    const body = chargeOf('CLIENT-BUSY');
    const before = charges();

    const first = api.charge({ body, idempotencyKey: `busy-${body.order_id}` });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const repeat = await api.charge({ body, idempotencyKey: `busy-${body.order_id}` });

    const busy = exchanges.find((exchange) => exchange.status === 409);
    expect(busy?.retryAfter).toMatch(/^[12]$/);
    expect(await first).toMatchObject({ httpStatus: 200, replayed: false });
    expect(repeat).toMatchObject({ httpStatus: 200, replayed: true });
    expect(charges() - before).toBe(1);
  });
});
