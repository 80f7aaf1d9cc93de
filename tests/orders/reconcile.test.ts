import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { NOTHING } from '../../lib/gateway/payhere.ts';
import type { ChargeRequest } from '../../lib/schemas/charge.ts';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { testLedger } from '../helpers/orders.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';

/**
 * docs/contract.md and issue "Reconciliation that cannot adopt the wrong payment": a lost charge's candidates
 * are the order's payments within the charge's window; several stay unknown (and are logged as a
 * possible duplicate); a payment is adopted by at most one charge; the payment's own status decides.
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
  it('leaves two matching payments unknown, and logs a possible duplicate', async () => {
    const body = chargeOf(`Twice-${randomUUID()}`);
    const key = randomUUID();
    await lostCharge(body, key);
    // The same order charged again elsewhere within the lost charge's window.
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

    expect(repeat.statusCode).toBe(202);
    expect(repeat.body.data.code).toBe('outcome_unknown');
    expect(repeat.body.msg).toMatch(/several payments/);
    const logged = warnings.map((line) => JSON.parse(line));
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: expect.stringMatching(/possible duplicate/),
        orderId: body.order_id,
      }),
    );
    expect((await call('getCheckout', { id: body.order_id })).body.data.status).toBe('unknown');
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
    });
  });
});

describe('the gateway client’s reconciliation', () => {
  const payhere = () => createPayHere(loadConfig(process.env));

  it('does not adopt a payment made outside the charge’s window', async () => {
    const body = chargeOf(`Late-${randomUUID()}`);
    await (await gatewayApi()).post('payment/charge', body);
    const now = Date.now();

    const settled = await payhere().reconcileCharge(
      body,
      { sentAt: now - 60_000, until: now - 30_000 },
      now + 5_000,
    );

    // PayHere's records show no payment of the charge: nothing to adopt.
    expect(settled).toBe(NOTHING);
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

    const first = await payhere().reconcileCharge(body, window, now + 5_000, adoptFor('charge#first'));
    const second = payhere().reconcileCharge(body, window, now + 5_000, adoptFor('charge#second'));

    expect(first).toMatchObject({ data: { status_code: 2 } });
    await expect(second).rejects.toMatchObject({ code: 'outcome_unknown' });
  });
});
