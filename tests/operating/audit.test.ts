import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import { testToken } from '../helpers/auth.ts';
import { type CallOptions, call, useTestGateway } from '../helpers/gateway.ts';
import { captureLogs, type LogLine } from '../helpers/logs.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { customer, customerToken } from '../helpers/orders.ts';
import type { RouteName } from '../helpers/routes.ts';

/**
 * The audit trail (issue "Ready to run in production", docs/operator.md "Operating it"): one `info` line
 * `audit` per answer of a route that moves money or creates an order, and per notification that
 * changed an order, naming who did what to which object; never a token or a card number.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });

afterEach(() => vi.unstubAllEnvs());

const MERCHANT = 'audit-merchant';
const asMerchant = async (scope: string) => ({
  Authorization: `Bearer ${await testToken({ scope: `${scope} merchant`, sub: MERCHANT })}`,
});
const auditLines = (lines: LogLine[]) => lines.filter((line) => line.message === 'audit');

const chargeBody = (token: string = SEED.customerTokens.success) => ({
  type: 'PAYMENT',
  order_id: `Audit-${randomUUID()}`,
  items: 'Taxi Hire 123',
  currency: 'LKR',
  amount: 345.67,
  customer_token: token,
});

type Audited = Extract<
  RouteName,
  'charge' | 'capture' | 'refund' | 'retrySubscription' | 'cancelSubscription' | 'createCheckout'
>;

/** Each audited route's request, its scope, and the fields its line must carry given the answer. */
const AUDITED: Record<
  Audited,
  { scope: string; request: () => CallOptions; fields: (data: any, request: CallOptions) => object }
> = {
  charge: {
    scope: 'payments:charge',
    request: () => ({ body: chargeBody() }),
    fields: (data, { body }: any) => ({
      orderId: body.order_id,
      paymentId: String(data.payment_id),
      kind: 'PAYMENT',
      amount: 345.67,
      currency: 'LKR',
    }),
  },
  capture: {
    scope: 'payments:capture',
    request: () => ({
      body: {
        authorization_token: SEED.authorizationTokens.capturable,
        amount: 80,
        deduction_details: 'Out of stock',
      },
    }),
    fields: (data) => ({
      orderId: 'Order12345',
      paymentId: String(data.payment_id),
      amount: 80,
      currency: 'LKR',
    }),
  },
  refund: {
    scope: 'payments:refund',
    request: () => ({ body: { payment_id: SEED.payments.refundable, description: 'Item is out of stock' } }),
    fields: (data) => ({
      paymentId: String(SEED.payments.refundable),
      refundId: String(data.refund_id),
      kind: 'refund',
    }),
  },
  retrySubscription: {
    scope: 'subscriptions:write',
    request: () => ({ id: String(SEED.subscriptions.failed) }),
    fields: () => ({ subscriptionId: String(SEED.subscriptions.failed) }),
  },
  cancelSubscription: {
    scope: 'subscriptions:write',
    request: () => ({ id: String(SEED.subscriptions.active) }),
    fields: () => ({ subscriptionId: String(SEED.subscriptions.active) }),
  },
  createCheckout: {
    scope: 'payments:charge',
    request: () => ({ body: { kind: 'payment', items: 'Taxi Hire 123', currency: 'LKR', amount: 345.67 } }),
    fields: (data) => ({ orderId: data.order_id, kind: 'payment', amount: 345.67, currency: 'LKR' }),
  },
};

describe('each route that moves money or creates an order writes one audit line', () => {
  it.each(Object.keys(AUDITED) as Audited[])('%s', async (route) => {
    const { scope, request, fields } = AUDITED[route];
    const options = request();
    const headers = await asMerchant(scope);
    const lines = captureLogs('info');

    const answer = await call(route, { ...options, headers });

    expect(answer.statusCode).toBe(route === 'createCheckout' ? 201 : 200);
    const audits = auditLines(lines);
    expect(audits).toHaveLength(1);
    expect(audits[0]).toEqual({
      level: 'info',
      time: expect.any(String),
      message: 'audit',
      requestId: expect.any(String),
      caller: MERCHANT,
      role: 'merchant',
      route,
      outcome: 'done',
      replayed: false,
      httpStatus: answer.statusCode,
      ...fields(answer.body.data, options),
    });
    // Never a credential, a saved card's token or a hold's token.
    const written = JSON.stringify(lines);
    expect(written).not.toContain(headers.Authorization.slice('Bearer '.length));
    expect(written).not.toContain(SEED.customerTokens.success);
    expect(written).not.toContain(SEED.authorizationTokens.capturable);
  });
});

