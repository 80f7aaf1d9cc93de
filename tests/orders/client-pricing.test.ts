import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { customer, customerToken, saveCard, testLedger } from '../helpers/orders.ts';

// Read when the handlers load: the app prices its own orders (docs/app.md: what that risks).
process.env.CHARGE_PRICING = 'client';

const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const alice = customer('alice');
const bob = customer('bob');

beforeAll(async () => {
  await saveCard(ledger, alice, SEED.customerTokens.success);
  await saveCard(ledger, bob, SEED.customerTokens.successMaster);
});

const asCustomer = async (sub: string) => ({ Authorization: `Bearer ${await customerToken(sub)}` });
const chargeOf = (orderId: string, token: string, amount = 1) => ({
  type: 'PAYMENT',
  order_id: orderId,
  items: 'Priced by the app',
  currency: 'LKR',
  amount,
  customer_token: token,
});

describe('CHARGE_PRICING=client', () => {
  it('lets a customer charge an order of its own at its own price, creating the order', async () => {
    const orderId = `App-${randomUUID()}`;

    const answer = await call('charge', {
      body: chargeOf(orderId, SEED.customerTokens.success),
      headers: await asCustomer(alice),
    });
    const order = await call('getCheckout', { id: orderId, headers: await asCustomer(alice) });

    expect(answer.statusCode).toBe(200);
    expect(order.body.data).toMatchObject({ order_id: orderId, amount: 1, status: 'succeeded' });
  });

  it('still keeps a customer off another customer’s order and card', async () => {
    const bobs = `App-${randomUUID()}`;
    await call('charge', {
      body: chargeOf(bobs, SEED.customerTokens.successMaster),
      headers: await asCustomer(bob),
    });
    sandbox.resetCounters();

    const onBobsOrder = await call('charge', {
      body: chargeOf(bobs, SEED.customerTokens.success),
      headers: await asCustomer(alice),
    });
    const withBobsCard = await call('charge', {
      body: chargeOf(`App-${randomUUID()}`, SEED.customerTokens.successMaster),
      headers: await asCustomer(alice),
    });

    expect(onBobsOrder.statusCode).toBe(404);
    expect(withBobsCard.statusCode).toBe(404);
    expect(sandbox.counters().charge).toBe(0);
  });

  it('still allows one payment per order', async () => {
    const orderId = `App-${randomUUID()}`;
    await call('charge', {
      body: chargeOf(orderId, SEED.customerTokens.success),
      headers: await asCustomer(alice),
    });

    const again = await call('charge', {
      body: chargeOf(orderId, SEED.customerTokens.success, 2),
      headers: await asCustomer(alice),
    });

    expect(again.statusCode).toBe(409);
    expect(again.body.data.code).toBe('order_conflict');
  });

  it('lets a customer create any kind of checkout for itself', async () => {
    const answer = await call('createCheckout', {
      body: { kind: 'payment', items: 'Priced by the app', currency: 'LKR', amount: 5 },
      headers: await asCustomer(alice),
    });
    const order = await call('getCheckout', {
      id: answer.body.data.order_id,
      headers: await asCustomer(alice),
    });

    expect(answer.statusCode).toBe(201);
    expect(order.statusCode).toBe(200);
  });
});
