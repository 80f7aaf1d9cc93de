import { createHash, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiBaseUrl } from '../../lib/http/route.ts';
import { checkoutHash } from '../../lib/orders/checkout.ts';
import { SANDBOX_CREDENTIALS, SEED } from '../../sandbox/server.ts';
import { apiEvent } from '../helpers/events.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { customer, customerToken, saveCard, testLedger } from '../helpers/orders.ts';

/** docs/contract.md "createCheckout" and "getCheckout", in-process against the sandbox's credentials. */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const alice = customer('alice');
const bob = customer('bob');

beforeAll(async () => {
  await saveCard(testLedger(), alice, SEED.customerTokens.success);
});

const asCustomer = async (sub: string) => ({ Authorization: `Bearer ${await customerToken(sub)}` });
const md5 = (text: string) => createHash('md5').update(text).digest('hex').toUpperCase();
/** PayHere's checkout hash, written out from docs/contract.md "createCheckout". */
const expectedHash = (orderId: string, amount: string, currency: string) =>
  md5(
    `${SANDBOX_CREDENTIALS.merchantId}${orderId}${amount}${currency}${md5(SANDBOX_CREDENTIALS.merchantSecret)}`,
  );

/** The API Gateway URL of the test events (tests/events/rest-api-event.json), stage `dev`. */
const API_BASE = 'https://abc123.execute-api.ap-south-1.amazonaws.com/dev';

describe('createCheckout', () => {
  it.each([
    ['payment', { amount: 1000 }, '1000.00'],
    ['authorize', { amount: 99.5 }, '99.50'],
    ['charge', { amount: 0.1 }, '0.10'],
    ['recurring', { amount: 1500, recurrence: '1 Month', duration: '1 Year' }, '1500.00'],
    ['preapproval', {}, '0.00'],
  ])('records a %s order and answers what the SDK needs, signed', async (kind, fields, amountText) => {
    const orderId = `Checkout-${randomUUID()}`;

    const answer = await call('createCheckout', {
      body: { kind, order_id: orderId, items: 'Door bell', currency: 'LKR', ...fields },
    });

    expect(answer.statusCode).toBe(201);
    expect(answer.body).toEqual({
      status: 1,
      msg: 'Checkout created',
      data: {
        order_id: orderId,
        kind,
        items: 'Door bell',
        currency: 'LKR',
        amount: 'amount' in fields ? fields.amount : null,
        merchant_id: SANDBOX_CREDENTIALS.merchantId,
        notify_url: `${API_BASE}/gateway/notify`,
        hash: expectedHash(orderId, amountText, 'LKR'),
        sandbox: true,
        ...('recurrence' in fields ? { recurrence: fields.recurrence, duration: fields.duration } : {}),
      },
    });
    expect(JSON.stringify(answer.body)).not.toContain(SANDBOX_CREDENTIALS.merchantSecret);
    expect(sandbox.counters().token ?? 0).toBe(0);
  });

  it('signs with docs/payhere.md’s worked example values as the formula says', () => {
    // docs/payhere.md "Signature": UPPER(MD5('MERCHANT_SECRET_EXAMPLE')) = 8F0CD93ACABA62D3466AD40E2BFE6638.
    const hash = checkoutHash({
      merchantId: '1211149',
      orderId: 'ORDER-1001',
      amountCents: 100_000,
      currency: 'LKR',
      merchantSecret: 'MERCHANT_SECRET_EXAMPLE',
    });

    expect(hash).toBe(md5('1211149ORDER-10011000.00LKR8F0CD93ACABA62D3466AD40E2BFE6638'));
  });

  it('generates an order id when none is given', async () => {
    const answer = await call('createCheckout', {
      body: { kind: 'payment', items: 'x', currency: 'USD', amount: 5 },
    });

    expect(answer.body.data.order_id).toMatch(/^ORD-[0-9a-f-]{36}$/);
    expect(answer.body.data.hash).toBe(expectedHash(answer.body.data.order_id, '5.00', 'USD'));
  });

  it('answers the same data with 200 when the same order is created again', async () => {
    const body = {
      kind: 'payment',
      order_id: `Same-${randomUUID()}`,
      items: 'x',
      currency: 'LKR',
      amount: 10,
    };

    const first = await call('createCheckout', { body });
    const again = await call('createCheckout', { body });

    expect(first.statusCode).toBe(201);
    expect(again.statusCode).toBe(200);
    expect(again.body.data).toEqual(first.body.data);
  });

  it('refuses an order id taken with other fields, naming them', async () => {
    const body = {
      kind: 'payment',
      order_id: `Taken-${randomUUID()}`,
      items: 'x',
      currency: 'LKR',
      amount: 10,
    };
    await call('createCheckout', { body });

    const other = await call('createCheckout', { body: { ...body, amount: 11, items: 'y' } });
    const forSomeoneElse = await call('createCheckout', { body, headers: { 'On-Behalf-Of': alice } });

    expect(other.statusCode).toBe(409);
    expect(other.body.data).toEqual({
      code: 'order_conflict',
      errors: [
        { path: 'items', message: 'differs from the existing order' },
        { path: 'amount', message: 'differs from the existing order' },
      ],
    });
    expect(forSomeoneElse.statusCode).toBe(409);
  });

  it.each([
    ['an amount for a payment', { kind: 'payment' }, 'amount', 'is required'],
    [
      'recurrence and duration for a recurring checkout',
      { kind: 'recurring', amount: 5 },
      'recurrence',
      'is required for a recurring checkout',
    ],
    [
      'no recurrence outside a recurring checkout',
      { kind: 'payment', amount: 5, recurrence: '1 Month' },
      'recurrence',
      'is only allowed for a recurring checkout',
    ],
    [
      'PayHere’s period form',
      { kind: 'recurring', amount: 5, recurrence: 'monthly', duration: 'Forever' },
      'recurrence',
      expect.stringContaining('1 Month'),
    ],
    ['a known kind', { kind: 'gift', amount: 5 }, 'kind', expect.stringContaining('payment')],
  ])('requires %s', async (_, fields, path, message) => {
    const answer = await call('createCheckout', { body: { items: 'x', currency: 'LKR', ...fields } });

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.errors).toContainEqual({ path, message });
  });

  it('takes a duration of Forever', async () => {
    const answer = await call('createCheckout', {
      body: {
        kind: 'recurring',
        items: 'x',
        currency: 'LKR',
        amount: 5,
        recurrence: '1 Week',
        duration: 'Forever',
      },
    });

    expect(answer.statusCode).toBe(201);
  });
});

