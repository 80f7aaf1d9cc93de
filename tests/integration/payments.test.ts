import { describe, expect, it } from 'vitest';

// The merchant allows the sample's notify_url (docs/contract.md "notify_url"); read when the handler loads.
process.env.NOTIFY_URL_ORIGINS = 'https://www.abc.com';

import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';

const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });

const charge = (overrides: Record<string, unknown> = {}) => ({
  type: 'PAYMENT',
  order_id: `Order-${Math.random().toString(36).slice(2, 10)}`,
  items: 'Taxi Hire 123',
  currency: 'LKR',
  amount: 345.67,
  customer_token: SEED.customerTokens.success,
  custom_1: 'custom parameter 1',
  custom_2: null,
  notify_url: 'https://www.abc.com/hire/notify',
  itemList: [
    { name: 'Hire from Colombo 1 to Colombo 4', number: 'HIRE_12345', quantity: 1, unit_amount: 300.0 },
    { name: 'Tax', number: 'TAX_12345', quantity: 1, unit_amount: 45.67 },
  ],
  ...overrides,
});

describe('charge', () => {
  it('charges a pre-approved customer and the payment becomes retrievable', async () => {
    // Prepare
    const body = charge();

    // Act
    const answer = await call('charge', { body });
    const payments = await call('retrievePayments', { id: body.order_id as string });

    // Assess
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['Content-Type']).toBe('application/json');
    expect(answer.body).toMatchObject({
      status: 1,
      msg: 'Automatic payment charged successfully',
      data: {
        order_id: body.order_id,
        amount: 345.67,
        currency: 'LKR',
        status_code: 2,
        authorization_token: null,
      },
    });
    expect(answer.body.data.payment_id).toEqual(expect.any(Number));
    expect(payments.statusCode).toBe(200);
    expect(payments.body.msg).toBe(`Payments with order_id:${body.order_id}`);
    expect(payments.body.data.map((p: { payment_id: number }) => p.payment_id)).toEqual([
      answer.body.data.payment_id,
    ]);
  });

  it('does not report a PAYMENT as paid when the gateway answers with an authorization code (3)', async () => {
    const order = charge();
    sandbox.faults.inject('charge', {
      kind: 'status',
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({
        status: 1,
        msg: 'Automatic payment charged successfully',
        data: {
          order_id: order.order_id,
          items: order.items,
          currency: order.currency,
          amount: order.amount,
          custom_1: null,
          custom_2: null,
          payment_id: 320025071281,
          status_code: 3,
          status_message: 'Successfully authorized the test tokenized payment.',
          md5sig: null,
          authorization_token: '8c3a4e1f-1b2c-4d5e-8f90-a1b2c3d4e5f6',
        },
      }),
    });

    const answer = await call('charge', { body: order });

    expect(answer.statusCode).toBe(202);
    expect(answer.body.status).toBe(0);
  });

  it('holds an AUTHORIZE charge and returns the authorization token for a capture', async () => {
    const answer = await call('charge', { body: charge({ type: 'AUTHORIZE', amount: 100 }) });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.status).toBe(1);
    expect(answer.body.data.authorization_token).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers 402 with the gateway reason when the card is declined', async () => {
    const answer = await call('charge', { body: charge({ customer_token: SEED.customerTokens.declined }) });

    expect(answer.statusCode).toBe(402);
    expect(answer.body.status).toBe(-1);
    expect(answer.body.data.status_code).toBe(-2);
    expect(answer.body.msg).toBe(answer.body.data.status_message);
  });

  it('answers 202 with status 0 while the payment is pending', async () => {
    const answer = await call('charge', { body: charge({ customer_token: SEED.customerTokens.pending }) });

    expect(answer.statusCode).toBe(202);
    expect(answer.body.status).toBe(0);
    expect(answer.body.msg).toMatch(/pending/i);
    expect(answer.body.data.status_code).toBe(0);
  });

  it('answers 422 gateway_rejected for a customer token the gateway does not know', async () => {
    const answer = await call('charge', {
      body: charge({ customer_token: 'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF' }),
    });

    expect(answer.statusCode).toBe(422);
    expect(answer.body).toMatchObject({ status: -1, data: { code: 'gateway_rejected' } });
    expect(answer.body.msg).toContain('Invalid token');
  });

  it('rejects a misspelled field with 400 naming it, and nothing reaches the gateway', async () => {
    const { customer_token, ...rest } = charge();

    const answer = await call('charge', { body: { ...rest, customer_tokn: customer_token } });

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.code).toBe('invalid_request');
    expect(answer.body.data.errors).toEqual(
      expect.arrayContaining([
        { path: 'customer_tokn', message: 'is not a known field' },
        { path: 'customer_token', message: 'is required' },
      ]),
    );
    expect(sandbox.counters().charge ?? 0).toBe(0);
    expect(sandbox.counters().token ?? 0).toBe(0);
  });

  it.each(['capture', 'refund'] as const)(
    'answers 415 on %s too for a body not declared as JSON',
    async (route) => {
      const answer = await call(route, { body: '{}', headers: { 'Content-Type': 'text/plain' } });

      expect(answer.statusCode).toBe(415);
      expect(answer.body).toMatchObject({ status: -1, data: { code: 'unsupported_media_type' } });
    },
  );

  it('answers 415 for a body that is not declared as JSON, and 400 invalid_json for broken JSON', async () => {
    const wrongType = await call('charge', {
      body: 'type=PAYMENT',
      headers: { 'Content-Type': 'text/plain' },
    });
    const broken = await call('charge', { body: '{"type": "PAYMENT",' });

    expect(wrongType.statusCode).toBe(415);
    expect(wrongType.body).toMatchObject({ status: -1, data: { code: 'unsupported_media_type' } });
    expect(broken.statusCode).toBe(400);
    expect(broken.body).toMatchObject({ status: -1, data: { code: 'invalid_json' } });
    expect(sandbox.counters().charge ?? 0).toBe(0);
  });

  it.each(['application/vnd.evil+json', 'application/merge-patch+json', 'application/json-patch+json'])(
    'answers 415 for %s, with nothing sent to PayHere',
    async (type) => {
      const answer = await call('charge', {
        body: JSON.stringify(charge()),
        headers: { 'Content-Type': type },
      });

      expect(answer.statusCode).toBe(415);
      expect(answer.body).toMatchObject({ status: -1, data: { code: 'unsupported_media_type' } });
      expect(sandbox.counters().charge ?? 0).toBe(0);
    },
  );

  it('accepts the content type header in any letter case', async () => {
    const answer = await call('charge', {
      body: JSON.stringify(charge()),
      headers: { 'CONTENT-TYPE': 'application/json; charset=utf-8' },
      replaceHeaders: true,
    });

    expect(answer.statusCode).toBe(200);
  });

  it('answers 400 when the body is missing', async () => {
    const answer = await call('charge', {});

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.errors).toEqual([{ path: 'body', message: 'must be an object' }]);
  });
});

