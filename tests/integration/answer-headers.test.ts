import { describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import type { Answer } from '../helpers/events.ts';
import { type CallOptions, call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { ROUTES, type RouteName } from '../helpers/routes.ts';
import { putEvent } from '../helpers/webhooks.ts';

/**
 * Every answer of every function, success or failure, replay included, tells caches to keep nothing
 * (a phone's HTTP cache would otherwise hold payment records) and browsers not to sniff its type.
 * CORS_ORIGINS is not set here, which is the default: no CORS header at all (tests/integration/cors.test.ts).
 */
const sandbox = useTestGateway();

const chargeBody = () => ({
  type: 'PAYMENT',
  order_id: `Headers-${Math.random().toString(36).slice(2, 10)}`,
  items: 'Taxi Hire 123',
  currency: 'LKR',
  amount: 345.67,
  customer_token: SEED.customerTokens.success,
});

const checkoutBody = { kind: 'payment', items: 'Taxi Hire 123', currency: 'LKR', amount: 345.67 };

/** One request per route that the seeded sandbox answers with success. */
const SUCCESS: Record<RouteName, () => Promise<CallOptions>> = {
  charge: async () => ({ body: chargeBody() }),
  capture: async () => ({
    body: {
      authorization_token: SEED.authorizationTokens.capturable,
      amount: 80,
      deduction_details: 'Item1 is out of stock',
    },
  }),
  refund: async () => ({ body: { payment_id: SEED.payments.refundable, description: 'Out of stock' } }),
  retrievePayments: async () => ({ id: SEED.orders.sample }),
  listSubscriptions: async () => ({}),
  getSubscription: async () => ({ id: String(SEED.subscriptions.active) }),
  subscriptionPayments: async () => ({ id: String(SEED.subscriptions.active) }),
  retrySubscription: async () => ({ id: String(SEED.subscriptions.failed) }),
  cancelSubscription: async () => ({ id: String(SEED.subscriptions.active) }),
  createCheckout: async () => ({ body: checkoutBody }),
  getCheckout: async () => ({
    id: (await call('createCheckout', { body: checkoutBody })).body.data.order_id,
  }),
  listOrders: async () => ({ query: { limit: '5' } }),
  paymentRefunds: async () => {
    const body = { payment_id: SEED.payments.refundable, amount: 10, description: 'Out of stock' };
    expect((await call('refund', { body })).statusCode).toBe(200);
    return { id: String(SEED.payments.refundable) };
  },
  reconciliationReport: async () => ({ query: { from: '2025-01-01', to: '2025-01-01' } }),
  listEvents: async () => ({}),
  webhookDeliveries: async () => ({ query: { limit: '5' } }),
  redeliverEvent: async () => ({
    id: (await putEvent({ publishedAt: Date.now(), endpoints: ['default'] })).id,
  }),
};

function expectAnswerHeaders(answer: Answer): void {
  expect(answer.headers).toMatchObject({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
  const names = Object.keys(answer.headers).map((name) => name.toLowerCase());
  expect(names.filter((name) => name.startsWith('access-control-') || name === 'vary')).toEqual([]);
}

describe('every answer carries Cache-Control: no-store and nosniff, and no CORS header', () => {
  it.each(Object.keys(ROUTES) as RouteName[])('%s, when it succeeds', async (name) => {
    const answer = await call(name, await SUCCESS[name]());

    expect(answer.statusCode, answer.raw).toBeLessThan(300);
    expectAnswerHeaders(answer);
  });

  it.each(Object.keys(ROUTES) as RouteName[])('%s, refused without a token', async (name) => {
    const answer = await call(name, { headers: { Authorization: '' } });

    expect(answer.statusCode).toBe(401);
    expectAnswerHeaders(answer);
  });

  it('a refused body, a gateway failure and a declined payment', async () => {
    sandbox.faults.inject('search', { kind: 'nonJson' }, 3);

    const answers = [
      await call('charge', { body: { ...chargeBody(), amount: -1 } }),
      await call('retrievePayments', { id: SEED.orders.sample }),
      await call('charge', { body: { ...chargeBody(), customer_token: SEED.customerTokens.declined } }),
    ];

    expect(answers.map((a) => a.statusCode)).toEqual([400, 502, 402]);
    for (const answer of answers) expectAnswerHeaders(answer);
  });

  it("PayHere's notification, recorded or refused", async () => {
    const answers = [
      await notify(signed({ order_id: 'Headers-unknown-order', payhere_amount: '10.00', status_code: '2' })),
      await notify('order_id=x', { 'Content-Type': 'text/plain' }),
    ];

    expect(answers.map((a) => a.statusCode)).toEqual([200, 415]);
    for (const answer of answers) expectAnswerHeaders(answer);
  });

  it('a replay of a stored answer', async () => {
    const request = { body: chargeBody(), idempotencyKey: `headers-${Math.random()}` };
    await call('charge', request);

    const replay = await call('charge', request);

    expect(replay.headers['Idempotent-Replayed']).toBe('true');
    expectAnswerHeaders(replay);
  });
});
