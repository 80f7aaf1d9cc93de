import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { md5sig, SANDBOX_CREDENTIALS, type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import { type ApiClient, accessToken, apiClient, call, manualClock } from './helpers.ts';

const clock = manualClock(Date.UTC(2025, 0, 15, 4, 30, 0));
let sandbox: Sandbox;
let api: ApiClient;

beforeAll(async () => {
  sandbox = await startSandbox({ now: clock.now, rateLimit: false });
});
afterAll(() => sandbox.close());
beforeEach(async () => {
  sandbox.reset();
  api = apiClient(sandbox, await accessToken(sandbox));
});

// The charge request sample of docs/payhere.md "Charge".
function chargeRequest(overrides: Record<string, unknown> = {}) {
  return {
    type: 'PAYMENT',
    order_id: 'Order12345',
    items: 'Taxi Hire 123',
    currency: 'LKR',
    amount: 345.67,
    customer_token: SEED.customerTokens.success,
    custom_1: 'custom parameter 1',
    custom_2: null,
    notify_url: 'http://www.abc.com/hire/notify',
    itemList: [
      { name: 'Hire from Colombo 1 to Colombo 4', number: 'HIRE_12345', quantity: 1, unit_amount: 300.0 },
      { name: 'Tax', number: 'TAX_12345', quantity: 1, unit_amount: 45.67 },
    ],
    ...overrides,
  };
}

function envelopeError(msg: string, status = -1) {
  return { status, msg, data: null };
}

describe('payments of an order', () => {
  it('returns the seeded sample payment of LP8006126139', async () => {
    const answer = await api.search(SEED.orders.sample);

    expect(answer.status).toBe(200);
    expect(answer.json.msg).toBe('Payments with order_id:LP8006126139');
    expect(answer.json.data).toEqual([
      {
        payment_id: 320025071278,
        order_id: 'LP8006126139',
        date: '2020-01-16 16:21:02',
        description: 'Policy No. LP8006126139 - Outstanding Payment',
        status: 'RECEIVED',
        currency: 'LKR',
        amount: 500,
        customer: {
          fist_name: 'Saman',
          last_name: 'Perera',
          email: 'samanperera@gmail.com',
          phone: '+94771234567',
          delivery_details: { address: 'N0.1, Galle Road', city: 'Colombo', country: 'Sri Lanka' },
        },
        amount_detail: {
          currency: 'LKR',
          gross: 500,
          fee: 14.5,
          net: 485.5,
          exchange_rate: 1,
          exchange_from: 'LKR',
          exchange_to: 'LKR',
        },
        payment_method: { method: 'VISA', card_customer_name: 'S Perera', card_no: '************1234' },
        items: null,
      },
    ]);
  });

  it('returns every payment of an order charged twice', async () => {
    const answer = await api.search(SEED.orders.duplicate);

    expect(answer.json.data.map((p: { payment_id: number }) => p.payment_id)).toEqual([
      SEED.payments.duplicateFirst,
      SEED.payments.duplicateSecond,
    ]);
  });

  it('answers "No payments found" for an order without payments', async () => {
    const answer = await api.search(SEED.orders.withoutPayments);

    expect(answer.status).toBe(200);
    expect(answer.json).toEqual(envelopeError('No payments found'));
  });

  it('rejects a missing or unknown query parameter', async () => {
    const missing = await api.get('payment/search');
    const misspelled = await api.get('payment/search?orderId=LP8006126139');

    expect(missing.status).toBe(400);
    expect(missing.json).toEqual(envelopeError('Invalid request parameter: order_id'));
    expect(misspelled.json).toEqual(envelopeError('Invalid request parameter: orderId'));
  });
});

describe('charge', () => {
  it('charges a PAYMENT and makes it visible in search', async () => {
    const answer = await api.post('payment/charge', chargeRequest());
    const search = await api.search('Order12345');

    expect(answer.status).toBe(200);
    expect(answer.json.status).toBe(1);
    expect(answer.json.msg).toBe('Automatic payment charged successfully');
    const data = answer.json.data;
    expect(data).toEqual({
      order_id: 'Order12345',
      items: 'Taxi Hire 123',
      currency: 'LKR',
      amount: 345.67,
      custom_1: 'custom parameter 1',
      custom_2: null,
      payment_id: expect.any(Number),
      status_code: 2,
      status_message: 'Successfully completed the test tokenized payment.',
      md5sig: expect.stringMatching(/^[0-9A-F]{32}$/),
      authorization_token: null,
    });
    expect(String(data.payment_id)).toMatch(/^\d{12}$/);
    expect(data.md5sig).toBe(
      md5sig({
        merchantId: SANDBOX_CREDENTIALS.merchantId,
        orderId: 'Order12345',
        amount: '345.67',
        currency: 'LKR',
        statusCode: 2,
        merchantSecret: SANDBOX_CREDENTIALS.merchantSecret,
      }),
    );
    expect(search.json.data).toEqual([
      expect.objectContaining({
        payment_id: data.payment_id,
        order_id: 'Order12345',
        // The injected clock in Sri Lanka time (UTC+05:30).
        date: '2025-01-15 10:00:00',
        description: 'Taxi Hire 123',
        status: 'RECEIVED',
        amount: 345.67,
        amount_detail: expect.objectContaining({ gross: 345.67, fee: 10.02, net: 335.65 }),
        payment_method: { method: 'VISA', card_customer_name: 'S Perera', card_no: '************1234' },
        items: [
          {
            name: 'Hire from Colombo 1 to Colombo 4',
            quantity: 1,
            currency: 'LKR',
            unit_price: 300,
            total_price: 300,
          },
          { name: 'Tax', quantity: 1, currency: 'LKR', unit_price: 45.67, total_price: 45.67 },
        ],
      }),
    ]);
  });

  it('gives every charge a new payment id, even for the same order', async () => {
    const first = await api.post('payment/charge', chargeRequest({ itemList: undefined }));
    const second = await api.post('payment/charge', chargeRequest({ itemList: undefined }));
    const search = await api.search('Order12345');

    expect(first.json.data.payment_id).not.toBe(second.json.data.payment_id);
    expect(search.json.data).toHaveLength(2);
    expect(search.json.data[0].items).toBeNull();
  });

  it('answers a declined card with status 1 and status_code -2, and records no payment', async () => {
    const answer = await api.post(
      'payment/charge',
      chargeRequest({ customer_token: SEED.customerTokens.declined }),
    );

    expect(answer.json.status).toBe(1);
    expect(answer.json.data.status_code).toBe(-2);
    expect(answer.json.data.status_message).toBe('Payment declined by the issuer.');
    expect((await api.search('Order12345')).json.msg).toBe('No payments found');
  });

  it('answers a pending charge with status_code 0', async () => {
    const answer = await api.post(
      'payment/charge',
      chargeRequest({ customer_token: SEED.customerTokens.pending }),
    );

    expect(answer.json.status).toBe(1);
    expect(answer.json.data.status_code).toBe(0);
  });

  it('refuses a charge on the authenticationFails token with a top-level -2 envelope, and records nothing', async () => {
    const answer = await api.post(
      'payment/charge',
      chargeRequest({ customer_token: SEED.customerTokens.authenticationFails, order_id: 'OrderAuth1' }),
    );

    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ status: -2, msg: 'Customer authentication failed', data: null });
    expect((await api.search('OrderAuth1')).json.msg).toBe('No payments found');
  });

  it('charges the MasterCard customer on its own card', async () => {
    const answer = await api.post(
      'payment/charge',
      chargeRequest({ customer_token: SEED.customerTokens.successMaster, order_id: 'OrderM1' }),
    );
    const search = await api.search('OrderM1');

    expect(answer.json.data.status_code).toBe(2);
    expect(search.json.data[0].payment_method.method).toBe('MASTER');
  });

  it('authorizes with status_code 3 and a new authorization token, without a payment', async () => {
    const answer = await api.post(
      'payment/charge',
      chargeRequest({ type: 'AUTHORIZE', order_id: 'OrderA1' }),
    );

    expect(answer.json.data.status_code).toBe(3);
    expect(answer.json.data.authorization_token).toMatch(/^[0-9a-f-]{36}$/);
    expect((await api.search('OrderA1')).json.msg).toBe('No payments found');
  });

  it.each([
    ['an unknown customer token', { customer_token: 'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF' }, 'Invalid token'],
    ['an unaccepted currency', { currency: 'INR' }, 'Invalid currency'],
    ['a zero amount', { amount: 0 }, 'Invalid amount'],
    ['a negative amount', { amount: -5 }, 'Invalid amount'],
    ['three decimals', { amount: 10.005 }, 'Invalid amount'],
  ])('refuses %s with status -1 and HTTP 200', async (_case, overrides, msg) => {
    const answer = await api.post('payment/charge', chargeRequest(overrides));

    expect(answer.status).toBe(200);
    expect(answer.json).toEqual(envelopeError(msg));
  });

  it.each([
    [
      'a misspelled field',
      { customer_token: undefined, customerToken: SEED.customerTokens.success },
      'customerToken',
    ],
    ['a missing field', { currency: undefined }, 'currency'],
    ['an amount sent as a string', { amount: '345.67' }, 'amount'],
    ['an unknown type', { type: 'SALE' }, 'type'],
    [
      'a misspelled item field',
      { itemList: [{ name: 'a', number: 'b', quantity: 1, unitAmount: 1 }] },
      'itemList[0].unitAmount',
    ],
    [
      'a fractional quantity',
      { itemList: [{ name: 'a', number: 'b', quantity: 1.5, unit_amount: 1 }] },
      'itemList[0].quantity',
    ],
  ])('rejects %s with HTTP 400 naming the field', async (_case, overrides, field) => {
    const answer = await api.post('payment/charge', chargeRequest(overrides));

    expect(answer.status).toBe(400);
    expect(answer.json).toEqual(envelopeError(`Invalid request parameter: ${field}`));
    expect(sandbox.counters().charge).toBe(1);
  });

  it('rejects a wrong content type and a body that is not JSON', async () => {
    const token = await accessToken(sandbox);
    const form = await call(sandbox, 'POST', '/merchant/v1/payment/charge', {
      token,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'type=PAYMENT',
    });
    const broken = await call(sandbox, 'POST', '/merchant/v1/payment/charge', {
      token,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: '{"type":',
    });

    expect(form.status).toBe(400);
    expect(form.json).toEqual(envelopeError('Unsupported content type'));
    expect(broken.status).toBe(400);
    expect(broken.json).toEqual(envelopeError('Malformed request body'));
  });
});