describe('the audit line tells each outcome apart', () => {
  it('a replay is marked replayed, with the same ids', async () => {
    const options = {
      body: chargeBody(),
      idempotencyKey: randomUUID(),
      headers: await asMerchant('payments:charge'),
    };
    const lines = captureLogs('info');

    const first = await call('charge', options);
    const replay = await call('charge', options);

    expect(replay.headers['Idempotent-Replayed']).toBe('true');
    const [original, replayed] = auditLines(lines);
    expect(original).toMatchObject({ outcome: 'done', replayed: false });
    expect(replayed).toMatchObject({
      outcome: 'done',
      replayed: true,
      orderId: options.body.order_id,
      paymentId: String(first.body.data.payment_id),
    });
  });

  it('a declined charge (402) is declined', async () => {
    const lines = captureLogs('info');

    const answer = await call('charge', {
      body: chargeBody(SEED.customerTokens.declined),
      headers: await asMerchant('payments:charge'),
    });

    expect(answer.statusCode).toBe(402);
    expect(auditLines(lines)).toEqual([
      expect.objectContaining({ route: 'charge', outcome: 'declined', httpStatus: 402, replayed: false }),
    ]);
    expect(JSON.stringify(lines)).not.toContain(SEED.customerTokens.declined);
  });

  it('a charge whose answer was lost is unknown, with its code', async () => {
    const body = chargeBody();
    sandbox.faults.inject('charge', { kind: 'resetBeforeProcessing' });
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
    const lines = captureLogs('info');

    const answer = await call('charge', { body, headers: await asMerchant('payments:charge') });

    expect(answer.body.data.code).toBe('outcome_unknown');
    expect(auditLines(lines)).toEqual([
      expect.objectContaining({
        route: 'charge',
        outcome: 'unknown',
        code: 'outcome_unknown',
        httpStatus: 202,
        orderId: body.order_id,
      }),
    ]);
  });

  it("a customer refused another's payment is rejected, naming the customer and the payment", async () => {
    const sub = customer('audit-customer');
    const lines = captureLogs('info');

    const answer = await call('refund', {
      body: { payment_id: SEED.payments.refundable, description: 'Not mine' },
      headers: { Authorization: `Bearer ${await customerToken(sub)}` },
    });

    expect(answer.statusCode).toBe(404);
    expect(auditLines(lines)).toEqual([
      expect.objectContaining({
        caller: sub,
        role: 'customer',
        route: 'refund',
        outcome: 'rejected',
        code: 'not_found',
        httpStatus: 404,
        paymentId: String(SEED.payments.refundable),
      }),
    ]);
    expect(sandbox.counters().refund ?? 0).toBe(0);
  });

  it('an invalid request is rejected without the ids it did not validly name', async () => {
    const lines = captureLogs('info');

    const answer = await call('refund', {
      body: { payment_id: 'not-a-number', description: 'x' },
      headers: await asMerchant('payments:refund'),
    });

    expect(answer.statusCode).toBe(400);
    const [line] = auditLines(lines);
    expect(line).toMatchObject({ outcome: 'rejected', code: 'invalid_request', caller: MERCHANT });
    expect(line).not.toHaveProperty('paymentId');
  });

  it('nobody authenticated, nothing audited; and reads are not audited', async () => {
    const lines = captureLogs('info');

    const anonymous = await call('charge', { body: chargeBody(), headers: { Authorization: 'Bearer nope' } });
    const read = await call('retrievePayments', { id: SEED.orders.sample });

    expect([anonymous.statusCode, read.statusCode]).toEqual([401, 200]);
    expect(auditLines(lines)).toEqual([]);
  });
});

describe('notifications that change an order are audited', () => {
  it('as done by PayHere, with the order, its owner, the move and the signed amount; a redelivery is not', async () => {
    const created = await call('createCheckout', {
      body: { kind: 'payment', items: 'Audit', currency: 'LKR', amount: 1_200 },
      headers: await asMerchant('payments:charge'),
    });
    const orderId: string = created.body.data.order_id;
    const notification = signed({ order_id: orderId, payhere_amount: '1200.00', status_code: '2' });
    const lines = captureLogs('info');

    const first = await notify(notification);
    const again = await notify(notification);

    expect([first.statusCode, again.statusCode]).toEqual([200, 200]);
    expect(auditLines(lines)).toEqual([
      {
        level: 'info',
        time: expect.any(String),
        message: 'audit',
        requestId: expect.any(String),
        route: 'notify',
        caller: 'payhere',
        role: 'gateway',
        replayed: false,
        outcome: 'recorded',
        orderId,
        owner: MERCHANT,
        kind: 'payment',
        from: 'created',
        // PayHere's records do not show the payment: reported, not confirmed.
        to: 'pending',
        evidence: 'notified_success',
        statusCode: '2',
        amount: '1200.00',
        currency: 'LKR',
      },
    ]);
    expect(JSON.stringify(lines)).not.toContain(notification.md5sig);
  });
});
