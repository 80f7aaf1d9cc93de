import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

// Metrics on (vitest turns them off), before any handler loads: the undeterminable refund is counted.
vi.hoisted(() => {
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
});

import { publishMetrics } from '../../lib/log/metrics.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { captureLogs, type LogLine } from '../helpers/logs.ts';
import { testLedger } from '../helpers/orders.ts';
import { ownIdempotencyTable, settleJob as settleJobOver } from '../helpers/settle.ts';
import { chargeBody } from '../resilience/fixtures.ts';

/**
 * A lost refund is settled done only where PayHere's records can show it (docs/app.md "Every unknown
 * resolves"): the ledger keeps the refunds PayHere accepted through the service, so that one of a
 * payment refunded before is never taken for done.
 */
const store = await ownIdempotencyTable();
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
/** Past the default settle delay (10 minutes) after a request's window. */
const LATER = 12 * 60_000;
const settleJob = (later: number) => settleJobOver(store, ledger, later);

/** Every test's log lines (and metrics), kept off the report. */
let lines: LogLine[];
beforeEach(() => {
  lines = captureLogs('warn');
});
afterEach(() => vi.unstubAllEnvs());

/** A payment made through the service: the ledger knows its order, so PayHere's records can be read. */
async function paid(): Promise<number> {
  const charged = await call('charge', { body: chargeBody() });
  expect(charged.statusCode).toBe(200);
  sandbox.resetCounters();
  return charged.body.data.payment_id as number;
}

const partial = (paymentId: number, amount: number, key = randomUUID()) => ({
  body: { payment_id: paymentId, description: `Partial ${amount}`, amount },
  idempotencyKey: key,
});

/** A refund whose answer is lost after PayHere processed it (or before, with `processed` false): 202. */
async function lostRefund(request: { body: object; idempotencyKey: string }, processed = true) {
  sandbox.faults.inject('refund', { kind: processed ? 'reset' : 'resetBeforeProcessing' });
  const answer = await call('refund', request);
  sandbox.faults.clear();
  expect(answer.statusCode).toBe(202);
  expect(answer.body.data.code).toBe('outcome_unknown');
}

/** The counts of the metrics every route (and the settle job) wrote. */
function countsOf(name: string): number {
  let total = 0;
  for (const line of lines.filter((line) => '_aws' in line)) {
    const value = line[name];
    if (value !== undefined) total += [value as number | number[]].flat().reduce((sum, n) => sum + n, 0);
  }
  return total;
}

describe('a partial refund whose answer was lost', () => {
  it('of a payment refunded in part before is never done: after the settle delay, undeterminable, logged and counted', async () => {
    const paymentId = await paid();
    const earlier = await call('refund', partial(paymentId, 10));
    const lost = partial(paymentId, 20);
    await lostRefund(lost);

    // The payment shows a refund, but it may be the earlier one's.
    const repeated = await call('refund', lost);
    const run = await settleJob(LATER).run();
    publishMetrics('settle');
    const final = await call('refund', lost);
    const next = await call('refund', partial(paymentId, 5));

    expect(earlier.statusCode).toBe(200);
    expect(repeated.statusCode).toBe(202);
    expect(repeated.body.data.code).toBe('outcome_unknown');
    expect(run.settled).toBe(1);
    expect(final.statusCode).toBe(409);
    expect(final.headers['Idempotent-Replayed']).toBe('true');
    expect(final.body).toMatchObject({ status: -1, data: { code: 'outcome_undeterminable' } });
    expect(final.body.msg).toMatch(/cannot be determined.*PayHere's portal/);
    expect(countsOf('RefundUndeterminable')).toBe(1);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: 'a lost refund cannot be determined',
        paymentId: String(paymentId),
      }),
    );
    // What may have been made is kept.
    expect(next.statusCode).toBe(200);
    expect(await ledger.paymentRefunds(String(paymentId))).toMatchObject({
      inflight: null,
      refundedCents: 1_500,
      undetermined: 1,
    });
  });

  it('in full, of a payment refunded in part before, is done once the payment is REFUNDED', async () => {
    const paymentId = await paid();
    await call('refund', partial(paymentId, 10));
    const full = { body: { payment_id: paymentId, description: 'The rest' }, idempotencyKey: randomUUID() };
    await lostRefund(full);
    // PayHere finished the refunds meanwhile (the sandbox stays at REFUND REQUESTED).
    sandbox.faults.inject('search', {
      kind: 'status',
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify(await searchShowing(paymentId, 'REFUNDED')),
    });

    const settled = await call('refund', full);

    expect(settled.statusCode).toBe(200);
    expect(settled.body.msg).toMatch(/records show the payment REFUNDED/);
    expect(await ledger.paymentRefunds(String(paymentId))).toMatchObject({
      inflight: null,
      accepted: [{ amountCents: 1_000 }, { amountCents: null, refundId: null }],
    });
  });
});

/** The order's payments as PayHere's search answers them, with the payment in `status`. */
async function searchShowing(paymentId: number, status: string) {
  const reference = await ledger.lookup('payment', String(paymentId));
  const answer = await call('retrievePayments', { id: reference!.orderId });
  return {
    status: 1,
    msg: 'Payments with order_id',
    data: answer.body.data.map((payment: { payment_id: number }) =>
      payment.payment_id === paymentId ? { ...payment, status } : payment,
    ),
  };
}