describe('capture', () => {
  const capturable = SEED.authorizationTokens.capturable;

  it('captures part of the seeded authorization as in docs/payhere.md, making a payment', async () => {
    const answer = await api.post('payment/capture', {
      authorization_token: capturable,
      amount: 80.0,
      deduction_details: 'Item1 is out of stock',
    });
    const search = await api.search(SEED.orders.authorized);

    expect(answer.json).toEqual({
      status: 1,
      msg: 'Successfully captured payment',
      data: {
        status_code: 2,
        status_message: 'Successfully received the VISA payment',
        payment_id: 320025527952,
        currency: 'LKR',
        amount: 100,
        captured_amount: 80,
        items: 'Toy Car',
        order_id: 'Order12345',
        md5sig: expect.stringMatching(/^[0-9A-F]{32}$/),
        custom_1: 'ABCD',
        custom_2: null,
      },
    });
    expect(search.json.data).toEqual([expect.objectContaining({ payment_id: 320025527952, amount: 80 })]);
  });

  it('captures an authorization made through charge', async () => {
    const authorized = await api.post(
      'payment/charge',
      chargeRequest({ type: 'AUTHORIZE', order_id: 'OrderA2' }),
    );
    const answer = await api.post('payment/capture', {
      authorization_token: authorized.json.data.authorization_token,
      amount: 345.67,
      deduction_details: 'full',
    });

    expect(answer.json.data.payment_id).toBe(authorized.json.data.payment_id);
    expect(answer.json.data.captured_amount).toBe(345.67);
    expect((await api.search('OrderA2')).json.data).toHaveLength(1);
  });

  it('refuses a second capture with status -2', async () => {
    const body = { authorization_token: capturable, amount: 10, deduction_details: '' };
    await api.post('payment/capture', body);
    const second = await api.post('payment/capture', body);

    expect(second.json).toEqual(envelopeError('Authorization is already CAPTURED', -2));
  });

  it('refuses to capture a released authorization with status -2', async () => {
    const body = {
      authorization_token: SEED.authorizationTokens.released,
      amount: 10,
      deduction_details: '',
    };

    expect((await api.post('payment/capture', body)).json).toEqual(
      envelopeError('Authorization is already REFUNDED', -2),
    );
  });

  it('refuses an unknown token and an amount above the authorization', async () => {
    const unknown = await api.post('payment/capture', {
      authorization_token: '00000000-0000-4000-8000-000000000000',
      amount: 1,
      deduction_details: '',
    });
    const above = await api.post('payment/capture', {
      authorization_token: capturable,
      amount: 100.01,
      deduction_details: '',
    });

    expect(unknown.json).toEqual(envelopeError('Invalid token'));
    expect(above.json).toEqual(
      envelopeError('Capture amount must be less than or equal to the authorized amount'),
    );
  });

  it('rejects the parameter-list name "description" in place of deduction_details', async () => {
    const answer = await api.post('payment/capture', {
      authorization_token: capturable,
      amount: 1,
      description: 'x',
    });

    expect(answer.status).toBe(400);
    expect(answer.json.msg).toBe('Invalid request parameter: description');
  });
});