describe('capture', () => {
  const token = SEED.authorizationTokens.capturable;

  it('captures part of an authorized hold', async () => {
    const answer = await call('capture', {
      body: { authorization_token: token, amount: 80, deduction_details: 'Item1 is out of stock' },
    });

    expect(answer.statusCode).toBe(200);
    expect(answer.body).toMatchObject({
      status: 1,
      msg: 'Successfully captured payment',
      data: { status_code: 2, amount: 100, captured_amount: 80, order_id: 'Order12345' },
    });
  });

  /** PayHere's capture answer (envelope status 1) with the given outcome. */
  const captureAnswer = (statusCode: number, statusMessage: string) => ({
    kind: 'status' as const,
    status: 200,
    contentType: 'application/json',
    body: JSON.stringify({
      status: 1,
      msg: 'Capture processed',
      data: {
        status_code: statusCode,
        status_message: statusMessage,
        payment_id: 320025071280,
        currency: 'LKR',
        amount: 100,
        captured_amount: 80,
        items: null,
        order_id: 'Order12345',
        md5sig: null,
        custom_1: null,
        custom_2: null,
      },
    }),
  });

  it('takes a capture answer with status_code 0 (PayHere’s “unknown”) as a capture that may have been made: 202 outcome_unknown, never sent again', async () => {
    sandbox.faults.inject('capture', captureAnswer(0, 'Capture status unknown'));
    const request = {
      body: { authorization_token: token, amount: 80, description: 'x' },
      idempotencyKey: `capture-unknown-${Date.now()}`,
    };

    const answer = await call('capture', request);
    sandbox.faults.clear();
    const repeated = await call('capture', request);

    expect(answer.statusCode).toBe(202);
    expect(answer.body).toMatchObject({ status: 0, data: { code: 'outcome_unknown' } });
    expect(repeated.statusCode).toBe(202);
    expect(sandbox.counters().capture).toBe(1);
  });

  it.each([
    [-2, 'Capture declined by the issuer', 402, -1],
    [-1, 'Capture canceled', 402, -1],
  ])('follows a capture answer with status_code %i: HTTP %i', async (code, message, httpStatus, status) => {
    sandbox.faults.inject('capture', captureAnswer(code, message));

    const answer = await call('capture', {
      body: { authorization_token: token, amount: 80, description: 'x' },
    });

    expect(answer.statusCode).toBe(httpStatus);
    expect(answer.body).toMatchObject({ status, data: { status_code: code } });
    if (httpStatus === 402) expect(answer.body.msg).toBe(message);
  });

  it('accepts the reason as `description` and sends it upstream as deduction_details', async () => {
    const answer = await call('capture', {
      body: { authorization_token: token, amount: 100, description: 'Full capture' },
    });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.data.captured_amount).toBe(100);
  });

  it('refuses two different reasons with 400 before calling the gateway', async () => {
    const answer = await call('capture', {
      body: { authorization_token: token, amount: 80, deduction_details: 'a', description: 'b' },
    });

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.errors).toEqual([expect.objectContaining({ path: 'description' })]);
    expect(sandbox.counters().capture ?? 0).toBe(0);
  });

  it('answers 409 conflict when the hold was already captured', async () => {
    const body = { authorization_token: token, amount: 50, deduction_details: 'first' };
    await call('capture', { body });

    const again = await call('capture', { body });

    expect(again.statusCode).toBe(409);
    expect(again.body).toMatchObject({
      status: -1,
      msg: 'Authorization is already CAPTURED',
      data: { code: 'conflict' },
    });
  });

  it('answers 409 conflict for a released hold', async () => {
    const answer = await call('capture', {
      body: { authorization_token: SEED.authorizationTokens.released, amount: 10, deduction_details: 'x' },
    });

    expect(answer.statusCode).toBe(409);
    expect(answer.body.msg).toBe('Authorization is already REFUNDED');
  });

  it('answers 422 when capturing more than was authorized', async () => {
    const answer = await call('capture', {
      body: { authorization_token: token, amount: 100.01, deduction_details: 'too much' },
    });

    expect(answer.statusCode).toBe(422);
    expect(answer.body.data.code).toBe('gateway_rejected');
    expect(answer.body.msg).toContain('Capture amount must be less than or equal to the authorized amount');
  });
});

