import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { GetItemCommand } from '../../lib/dynamodb/index.ts';
import { LedgerStore } from '../../lib/ledger/store.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { RefundStatuses } from '../../lib/reads/refund-statuses.ts';
import { SEED } from '../../sandbox/server.ts';
import { testToken } from '../helpers/auth.ts';
import { injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { customer, testLedger } from '../helpers/orders.ts';
import { forgetSharedReads } from '../helpers/state-table.ts';
import { localClient } from '../idempotency/fixtures.ts';

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
  return (await alicePaidOrder()).paymentId;
}

async function alicePaidOrder(): Promise<{ paymentId: number; orderId: string }> {
  const orderId = `Refunds-${randomUUID().slice(0, 8)}`;
  const charged = await call('charge', {
    body: {
      type: 'PAYMENT',
      order_id: orderId,
      items: 'Door bell',
      currency: 'LKR',
      amount: 1000,
      customer_token: SEED.customerTokens.success,
    },
    headers: { 'On-Behalf-Of': alice },
  });
  expect(charged.statusCode, charged.raw).toBe(200);
  sandbox.resetCounters();
  return { paymentId: charged.body.data.payment_id as number, orderId };
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
      payhere_status: null,
      payhere_status_at: null,
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

/** retrievePayments of `orderId` by the merchant, and its writes after the answer landed. */
async function retrieved(orderId: string) {
  const answer = await call('retrievePayments', { id: orderId });
  expect(answer.statusCode, answer.raw).toBe(200);
  await backgroundSettled();
  return answer;
}

const refundsOf = async (paymentId: number) =>
  (await call('paymentRefunds', { id: String(paymentId) })).body.data as {
    payhere_status: string | null;
    payhere_status_at: string | null;
  };

describe('PayHere’s status of a refunded payment', () => {
  it('is kept from the retrieve reads after a refund, with when each was sent, and costs PayHere no call of its own', async () => {
    const { paymentId, orderId } = await alicePaidOrder();
    await refund(paymentId, 250);
    const beforeAnyRead = await refundsOf(paymentId);
    sandbox.resetCounters();
    // The first status's write lands and its answer is lost: the client's repeat finds it kept.
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      keyPrefix: `refund#${paymentId}`,
      fault: { kind: 'applyAndLose' },
    });

    const statuses: Array<{ status: string | null; at: number; sentFrom: number; answeredBy: number }> = [];
    for (const step of [undefined, 'REFUND PROCESSING', 'REFUNDED'] as const) {
      if (step) {
        sandbox.advanceRefunds(paymentId, { status: step });
        await forgetSharedReads();
      }
      const sentFrom = Date.now();
      const answer = await retrieved(orderId);
      const answeredBy = Date.now();
      const records = await refundsOf(paymentId);
      expect(answer.body.data[0].status).toBe(records.payhere_status);
      statuses.push({
        status: records.payhere_status,
        at: Date.parse(records.payhere_status_at ?? ''),
        sentFrom,
        answeredBy,
      });
    }
    // The read shared for its window again: PayHere not asked, nothing kept anew.
    await retrieved(orderId);
    const last = await refundsOf(paymentId);

    expect(beforeAnyRead).toMatchObject({ payhere_status: null, payhere_status_at: null });
    expect(statuses.map((s) => s.status)).toEqual(['REFUND REQUESTED', 'REFUND PROCESSING', 'REFUNDED']);
    for (const { at, sentFrom, answeredBy } of statuses) {
      expect(at).toBeGreaterThanOrEqual(sentFrom);
      expect(at).toBeLessThanOrEqual(answeredBy);
    }
    expect(last.payhere_status_at).toBe(new Date(statuses[2]!.at).toISOString());
    // Three reads, three searches; the refund records and the statuses kept asked PayHere nothing.
    expect(sandbox.arrivals().map((arrival) => arrival.endpoint)).toEqual(Array(3).fill('search'));
  });

  it('never takes an older read over a newer one, nor a read sent before the refund; one unchanged writes nothing', async () => {
    const paymentId = await alicePaid();
    const id = String(paymentId);
    const ledger = testLedger();
    const beforeRefund = Date.now() - 1;
    const inFlightOnly = await ledger.keepPayHereStatus(id, { status: 'RECEIVED', at: Date.now() });
    await refund(paymentId, 100);
    const { accepted } = await ledger.paymentRefunds(id);
    const at = accepted[0]!.at;

    const kept = [
      await ledger.keepPayHereStatus(id, { status: 'RECEIVED', at: beforeRefund }),
      await ledger.keepPayHereStatus(id, { status: 'REFUND PROCESSING', at: at + 2_000 }),
      // The same write again (its answer lost): it finds itself there.
      await ledger.keepPayHereStatus(id, { status: 'REFUND PROCESSING', at: at + 2_000 }),
      // Two reads raced: the older one lands last.
      await ledger.keepPayHereStatus(id, { status: 'REFUND REQUESTED', at: at + 1_000 }),
      // A later read showing the same: the time kept stays the first read's.
      await ledger.keepPayHereStatus(id, { status: 'REFUND PROCESSING', at: at + 3_000 }),
    ];
    const afterRace = (await ledger.paymentRefunds(id)).payhere;
    const newer = await ledger.keepPayHereStatus(id, { status: 'REFUNDED', at: at + 4_000 });

    expect(inFlightOnly).toBe(false);
    expect(kept).toEqual([false, true, false, false, false]);
    expect(afterRace).toEqual({ status: 'REFUND PROCESSING', at: at + 2_000 });
    expect(newer).toBe(true);
    expect(await refundsOf(paymentId)).toMatchObject({
      payhere_status: 'REFUNDED',
      payhere_status_at: new Date(at + 4_000).toISOString(),
    });
  });

  it('sends no write for a read of a payment that shows no refund, and keeps nothing for one refunded outside the service', async () => {
    const { paymentId, orderId } = await alicePaidOrder();
    // A write of the payment's refund item would meet this fault: it is still there after the read.
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      keyPrefix: `refund#${paymentId}`,
      fault: { kind: 'status500' },
    });
    const read = await retrieved(orderId);
    const oneAttempt = new LedgerStore({
      client: localClient({ maxAttempts: 1 }),
      table: process.env.LEDGER_TABLE!,
    });
    const faultLeft = await oneAttempt
      .keepPayHereStatus(String(paymentId), { status: 'RECEIVED', at: Date.now() })
      .then(
        () => false,
        () => true,
      );

    const sent: string[] = [];
    const statuses = new RefundStatuses({
      ledger: {
        keepPayHereStatus: (id, seen) => {
          sent.push(`${id} ${seen.status}`);
          return testLedger().keepPayHereStatus(id, seen);
        },
      },
    });
    const record = (payment_id: number, status: string) => ({
      payment_id,
      order_id: 'Order-1',
      status,
      currency: 'LKR',
      amount: 10,
    });
    // A payment the service never refunded.
    const refundable = 320099999977;
    await statuses.seen([record(paymentId, 'RECEIVED'), record(refundable, 'REFUNDED')], Date.now());

    expect(read.body.data[0].status).toBe('RECEIVED');
    expect(faultLeft).toBe(true);
    expect(await rawRefundItem(paymentId)).toBeUndefined();
    // Refunded in PayHere's portal: the write is sent, and its condition keeps nothing.
    expect(sent).toEqual([`${refundable} REFUNDED`]);
    expect(await rawRefundItem(refundable)).toBeUndefined();
  });
});

/** The payment's refund item as the ledger's table holds it (undefined: none was ever written). */
async function rawRefundItem(paymentId: number) {
  const { Item } = await localClient().send(
    new GetItemCommand({
      TableName: process.env.LEDGER_TABLE!,
      Key: { pk: { S: `refund#${paymentId}` } },
      ConsistentRead: true,
    }),
  );
  return Item;
}
