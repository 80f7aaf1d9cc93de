import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';

/**
 * docs/contract.md "One payment per order": a new charge (a new Idempotency-Key) of an order that already has
 * a successful, pending or unknown payment or hold is refused with 409 order_conflict and sends
 * nothing, whoever asks; a declined or failed charge does not block a new attempt.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });

const chargeOf = (orderId: string, token: string = SEED.customerTokens.success, type = 'PAYMENT') => ({
  type,
  order_id: orderId,
  items: 'One payment only',
  currency: 'LKR',
  amount: 2_500,
  customer_token: token,
});

const newOrder = () => `Once-${randomUUID()}`;

describe('twenty charges of one order at once, each with its own key', () => {
  it('send exactly one charge to PayHere; the others are refused with 409 order_conflict', async () => {
    const orderId = newOrder();

    const answers = await Promise.all(
      Array.from({ length: 20 }, () => call('charge', { body: chargeOf(orderId) })),
    );

    const statuses = answers.map((answer) => answer.statusCode).sort();
    expect(statuses).toEqual([200, ...Array<number>(19).fill(409)]);
    for (const refused of answers.filter((answer) => answer.statusCode === 409)) {
      expect(refused.body.data).toEqual({ code: 'order_conflict' });
    }
    expect(sandbox.counters().charge).toBe(1);
    const payments = await call('retrievePayments', { id: orderId });
    expect(payments.body.data).toHaveLength(1);
  });
});

describe('a new key for an order', () => {
  it.each([
    ['succeeded', SEED.customerTokens.success, 'PAYMENT', 200],
    ['is pending', SEED.customerTokens.pending, 'PAYMENT', 202],
    ['is held', SEED.customerTokens.success, 'AUTHORIZE', 200],
  ])('is refused after a charge that %s, and nothing is sent', async (_, token, type, first) => {
    const orderId = newOrder();
    const earlier = await call('charge', { body: chargeOf(orderId, token, type) });
    sandbox.resetCounters();

    const again = await call('charge', { body: chargeOf(orderId) });

    expect(earlier.statusCode).toBe(first);
    expect(again.statusCode).toBe(409);
    expect(again.body.msg).toMatch(/already has a successful, pending or unknown payment/);
    expect(sandbox.counters().charge).toBe(0);
  });

  it('is refused after a charge whose outcome is unknown, which its own key then settles', async () => {
    const orderId = newOrder();
    const key = randomUUID();
    sandbox.faults.inject('charge', { kind: 'reset' });
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
    const unknown = await call('charge', { body: chargeOf(orderId), idempotencyKey: key });
    sandbox.resetCounters();

    const another = await call('charge', { body: chargeOf(orderId) });
    const settled = await call('charge', { body: chargeOf(orderId), idempotencyKey: key });
    const order = await call('getCheckout', { id: orderId });

    expect(unknown.body.data.code).toBe('outcome_unknown');
    expect(another.statusCode).toBe(409);
    expect(settled.statusCode).toBe(200);
    expect(sandbox.counters().charge).toBe(0);
    expect(order.body.data).toMatchObject({ status: 'succeeded', payment_id: settled.body.data.payment_id });
  });

  it.each([
    ['declined', SEED.customerTokens.declined, 402],
    ['refused by PayHere (an unknown card)', 'F'.repeat(32), 422],
  ])('is allowed after a charge that was %s', async (_, token, first) => {
    const orderId = newOrder();
    const earlier = await call('charge', { body: chargeOf(orderId, token) });

    const again = await call('charge', { body: chargeOf(orderId) });

    expect(earlier.statusCode).toBe(first);
    expect(again.statusCode).toBe(200);
    expect(sandbox.counters().charge).toBe(2);
  });

  it('is allowed after a charge that provably never reached PayHere', async () => {
    const orderId = newOrder();
    sandbox.faults.inject('charge', { kind: 'rateLimited', retryAfterSeconds: 1 });
    const throttled = await call('charge', { body: chargeOf(orderId) });

    const again = await call('charge', { body: chargeOf(orderId) });

    expect(throttled.statusCode).toBe(429);
    expect(again.statusCode).toBe(200);
  });

  it('gets the order’s state from getCheckout, the merchant seeing every order', async () => {
    const orderId = newOrder();
    await call('charge', { body: chargeOf(orderId, SEED.customerTokens.declined) });

    const order = await call('getCheckout', { id: orderId });

    expect(order.body.data).toMatchObject({
      order_id: orderId,
      kind: 'charge',
      status: 'failed',
      amount: 2_500,
    });
  });
});
