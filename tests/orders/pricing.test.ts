import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { customer, customerToken, saveCard, testLedger } from '../helpers/orders.ts';

/**
 * docs/contract.md "Prices", with CHARGE_PRICING=merchant (the default): a customer charges only an order
 * the merchant priced for it, at exactly that price; nothing is sent otherwise.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const alice = customer('alice');
const bob = customer('bob');

beforeAll(async () => {
  await saveCard(ledger, alice, SEED.customerTokens.success);
});

const asCustomer = async (sub: string) => ({ Authorization: `Bearer ${await customerToken(sub)}` });
const price = { items: 'Door bell wireless', currency: 'LKR', amount: 10_000 };

async function pricedOrder(owner: string, kind = 'charge'): Promise<string> {
  const created = await call('createCheckout', {
    body: { kind, ...price },
    headers: { 'On-Behalf-Of': owner },
  });
  expect(created.statusCode).toBe(201);
  return created.body.data.order_id;
}

const chargeOf = (orderId: string, overrides: Record<string, unknown> = {}) => ({
  type: 'PAYMENT',
  order_id: orderId,
  ...price,
  customer_token: SEED.customerTokens.success,
  ...overrides,
});

describe('a customer’s charge', () => {
  it('goes through at the merchant’s price', async () => {
    const orderId = await pricedOrder(alice);

    const answer = await call('charge', { body: chargeOf(orderId), headers: await asCustomer(alice) });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.data).toMatchObject({ order_id: orderId, amount: 10_000, status_code: 2 });
    expect(sandbox.counters().charge).toBe(1);
  });

  it.each([
    ['amount', { amount: 1 }],
    ['currency', { currency: 'USD' }],
    ['items', { items: 'Something cheaper' }],
  ])('is refused with 409 naming the %s when it differs, and nothing is sent', async (field, change) => {
    const orderId = await pricedOrder(alice);

    const answer = await call('charge', {
      body: chargeOf(orderId, change),
      headers: await asCustomer(alice),
    });

    expect(answer.statusCode).toBe(409);
    expect(answer.body.data).toEqual({
      code: 'order_conflict',
      errors: [{ path: field, message: `must equal the order's ${field}` }],
    });
    expect(sandbox.counters().charge).toBe(0);
  });

  it('names every field that differs', async () => {
    const orderId = await pricedOrder(alice);

    const answer = await call('charge', {
      body: chargeOf(orderId, { amount: 1, currency: 'USD', items: 'x' }),
      headers: await asCustomer(alice),
    });

    expect(answer.body.data.errors.map((e: { path: string }) => e.path)).toEqual([
      'amount',
      'currency',
      'items',
    ]);
  });

  it('of an order it does not own answers 404, as one that does not exist', async () => {
    await saveCard(ledger, bob, SEED.customerTokens.successMaster);
    const bobs = await pricedOrder(bob);
    const missing = `Missing-${randomUUID()}`;

    const others = await call('charge', { body: chargeOf(bobs), headers: await asCustomer(alice) });
    const unknown = await call('charge', { body: chargeOf(missing), headers: await asCustomer(alice) });

    expect(others.statusCode).toBe(404);
    expect(others.body.msg).toBe(`Order ${bobs} was not found.`);
    expect(unknown.body.msg).toBe(`Order ${missing} was not found.`);
    expect(sandbox.counters().charge).toBe(0);
  });

  it('of an order it priced itself is impossible: customers may not create charge orders', async () => {
    const answer = await call('createCheckout', {
      body: { kind: 'charge', ...price, amount: 1 },
      headers: await asCustomer(alice),
    });

    expect(answer.statusCode).toBe(403);
  });

  it('of an order the merchant meant to be paid through the checkout is refused', async () => {
    const orderId = await pricedOrder(alice, 'payment');

    const answer = await call('charge', { body: chargeOf(orderId), headers: await asCustomer(alice) });

    expect(answer.statusCode).toBe(409);
    expect(answer.body.data.errors).toEqual([
      { path: 'type', message: 'does not match the order (payment)' },
    ]);
  });

  it('cannot turn a payment the merchant priced into a hold, nor a hold into a payment', async () => {
    const paid = await pricedOrder(alice, 'charge');
    const held = await pricedOrder(alice, 'authorize');

    const asHold = await call('charge', {
      body: chargeOf(paid, { type: 'AUTHORIZE' }),
      headers: await asCustomer(alice),
    });
    const asPayment = await call('charge', { body: chargeOf(held), headers: await asCustomer(alice) });
    const hold = await call('charge', {
      body: chargeOf(held, { type: 'AUTHORIZE' }),
      headers: await asCustomer(alice),
    });

    expect(asHold.statusCode).toBe(409);
    expect(asHold.body.data.errors).toEqual([{ path: 'type', message: 'does not match the order (charge)' }]);
    expect(asPayment.statusCode).toBe(409);
    expect(hold.statusCode).toBe(200);
    expect(hold.body.data.authorization_token).toEqual(expect.any(String));
    expect(sandbox.counters().charge).toBe(1);
  });

  it('releases its Idempotency-Key when refused, so the same key works once the order is right', async () => {
    const orderId = await pricedOrder(alice);
    const key = randomUUID();

    const wrong = await call('charge', {
      body: chargeOf(orderId, { amount: 1 }),
      headers: await asCustomer(alice),
      idempotencyKey: key,
    });
    const right = await call('charge', {
      body: chargeOf(orderId),
      headers: await asCustomer(alice),
      idempotencyKey: key,
    });

    expect(wrong.statusCode).toBe(409);
    expect(right.statusCode).toBe(200);
  });
});

describe('the merchant’s charge', () => {
  it('is never restricted by pricing, and creates the order it charges', async () => {
    const orderId = `Merchant-${randomUUID()}`;

    const answer = await call('charge', { body: chargeOf(orderId, { amount: 1 }) });
    const order = await call('getCheckout', { id: orderId });

    expect(answer.statusCode).toBe(200);
    expect(order.body.data).toMatchObject({
      order_id: orderId,
      kind: 'charge',
      amount: 1,
      status: 'succeeded',
    });
  });

  it('may charge a customer’s priced order at another price (the merchant decides)', async () => {
    const orderId = await pricedOrder(alice);

    const answer = await call('charge', { body: chargeOf(orderId, { amount: 9_000 }) });
    const order = await call('getCheckout', { id: orderId });

    expect(answer.statusCode).toBe(200);
    expect(order.body.data).toMatchObject({ amount: 9_000, status: 'succeeded' });
  });

  it('creates the order for the customer named by On-Behalf-Of, who can then see it', async () => {
    const orderId = `ForAlice-${randomUUID()}`;

    await call('charge', { body: chargeOf(orderId), headers: { 'On-Behalf-Of': alice } });
    const hers = await call('getCheckout', { id: orderId, headers: await asCustomer(alice) });
    const his = await call('getCheckout', { id: orderId, headers: await asCustomer(bob) });

    expect(hers.statusCode).toBe(200);
    expect(his.statusCode).toBe(404);
  });
});
