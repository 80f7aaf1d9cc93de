import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { recordKey } from '../../lib/idempotency/idempotent.ts';
import type { ChargeRequest } from '../../lib/schemas/charge.ts';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { testLedger } from '../helpers/orders.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';

/**
 * A lost charge's candidates are the order's payments no other charge owns (records decide, the
 * window only ranks); several mean the order is paid, flagged as a possible duplicate; a payment is
 * adopted by at most one charge; the payment's own status decides.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();

const chargeOf = (orderId: string): ChargeRequest => ({
  type: 'PAYMENT',
  order_id: orderId,
  items: 'Reconciled',
  currency: 'LKR',
  amount: 750,
  customer_token: SEED.customerTokens.success,
});

/** A charge whose answer is lost and whose order cannot be searched yet: 202 outcome_unknown. */
async function lostCharge(body: ChargeRequest, key: string) {
  sandbox.faults.inject('charge', { kind: 'reset' });
  sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
  const answer = await call('charge', { body, idempotencyKey: key });
  expect(answer.body.data.code).toBe('outcome_unknown');
}

const gatewayApi = async () => apiClient(sandbox, await accessToken(sandbox));

describe('settling a lost charge on repeat', () => {
  it('takes the order as paid when two payments match, and flags a possible duplicate for the merchant', async () => {
    const body = chargeOf(`Twice-${randomUUID()}`);
    const key = randomUUID();
    await lostCharge(body, key);
    // The same order charged again elsewhere: two payments no charge of the service owns.
    await (await gatewayApi()).post('payment/charge', body);
    const warnings: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((line) => {
      warnings.push(String(line));
      return true;
    });
    process.env.LOG_LEVEL = 'warn';

    const repeat = await call('charge', { body, idempotencyKey: key }).finally(() => {
      process.env.LOG_LEVEL = 'silent';
    });

    const payments = (await (await gatewayApi()).get(`payment/search?order_id=${body.order_id}`)).json.data;
    const ids = payments.map((payment: { payment_id: number }) => String(payment.payment_id));
    const adopted = String(repeat.body.data.payment_id);
    expect(repeat.statusCode).toBe(200);
    expect(ids).toContain(adopted);
    expect(repeat.body.msg).toMatch(/possible duplicate/);
    const order = await ledger.getOrder(body.order_id);
    expect(order).toMatchObject({ state: 'succeeded', paymentId: adopted });
    expect(order?.duplicatePayments).toEqual(ids.filter((id: string) => id !== adopted));
    expect(order?.charge?.inflight).toBe(false);
    const logged = warnings.map((line) => JSON.parse(line));
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: expect.stringMatching(/possible duplicate/),
        orderId: body.order_id,
      }),
    );
  });

  it('does not report a payment refunded since as paid', async () => {
    const body = chargeOf(`Refunded-${randomUUID()}`);
    const key = randomUUID();
    await lostCharge(body, key);
    const api = await gatewayApi();
    const [payment] = (await api.get(`payment/search?order_id=${body.order_id}`)).json.data;
    await api.post('payment/refund', { payment_id: payment.payment_id, description: 'Returned' });

    const repeat = await call('charge', { body, idempotencyKey: key });

    expect(repeat.statusCode).toBe(202);
    expect(repeat.body.data.code).toBe('outcome_unknown');
    expect(repeat.body.msg).toContain(`payment ${payment.payment_id}, now REFUND REQUESTED`);
    expect(repeat.body.msg).toMatch(/not paid/);
  });

  it('adopts the one received payment in the window, and records it on the order', async () => {
    const body = chargeOf(`Found-${randomUUID()}`);
    const key = randomUUID();
    await lostCharge(body, key);

    const repeat = await call('charge', { body, idempotencyKey: key });
    const order = await call('getCheckout', { id: body.order_id });

    expect(repeat.statusCode).toBe(200);
    expect(order.body.data).toMatchObject({ status: 'succeeded', payment_id: repeat.body.data.payment_id });
    expect(await ledger.lookup('payment', String(repeat.body.data.payment_id))).toEqual({
      orderId: body.order_id,
      owner: 'test-client',
      chargeKey: recordKey('charge', 'test-client', key),
    });
  });
});

describe('the gateway client’s reconciliation', () => {
  const payhere = () => createPayHere(loadConfig(process.env));

  it('adopts a payment PayHere dated after the charge’s window: PayHere finished it late', async () => {
    const body = chargeOf(`Late-${randomUUID()}`);
    await (await gatewayApi()).post('payment/charge', body);
    const now = Date.now();

    const settled = await payhere().reconcileCharge(
      body,
      { sentAt: now - 60_000, until: now - 30_000 },
      now + 5_000,
    );

    // Records decide, clocks only rank: the order's one payment no charge owns is this charge's.
    expect(settled).toMatchObject({ data: { status_code: 2, order_id: body.order_id } });
  });

  it('does not adopt a payment another charge adopted', async () => {
    const body = chargeOf(`Adopted-${randomUUID()}`);
    await (await gatewayApi()).post('payment/charge', body);
    const now = Date.now();
    const window = { sentAt: now - 1_000, until: now + 5_000 };
    const adoptFor = (chargeKey: string) => (payment: { payment_id: number | string }) =>
      ledger.link(
        'payment',
        String(payment.payment_id),
        { orderId: body.order_id, owner: 'merchant' },
        chargeKey,
      );

    const first = await payhere().reconcileCharge(body, window, now + 5_000, {
      adopt: adoptFor('charge#first'),
    });
    const second = payhere().reconcileCharge(body, window, now + 5_000, { adopt: adoptFor('charge#second') });

    expect(first).toMatchObject({ data: { status_code: 2 } });
    await expect(second).rejects.toMatchObject({ code: 'outcome_unknown' });
  });
});
