import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import { testToken } from '../helpers/auth.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { customer, testLedger } from '../helpers/orders.ts';

/**
 * A payment's refunds as records (GET /gateway/api/payments/{id}/refunds) and what is left of it:
 * a partial refund, then the rest, a third refused before PayHere; above what is left is refused
 * with nothing sent; a customer sees its own payment's refunds only.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const alice = customer('alice');
const bob = customer('bob');

const bearer = async (sub: string) => ({
  Authorization: `Bearer ${await testToken({ scope: 'payments:read', sub })}`,
});

/** A payment of 1,000 LKR the merchant charged for Alice through the service (the ledger links it to its order). */
async function alicePaid(): Promise<number> {
  const charged = await call('charge', {
    body: {
      type: 'PAYMENT',
      order_id: `Refunds-${randomUUID().slice(0, 8)}`,
      items: 'Door bell',
      currency: 'LKR',
      amount: 1000,
      customer_token: SEED.customerTokens.success,
    },
    headers: { 'On-Behalf-Of': alice },
  });
  expect(charged.statusCode, charged.raw).toBe(200);
  sandbox.resetCounters();
  return charged.body.data.payment_id as number;
}

const refund = (paymentId: number, amount?: number) =>
  call('refund', {
    body: { payment_id: paymentId, description: 'Returned', ...(amount === undefined ? {} : { amount }) },
  });

describe('a payment’s refunds', () => {
  it('a partial refund, then the rest, each a record; a third is refused with nothing sent', async () => {
    const paymentId = await alicePaid();

    const first = await refund(paymentId, 250);
    const afterFirst = await call('paymentRefunds', { id: String(paymentId) });
    const rest = await refund(paymentId);
    const third = await refund(paymentId, 1);
    const again = await refund(paymentId);
    const records = await call('paymentRefunds', { id: String(paymentId) });

    expect([first.statusCode, rest.statusCode]).toEqual([200, 200]);
    expect(afterFirst.body.data).toMatchObject({ amount: 1000, refunded: 250, left: 750 });
    expect([third, again].map((answer) => [answer.statusCode, answer.body.data.code])).toEqual([
      [409, 'conflict'],
      [409, 'conflict'],
    ]);
    expect(third.body.msg).toBe(`Payment ${paymentId} is refunded in full already: nothing was sent.`);
    expect(sandbox.counters().refund).toBe(2);
    expect(records.statusCode).toBe(200);
    expect(records.body.msg).toBe('Found 2 refunds');
    expect(records.body.data).toEqual({
      payment_id: paymentId,
      order_id: expect.stringMatching(/^Refunds-/),
      currency: 'LKR',
      amount: 1000,
      refunded: 1000,
      left: 0,
      undetermined: 0,
      refunds: [
        {
          id: expect.any(String),
          payment_id: paymentId,
          amount: 250,
          full: false,
          at: expect.any(String),
          by: 'test-client',
          refund_id: first.body.data.refund_id,
          status: 'accepted',
        },
        {
          id: expect.any(String),
          payment_id: paymentId,
          amount: 750,
          full: true,
          at: expect.any(String),
          by: 'test-client',
          refund_id: rest.body.data.refund_id,
          status: 'accepted',
        },
      ],
    });
    expect(records.body.data.refunds[0].id).not.toBe(records.body.data.refunds[1].id);
  });

  it('refuses a refund above what is left before PayHere, and a refund of what is left goes through', async () => {
    const paymentId = await alicePaid();
    await refund(paymentId, 600);
    sandbox.resetCounters();

    const above = await refund(paymentId, 400.01);
    const exactly = await refund(paymentId, 400);

    expect(above.statusCode).toBe(409);
    expect(above.body).toMatchObject({
      status: -1,
      msg: `Payment ${paymentId} has 400.00 LKR left to refund, less than 400.01 LKR: nothing was sent.`,
      data: { code: 'conflict' },
    });
    expect(exactly.statusCode).toBe(200);
    expect(sandbox.counters().refund).toBe(1);
    // The refused refund left the payment's slot free, and no record.
    const records = await call('paymentRefunds', { id: String(paymentId) });
    expect(records.body.data).toMatchObject({ refunded: 1000, left: 0 });
    expect(records.body.data.refunds.map((r: { amount: number }) => r.amount)).toEqual([600, 400]);
  });

  it('shows a customer its own payment’s refunds (by the merchant), and nobody else’s', async () => {
    const paymentId = await alicePaid();
    await refund(paymentId, 100);

    const own = await call('paymentRefunds', { id: String(paymentId), headers: await bearer(alice) });
    const other = await call('paymentRefunds', { id: String(paymentId), headers: await bearer(bob) });
    const unknown = await call('paymentRefunds', { id: '320099999999', headers: await bearer(alice) });
    const unknownToMerchant = await call('paymentRefunds', { id: '320099999999' });

    expect(own.statusCode).toBe(200);
    expect(own.body.data).toMatchObject({ refunded: 100, left: 900 });
    expect(own.body.data.refunds[0].by).toBe('merchant');
    expect([other, unknown].map((answer) => [answer.statusCode, answer.body.data.code])).toEqual(
      Array(2).fill([404, 'not_found']),
    );
    // The merchant asking of a payment the service never refunded nor linked: none sent, nothing known.
    expect(unknownToMerchant.statusCode).toBe(200);
    expect(unknownToMerchant.body).toMatchObject({
      msg: 'Found 0 refunds',
      data: { order_id: null, amount: null, refunded: 0, left: null, refunds: [] },
    });
    expect(other.body.msg).toBe(unknown.body.msg.replace('320099999999', String(paymentId)));
  });

  it('answers a payment the ledger never linked by what the service refunded of it, its amount unknown', async () => {
    const answer = await refund(SEED.payments.refundable, 10);
    const records = await call('paymentRefunds', { id: String(SEED.payments.refundable) });

    expect(answer.statusCode).toBe(200);
    expect(records.body.data).toMatchObject({
      order_id: null,
      amount: null,
      refunded: 10,
      left: null,
      refunds: [{ amount: 10, status: 'accepted' }],
    });
  });
});

describe('a refund in flight', () => {
  it('is a record in_flight, with who sent it and its amount, and no refund number yet', async () => {
    const paymentId = await alicePaid();
    const ledger = testLedger();
    await ledger.takeRefundSlot(String(paymentId), {
      key: `refund#caller#${randomUUID()}`,
      takenAt: Date.parse('2026-11-26T10:00:00Z'),
      amountCents: 30_000,
      by: alice,
    });

    const own = await call('paymentRefunds', { id: String(paymentId), headers: await bearer(alice) });

    expect(own.body.data).toMatchObject({ refunded: 0, left: 1000 });
    expect(own.body.data.refunds).toEqual([
      {
        id: expect.any(String),
        payment_id: paymentId,
        amount: 300,
        full: false,
        at: '2026-11-26T10:00:00.000Z',
        by: alice,
        refund_id: null,
        status: 'in_flight',
      },
    ]);
  });
});