describe('createCheckout for customers (CHARGE_PRICING=merchant)', () => {
  it('lets a customer save a card: a preapproval of its own, under a generated order id', async () => {
    const answer = await call('createCheckout', {
      body: { kind: 'preapproval', items: 'Save my card', currency: 'LKR' },
      headers: await asCustomer(alice),
    });
    const order = await call('getCheckout', {
      id: answer.body.data.order_id,
      headers: await asCustomer(alice),
    });

    expect(answer.statusCode).toBe(201);
    expect(order.body.data).toMatchObject({
      kind: 'preapproval',
      status: 'created',
      amount: null,
      customer_token: null,
    });
  });

  it.each(['payment', 'authorize', 'recurring', 'charge'])(
    'refuses a customer’s %s checkout: the merchant prices orders',
    async (kind) => {
      const answer = await call('createCheckout', {
        body: {
          kind,
          items: 'x',
          currency: 'LKR',
          amount: 1,
          ...(kind === 'recurring' ? { recurrence: '1 Month', duration: '1 Year' } : {}),
        },
        headers: await asCustomer(alice),
      });

      expect(answer.statusCode).toBe(403);
      expect(answer.body.data).toEqual({ code: 'forbidden' });
    },
  );

  it('does not let a customer choose the order id (it would reveal whether another’s exists)', async () => {
    const answer = await call('createCheckout', {
      body: { kind: 'preapproval', order_id: `Mine-${randomUUID()}`, items: 'x', currency: 'LKR' },
      headers: await asCustomer(alice),
    });

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.errors).toEqual([
      { path: 'order_id', message: 'is assigned by the service for customers: leave it out' },
    ]);
  });
});

describe('getCheckout', () => {
  it('shows an order to its owner and the merchant, and to nobody else', async () => {
    const created = await call('createCheckout', {
      body: { kind: 'charge', items: 'Lamp', currency: 'LKR', amount: 120 },
      headers: { 'On-Behalf-Of': alice },
    });
    const orderId = created.body.data.order_id;

    const hers = await call('getCheckout', { id: orderId, headers: await asCustomer(alice) });
    const merchants = await call('getCheckout', { id: orderId });
    const his = await call('getCheckout', { id: orderId, headers: await asCustomer(bob) });
    const missing = await call('getCheckout', { id: 'nothing-here', headers: await asCustomer(bob) });

    expect(hers.body).toEqual({
      status: 1,
      msg: `Order ${orderId}`,
      data: {
        order_id: orderId,
        kind: 'charge',
        status: 'created',
        items: 'Lamp',
        currency: 'LKR',
        amount: 120,
        payment_id: null,
        customer_token: null,
        authorization_token: null,
        subscription_id: null,
        card: null,
        verified: null,
        duplicate_payment_ids: [],
        item_list: null,
        custom_1: null,
        custom_2: null,
        customer_details: null,
        metadata: null,
        startup_fee: null,
        next_installment: null,
        updated_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      },
    });
    expect(merchants.body).toEqual(hers.body);
    expect(his.statusCode).toBe(404);
    expect(his.body).toEqual({ ...missing.body, msg: `Order ${orderId} was not found.` });
  });

  it('shows a charge’s result on its order: the payment, and for a hold its authorization token', async () => {
    const orderId = `Held-${randomUUID()}`;
    const held = await call('charge', {
      body: {
        type: 'AUTHORIZE',
        order_id: orderId,
        items: 'Hold',
        currency: 'LKR',
        amount: 50,
        customer_token: SEED.customerTokens.success,
      },
    });

    const order = await call('getCheckout', { id: orderId });

    expect(order.body.data).toMatchObject({
      status: 'succeeded',
      payment_id: held.body.data.payment_id,
      authorization_token: held.body.data.authorization_token,
    });
  });
});

describe('the API base URL of a request (the notify_url without PUBLIC_BASE_URL)', () => {
  it.each([
    [
      'API Gateway’s own domain with its stage',
      { domainName: 'abc.execute-api.ap-south-1.amazonaws.com', path: '/prod/gateway/api/checkouts' },
      {},
      'https://abc.execute-api.ap-south-1.amazonaws.com/prod',
    ],
    [
      'a custom domain without a base path',
      { domainName: 'pay.example.com', path: '/gateway/api/checkouts' },
      {},
      'https://pay.example.com',
    ],
    [
      'serverless-offline, which names no domain',
      { domainName: 'offlineContext_domainName', path: '/gateway/api/checkouts' },
      { Host: '127.0.0.1:3000' },
      'http://127.0.0.1:3000',
    ],
  ])('%s', (_, context, headers, expected) => {
    const event = apiEvent({ method: 'POST', resource: '/gateway/api/checkouts', headers, body: {} });
    Object.assign(event.requestContext, context);

    expect(apiBaseUrl(event)).toBe(expected);
  });
});