describe('refund', () => {
  const refundable = SEED.payments.refundable;

  it('refunds a payment in full and shows REFUND REQUESTED in search', async () => {
    const answer = await api.post('payment/refund', {
      payment_id: refundable,
      description: 'Item is out of stock',
    });
    const search = await api.search(SEED.orders.refundable);

    expect(answer.json).toEqual({
      status: 1,
      msg: 'Successfully processed the refund',
      data: expect.any(Number),
    });
    expect(String(answer.json.data)).toMatch(/^\d{12}$/);
    expect(search.json.data[0].status).toBe('REFUND REQUESTED');
  });

  it('refunds partially until nothing remains', async () => {
    const first = await api.post('payment/refund', {
      payment_id: refundable,
      description: 'a',
      amount: 100.5,
    });
    const second = await api.post('payment/refund', {
      payment_id: refundable,
      description: 'b',
      amount: 100.5,
    });
    const tooMuch = await api.post('payment/refund', {
      payment_id: refundable,
      description: 'c',
      amount: 1299.01,
    });
    const rest = await api.post('payment/refund', { payment_id: refundable, description: 'd', amount: 1299 });
    const again = await api.post('payment/refund', { payment_id: refundable, description: 'e' });

    expect(first.json.status).toBe(1);
    expect(second.json.status).toBe(1);
    expect(second.json.data).not.toBe(first.json.data);
    expect(tooMuch.json).toEqual(envelopeError('Error processing refund'));
    expect(rest.json.status).toBe(1);
    expect(again.json).toEqual(envelopeError('Error processing refund'));
  });

  it('refuses an unknown payment', async () => {
    const answer = await api.post('payment/refund', { payment_id: 320099999999, description: 'x' });

    expect(answer.json).toEqual(envelopeError('Error processing refund'));
  });

  it('releases an authorization once, whole', async () => {
    const token = SEED.authorizationTokens.releasable;
    const partial = await api.post('payment/refund', {
      authorization_token: token,
      description: 'x',
      amount: 1,
    });
    const released = await api.post('payment/refund', {
      authorization_token: token,
      description: 'Order cancelled',
    });
    const again = await api.post('payment/refund', {
      authorization_token: token,
      description: 'Order cancelled',
    });
    const capture = await api.post('payment/capture', {
      authorization_token: token,
      amount: 1,
      deduction_details: '',
    });

    expect(partial.json).toEqual(envelopeError('Error processing refund'));
    expect(released.json).toEqual({
      status: 1,
      msg: 'Successfully processed the authorization refund',
      data: null,
    });
    expect(again.json).toEqual(envelopeError('Error processing refund'));
    expect(capture.json).toEqual(envelopeError('Authorization is already REFUNDED', -2));
  });

  it('requires exactly one of payment_id and authorization_token', async () => {
    const neither = await api.post('payment/refund', { description: 'x' });
    const both = await api.post('payment/refund', {
      payment_id: refundable,
      authorization_token: SEED.authorizationTokens.releasable,
      description: 'x',
    });

    expect(neither.json.msg).toBe('Invalid request parameter: payment_id');
    expect(both.json.msg).toBe('Invalid request parameter: authorization_token');
  });
});

describe('reset', () => {
  it('restores the seeded state', async () => {
    await api.post('payment/refund', { payment_id: SEED.payments.refundable, description: 'x' });
    sandbox.reset();
    const fresh = apiClient(sandbox, await accessToken(sandbox));

    expect((await fresh.search(SEED.orders.refundable)).json.data[0].status).toBe('RECEIVED');
  });

  it('never hands out a payment id twice', async () => {
    const before = await api.post('payment/charge', chargeRequest());
    sandbox.reset();
    const fresh = apiClient(sandbox, await accessToken(sandbox));
    const after = await fresh.post('payment/charge', chargeRequest());

    expect(after.json.data.payment_id).not.toBe(before.json.data.payment_id);
  });
});