describe('refund', () => {
  it('refunds a payment in full and the payment shows the refund', async () => {
    const answer = await call('refund', {
      body: { payment_id: SEED.payments.refundable, description: 'Item is out of stock' },
    });
    const payments = await call('retrievePayments', { id: SEED.orders.refundable });

    expect(answer.statusCode).toBe(200);
    expect(answer.body).toMatchObject({ status: 1, msg: 'Successfully processed the refund' });
    expect(answer.body.data).toEqual({ refund_id: expect.any(Number) });
    expect(payments.body.data[0].status).toBe('REFUND REQUESTED');
  });

  it('refunds part of a payment, given the payment id as a digit string', async () => {
    const answer = await call('refund', {
      body: { payment_id: String(SEED.payments.refundable), description: 'Partial', amount: 10.5 },
    });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.data.refund_id).toEqual(expect.any(Number));
  });

  it('answers 422 when the gateway cannot refund (already refunded)', async () => {
    const body = { payment_id: SEED.payments.refundable, description: 'once' };
    await call('refund', { body });

    const again = await call('refund', { body });

    expect(again.statusCode).toBe(422);
    expect(again.body.data.code).toBe('gateway_rejected');
  });

  it('releases an authorization with refund_id null', async () => {
    const answer = await call('refund', {
      body: { authorization_token: SEED.authorizationTokens.releasable, description: 'Order cancelled' },
    });

    expect(answer.statusCode).toBe(200);
    expect(answer.body).toEqual({
      status: 1,
      msg: 'Successfully processed the authorization refund',
      data: { refund_id: null },
    });
  });

  it('requires exactly one of payment_id and authorization_token', async () => {
    const answer = await call('refund', { body: { description: 'which one?' } });

    expect(answer.statusCode).toBe(400);
    expect(sandbox.counters().refund ?? 0).toBe(0);
  });
});

