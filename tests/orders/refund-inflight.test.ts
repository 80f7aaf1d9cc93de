import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

// Metrics on (vitest turns them off), before any handler loads: the undeterminable refund is counted.
vi.hoisted(() => {
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
});

import type { PayHere } from '../../lib/gateway/payhere.ts';
import { recordKey } from '../../lib/idempotency/idempotent.ts';
import { publishMetrics } from '../../lib/log/metrics.ts';
import { RefundSlots } from '../../lib/orders/refund-slots.ts';
import { testToken } from '../helpers/auth.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { captureLogs, type LogLine } from '../helpers/logs.ts';
import { testLedger } from '../helpers/orders.ts';
import { ownIdempotencyTable, settleJob as settleJobOver } from '../helpers/settle.ts';
import { chargeBody } from '../resilience/fixtures.ts';

/**
 * One refund of a payment in flight at a time (docs/app.md "Every unknown resolves"): PayHere has no
 * idempotency key, so a partial refund whose answer was lost, sent again under a new key, would be
 * paid twice. A refund takes its payment's slot in the ledger before it is sent and frees it once
 * its outcome is known; a lost one is settled done only where PayHere's records can show it.
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

const asAnotherMerchantUser = async () => ({
  Authorization: `Bearer ${await testToken({ scope: 'payments:refund merchant', sub: `ops-${randomUUID()}` })}`,
});

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
  it('blocks a refund of the payment with a new key (409 naming its key) until it is settled; then the new one goes', async () => {
    const paymentId = await paid();
    const first = partial(paymentId, 10);
    const second = partial(paymentId, 10);
    await lostRefund(first);

    const blocked = await call('refund', second);
    const stranger = await call('refund', {
      ...partial(paymentId, 10),
      headers: await asAnotherMerchantUser(),
    });
    const settled = await call('refund', first);
    const after = await call('refund', second);

    expect(blocked.statusCode).toBe(409);
    expect(blocked.body).toMatchObject({ status: -1, data: { code: 'conflict' } });
    expect(blocked.body.msg).toContain(`Idempotency-Key ${first.idempotencyKey}`);
    expect(blocked.body.data.idempotency_key).toBe(first.idempotencyKey);
    expect(stranger.statusCode).toBe(409);
    expect(stranger.body.data).toEqual({ code: 'conflict' });
    expect(stranger.body.msg).not.toContain(first.idempotencyKey);
    expect(stranger.body.msg).toMatch(/Another refund of payment \d+ is in flight/);
    // No refund came before it, and the payment shows one: done.
    expect(settled.statusCode).toBe(200);
    expect(settled.body.msg).toMatch(/records show the payment REFUND REQUESTED/);
    // The 409 sent nothing and kept nothing: the same key refunds once the slot is free.
    expect(after.statusCode).toBe(200);
    expect(after.headers['Idempotent-Replayed']).toBeUndefined();
    expect(sandbox.counters().refund).toBe(2);
    expect(await ledger.paymentRefunds(String(paymentId))).toMatchObject({
      inflight: null,
      accepted: [
        { key: recordKey('refund', 'test-client', first.idempotencyKey), amountCents: 1_000, refundId: null },
        { key: recordKey('refund', 'test-client', second.idempotencyKey), amountCents: 1_000 },
      ],
      refundedCents: 2_000,
      undetermined: 0,
    });
  });

  it('of a payment refunded in part before is never done: after the settle delay, undeterminable, logged and counted', async () => {
    const paymentId = await paid();
    const earlier = await call('refund', partial(paymentId, 10));
    const lost = partial(paymentId, 20);
    await lostRefund(lost);

    // The payment shows a refund, but it may be the earlier one's.
    const repeated = await call('refund', lost);
    const blocked = await call('refund', partial(paymentId, 5));
    const run = await settleJob(LATER).run();
    publishMetrics('settle');
    const final = await call('refund', lost);
    const next = await call('refund', partial(paymentId, 5));

    expect(earlier.statusCode).toBe(200);
    expect(repeated.statusCode).toBe(202);
    expect(repeated.body.data.code).toBe('outcome_unknown');
    expect(blocked.statusCode).toBe(409);
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
    // The final answer freed the slot; what may have been made is kept.
    expect(next.statusCode).toBe(200);
    expect(await ledger.paymentRefunds(String(paymentId))).toMatchObject({
      inflight: null,
      refundedCents: 1_500,
      undetermined: 1,
    });
  });

  it('in full, of a payment refunded in part before, is never done by the payment reading REFUNDED: a finished partial refund reads the same', async () => {
    const paymentId = await paid();
    const earlier = await call('refund', partial(paymentId, 10));
    // PayHere finishes the partial refund: the payment reads REFUNDED, though refunded in part.
    expect(sandbox.advanceRefunds(paymentId).status).toBe('REFUNDED');
    const full = { body: { payment_id: paymentId, description: 'The rest' }, idempotencyKey: randomUUID() };
    // Lost before PayHere processed it: nothing more was refunded.
    await lostRefund(full, false);

    const repeated = await call('refund', full);
    const run = await settleJob(LATER).run();
    const final = await call('refund', full);

    expect(earlier.statusCode).toBe(200);
    expect(sandbox.refunds(paymentId).refunds).toHaveLength(1);
    expect(repeated.statusCode).toBe(202);
    expect(repeated.body.data.code).toBe('outcome_unknown');
    expect(run.settled).toBe(1);
    expect(final.statusCode).toBe(409);
    expect(final.body).toMatchObject({ status: -1, data: { code: 'outcome_undeterminable' } });
    expect(await ledger.paymentRefunds(String(paymentId))).toMatchObject({
      inflight: null,
      accepted: [{ amountCents: 1_000 }],
      undetermined: 1,
    });
  });
});

describe('a refund’s slot', () => {
  it('is freed when PayHere refuses the refund, recording nothing', async () => {
    const paymentId = await paid();
    // PayHere's refusal envelope (a refund above what is left never reaches it: refund-records.test.ts).
    const refusal = { status: -1, msg: 'Error processing refund', data: null };
    sandbox.faults.inject('refund', { kind: 'status', status: 200, body: JSON.stringify(refusal) });

    const refused = await call('refund', partial(paymentId, 50));
    const slot = await ledger.paymentRefunds(String(paymentId));
    const next = await call('refund', partial(paymentId, 20));

    expect(refused.statusCode).toBe(422);
    expect(refused.body.data.code).toBe('gateway_rejected');
    expect(slot).toMatchObject({ inflight: null, accepted: [], undetermined: 0 });
    expect(next.statusCode).toBe(200);
    expect((await ledger.paymentRefunds(String(paymentId))).accepted).toHaveLength(1);
    expect(sandbox.counters().refund).toBe(2);
  });

  it('is freed when the refund provably never reached PayHere (its access token refused twice)', async () => {
    const paymentId = await paid();
    sandbox.faults.inject('refund', { kind: 'invalidToken' }, 2);

    const failed = await call('refund', partial(paymentId, 20));
    const slot = await ledger.paymentRefunds(String(paymentId));
    const next = await call('refund', partial(paymentId, 20));

    expect(failed.statusCode).toBe(503);
    expect(slot).toMatchObject({ inflight: null, accepted: [] });
    expect(next.statusCode).toBe(200);
  });

  it('taken again by its own refund (a write repeated after its answer was lost) is ours; by another, a conflict', async () => {
    const paymentId = String(Date.now());
    const clientKey = randomUUID();
    const key = recordKey('refund', 'test-client', clientKey);
    const caller = { sub: 'test-client', role: 'merchant' } as const;
    const slots = new RefundSlots({ ledger, payhere: {} as PayHere, records: store });
    // The refund is running, and its first write landed: only its answer was lost.
    await store.begin(key, 'f'.repeat(64), Date.now() + 20_000);
    await ledger.takeRefundSlot(paymentId, { key, takenAt: Date.now(), amountCents: 1_000 });

    const again = slots.take(caller, { paymentId, key, amountCents: 1_000 }, Date.now() + 5_000);
    const other = slots.take(
      caller,
      { paymentId, key: recordKey('refund', 'test-client', randomUUID()), amountCents: 1_000 },
      Date.now() + 5_000,
    );

    await expect(again).resolves.toBeUndefined();
    await expect(other).rejects.toMatchObject({
      httpStatus: 409,
      code: 'conflict',
      reach: 'not_sent',
      message: expect.stringContaining(`Idempotency-Key ${clientKey} is still being processed`),
    });
    expect((await ledger.paymentRefunds(paymentId)).inflight).toMatchObject({ key });
  });

  it('held by a refund whose Lambda died in flight blocks the payment (409 naming its key) until the settle job frees it', async () => {
    const paymentId = await paid();
    const key = randomUUID();
    const held = recordKey('refund', 'test-client', key);
    const body = { payment_id: paymentId, description: 'Died', amount: 10 };
    await ledger.takeRefundSlot(String(paymentId), { key: held, takenAt: Date.now(), amountCents: 1_000 });
    // Its lock (the function's timeout) is over; due for the settle job, as its own begin would have made it.
    await store.begin(held, 'f'.repeat(64), Date.now() - 1, {
      subject: JSON.stringify({ operation: 'refund', role: 'merchant', body }),
      at: Date.now() - 1,
    });

    const blocked = await call('refund', partial(paymentId, 10));
    const run = await settleJob(LATER).run();
    const next = await call('refund', partial(paymentId, 10));

    expect(blocked.statusCode).toBe(409);
    expect(blocked.body.msg).toContain(`Idempotency-Key ${key} has no known outcome yet`);
    // The payment shows no refund, a settle delay on: it was not made, and the slot is free.
    expect(run.settled).toBe(1);
    expect((await store.get(held))?.response?.statusCode).toBe(422);
    expect(next.statusCode).toBe(200);
    expect(sandbox.counters().refund).toBe(1);
  });

  it.each([
    ['its record complete with PayHere’s acceptance: recorded from it', 200, 1],
    ['its record complete with PayHere’s refusal', 422, 0],
  ])('left behind by a refund that is over (%s) is freed by the next refund', async (_, status, accepted) => {
    const paymentId = await paid();
    const held = recordKey('refund', 'test-client', randomUUID());
    await ledger.takeRefundSlot(String(paymentId), { key: held, takenAt: Date.now(), amountCents: 1_000 });
    const begun = await store.begin(held, 'f'.repeat(64), Date.now() + 20_000);
    if (!('acquired' in begun)) throw new Error('the record was not begun');
    const body =
      status === 200
        ? { status: 1, msg: 'Successfully processed the refund', data: { refund_id: 560034010999 } }
        : { status: -1, msg: 'The gateway refused the refund', data: { code: 'gateway_rejected' } };
    await store.finish(begun.acquired, 'complete', {
      statusCode: status,
      headers: {},
      body: JSON.stringify(body),
    });

    const next = await call('refund', partial(paymentId, 10));

    expect(next.statusCode).toBe(200);
    const refunds = await ledger.paymentRefunds(String(paymentId));
    expect(refunds.inflight).toBeNull();
    expect(refunds.accepted).toHaveLength(accepted + 1);
    if (accepted) expect(refunds.accepted[0]).toMatchObject({ key: held, refundId: 560034010999 });
  });

  it('left behind by a refund whose record is gone is freed from PayHere’s records', async () => {
    const paymentId = await paid();
    const held = recordKey('refund', 'test-client', randomUUID());
    await ledger.takeRefundSlot(String(paymentId), { key: held, takenAt: Date.now(), amountCents: 1_000 });

    const next = await call('refund', partial(paymentId, 10));

    // The payment shows no refund and none came before: the one left behind was not made.
    expect(next.statusCode).toBe(200);
    expect(await ledger.paymentRefunds(String(paymentId))).toMatchObject({ inflight: null, undetermined: 0 });
    expect((await ledger.paymentRefunds(String(paymentId))).accepted).toHaveLength(1);
  });

  it('left behind, is never freed by another refund once its own key took it again', async () => {
    const paymentId = String(await paid());
    const caller = { sub: 'test-client', role: 'merchant' } as const;
    const first = recordKey('refund', 'test-client', randomUUID());
    // Its write landed and its answer was lost (503, nothing sent): its record was released.
    await ledger.takeRefundSlot(paymentId, { key: first, takenAt: Date.now() - 1_000, amountCents: 1_000 });
    // PayHere's search, which the other refund asks about the slot left behind, answers when told.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    let asked!: () => void;
    const searching = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const payhere = {
      reconcileRefund: async () => {
        asked();
        await answered;
        return 'nothing';
      },
    } as unknown as PayHere;
    const slots = new RefundSlots({ ledger, payhere, records: store });

    // Another refund finds the slot, its record gone ("over"), and asks PayHere...
    const other = slots.take(
      caller,
      { paymentId, key: recordKey('refund', 'test-client', randomUUID()), amountCents: 1_000 },
      Date.now() + 10_000,
    );
    await searching;
    // ...while the client's retry of the first key begins and takes its slot again, to send its refund.
    await store.begin(first, 'f'.repeat(64), Date.now() + 20_000);
    await slots.take(caller, { paymentId, key: first, amountCents: 1_000 }, Date.now() + 10_000);
    answer();
    const refused = await other.then(
      () => undefined,
      (error: { httpStatus?: number }) => error.httpStatus,
    );

    expect(refused).toBe(409);
    expect((await ledger.paymentRefunds(paymentId)).inflight?.key).toBe(first);
  });

  it('lets one of two refunds of a payment sent at once with two keys reach PayHere', async () => {
    const paymentId = await paid();
    sandbox.faults.inject('refund', { kind: 'latency', ms: 150 });

    const answers = await Promise.all([
      call('refund', partial(paymentId, 10)),
      call('refund', partial(paymentId, 10)),
    ]);

    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 409]);
    expect(sandbox.counters().refund).toBe(1);
  });
});