describe('retrievePayments', () => {
  it('returns the payment records of an order', async () => {
    const answer = await call('retrievePayments', { id: SEED.orders.sample });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.msg).toBe('Payments with order_id:LP8006126139');
    expect(answer.body.data).toEqual([
      expect.objectContaining({
        payment_id: SEED.payments.sample,
        order_id: 'LP8006126139',
        status: 'RECEIVED',
        customer: expect.objectContaining({ fist_name: 'Saman' }),
        payment_method: expect.objectContaining({ card_no: '************1234' }),
      }),
    ]);
  });

  it('returns every payment of an order id used twice', async () => {
    const answer = await call('retrievePayments', { id: SEED.orders.duplicate });

    expect(answer.body.data).toHaveLength(2);
  });

  it('answers 202 with status 0 while the gateway says the payment is pending', async () => {
    sandbox.faults.inject('search', {
      kind: 'status',
      status: 200,
      contentType: 'application/json',
      body: '{"status":0,"msg":"Payment pending","data":null}',
    });

    const answer = await call('retrievePayments', { id: SEED.orders.sample });

    expect(answer.statusCode).toBe(202);
    expect(answer.body).toEqual({
      status: 0,
      msg: `The payment of order ${SEED.orders.sample} is pending at the gateway; check again later.`,
      data: [],
    });
  });

  it('answers 422 gateway_rejected when PayHere refuses the search with another message than No payments found', async () => {
    sandbox.faults.inject('search', {
      kind: 'status',
      status: 200,
      contentType: 'application/json',
      body: '{"status":-1,"msg":"Invalid order id","data":null}',
    });

    const answer = await call('retrievePayments', { id: SEED.orders.sample });

    expect(answer.statusCode).toBe(422);
    expect(answer.body).toEqual({
      status: -1,
      msg: 'The gateway refused the payment search: Invalid order id',
      data: { code: 'gateway_rejected' },
    });
  });

  it('answers 404 not_found for an order without payments', async () => {
    const answer = await call('retrievePayments', { id: SEED.orders.withoutPayments });

    expect(answer.statusCode).toBe(404);
    expect(answer.body).toMatchObject({ status: -1, data: { code: 'not_found' } });
    expect(answer.body.msg).toContain(SEED.orders.withoutPayments);
  });

  it('rejects an order id longer than 64 characters without calling the gateway', async () => {
    const answer = await call('retrievePayments', { id: 'x'.repeat(65) });

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.errors[0].path).toBe('path.id');
    expect(sandbox.counters().search ?? 0).toBe(0);
  });
});
