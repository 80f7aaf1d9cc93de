import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { recordKey } from '../../lib/idempotency/idempotent.ts';
import { CHARGEABLE } from '../../lib/orders/evidence.ts';
import { loadSettleLimits } from '../../lib/settle/from-environment.ts';
import type { SettleLimits } from '../../lib/settle/job.ts';
import { injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { captureLogs } from '../helpers/logs.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { testLedger } from '../helpers/orders.ts';
import { ownIdempotencyTable, type SettleJobOptions, settleJob as settleJobOver } from '../helpers/settle.ts';
import { freshStateTable } from '../helpers/state-table.ts';
import { chargeBody, paymentsOf, validRequest } from '../resilience/fixtures.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';

/**
 * The settle job (docs/contract.md "Every unknown resolves"): money requests whose outcome is
 * unknown and successes PayHere's records did not show are settled from PayHere's records once the
 * settle delay has passed, within a run's limits. The job runs here in-process with its clock moved
 * past the delay; the requests it settles were made through the handlers.
 */
const store = await ownIdempotencyTable();
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const MINUTE = 60_000;
/** Past the default settle delay (10 minutes) after a request's window. */
const LATER = 12 * MINUTE;

const settleJob = (later: number, limits?: SettleLimits, options?: SettleJobOptions) =>
  settleJobOver(store, ledger, later, limits, options);

/** Each test starts with nothing due: what earlier tests left is settled first (holds expire 7 days on). */
beforeEach(async () => {
  for (let run = 0; run < 5; run++) {
    if ((await settleJob(9 * 24 * 60 * MINUTE, { items: 100, calls: 100 }).run()).looked === 0) return;
  }
});

/** The record of `key` for a merchant's request on `route`. */
const recordOf = async (route: string, key: string) => store.get(recordKey(route, 'test-client', key));

/** A charge PayHere processed or not, its answer lost, and the search that would settle it down: 202. */
async function lostCharge(processed: boolean, body = chargeBody()) {
  const key = randomUUID();
  sandbox.faults.inject('charge', { kind: processed ? 'reset' : 'resetBeforeProcessing' });
  sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
  const answer = await call('charge', { body, idempotencyKey: key });
  sandbox.faults.clear();
  expect(answer.statusCode).toBe(202);
  return { body, key };
}

describe('a lost charge', () => {
  it('is not settled before the settle delay', async () => {
    const { body, key } = await lostCharge(false);

    const run = await settleJob(0).run();

    expect(run.settled).toBe(0);
    expect((await ledger.getOrder(body.order_id))?.state).toBe('unknown');
    expect((await recordOf('charge', key))?.state).toBe('outcome_unknown');
  });

  it('PayHere never processed is settled as not done: the order may be charged again, the key answers the settlement', async () => {
    const { body, key } = await lostCharge(false);

    const first = await settleJob(LATER).run();
    const looked = await ledger.getOrder(body.order_id);
    const run = await settleJob(LATER + 2 * MINUTE).run();
    const settled = await ledger.getOrder(body.order_id);
    const repeat = await call('charge', { body, idempotencyKey: key });
    const again = await call('charge', { body });

    // Nothing at the first look past the delay is not yet "not done": a second look, one interval on.
    expect(first).toMatchObject({ settled: 0, stillUnknown: 1 });
    expect(looked?.state).toBe('unknown');
    expect(looked?.charge?.nothingAt).toEqual(expect.any(Number));
    expect(run).toMatchObject({ settled: 1, stillUnknown: 0 });
    expect(settled?.state).toBe('failed');
    expect((await ledger.getOrder(body.order_id))?.state).toBe('succeeded');
    expect(repeat.statusCode).toBe(402);
    expect(repeat.headers['Idempotent-Replayed']).toBe('true');
    expect(repeat.body).toMatchObject({ status: -1, data: { status_code: -2, payment_id: null } });
    expect(repeat.body.msg).toMatch(/not processed/);
    expect(again.statusCode).toBe(200);
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it('PayHere processed is settled as done once its search answers: the order is paid, the key answers the payment', async () => {
    const { body, key } = await lostCharge(true);

    const run = await settleJob(LATER).run();
    const order = await ledger.getOrder(body.order_id);
    const repeat = await call('charge', { body, idempotencyKey: key });

    expect(run.settled).toBe(1);
    expect(order).toMatchObject({ state: 'succeeded', paymentId: expect.any(String) });
    expect(repeat.statusCode).toBe(200);
    expect(repeat.body.data.payment_id).toBe(Number(order!.paymentId));
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it('whose Lambda died in flight is settled too, and its order’s slot freed', async () => {
    const body = chargeBody();
    const key = recordKey('charge', 'test-client', randomUUID());
    const started = Date.now() - 30_000;
    await ledger.claimCharge({
      orderId: body.order_id,
      owner: 'test-client',
      kind: 'charge',
      price: { items: body.items, currency: body.currency, amountCents: Math.round(body.amount * 100) },
      custom1: null,
      custom2: null,
      slot: { key, sentAt: started, until: started + 10_000 },
      chargeable: CHARGEABLE,
      rule: 'merchant',
    });
    const subject = { operation: 'charge', role: 'merchant', sub: 'test-client', owner: 'test-client', body };
    await store.begin(key, 'f'.repeat(64), started + 25_000, {
      subject: JSON.stringify(subject),
      at: started,
    });

    const first = await settleJob(LATER).run();
    const run = await settleJob(LATER + 2 * MINUTE).run();

    expect(first.settled).toBe(0);
    expect(run.settled).toBe(1);
    expect(await ledger.getOrder(body.order_id)).toMatchObject({
      state: 'failed',
      charge: { inflight: false },
    });
    expect(await store.get(key)).toMatchObject({ state: 'complete', response: { statusCode: 402 } });
  });
});

describe('a lost capture, refund and retry', () => {
  it('a capture PayHere processed is settled as done, and proves the hold', async () => {
    const request = await validRequest(sandbox, 'capture');
    const key = randomUUID();
    sandbox.faults.inject('capture', { kind: 'reset' });
    const lost = await call('capture', { ...request, idempotencyKey: key });

    const run = await settleJob(LATER).run();
    const repeat = await call('capture', { ...request, idempotencyKey: key });

    expect(lost.statusCode).toBe(202);
    expect(run.settled).toBe(1);
    // Not in the ledger (the sandbox's own hold): settled from the record as not done, safe to repeat.
    expect([200, 402]).toContain(repeat.statusCode);
    expect(repeat.headers['Idempotent-Replayed']).toBe('true');
  });

  /** A partial refund of a payment made through the service (the ledger knows its order), its answer lost: 202. */
  async function lostRefund(processed: boolean) {
    const paid = await call('charge', { body: chargeBody() });
    const request = { body: { payment_id: paid.body.data.payment_id, description: 'Partial', amount: 20 } };
    const key = randomUUID();
    sandbox.faults.inject('refund', { kind: processed ? 'reset' : 'resetBeforeProcessing' });
    const lost = await call('refund', { ...request, idempotencyKey: key });
    sandbox.faults.clear();
    expect(lost.statusCode).toBe(202);
    return { request, key, paymentId: String(paid.body.data.payment_id) };
  }

  it('a refund PayHere never processed is settled as not done, and its payment’s refund slot freed', async () => {
    const { request, key, paymentId } = await lostRefund(false);

    const blocked = await call('refund', request);
    await settleJob(LATER).run();
    const repeat = await call('refund', { ...request, idempotencyKey: key });
    const again = await call('refund', request);

    expect(blocked.statusCode).toBe(409);
    expect(repeat.statusCode).toBe(422);
    expect(repeat.body.data.code).toBe('gateway_rejected');
    expect(repeat.headers['Idempotent-Replayed']).toBe('true');
    expect(again.statusCode).toBe(200);
    expect(await ledger.paymentRefunds(paymentId)).toMatchObject({ inflight: null, refundedCents: 2_000 });
  });

  it('a refund PayHere processed is settled as done, and its payment’s refund slot freed', async () => {
    const { request, key, paymentId } = await lostRefund(true);

    const blocked = await call('refund', request);
    const run = await settleJob(LATER).run();
    const repeat = await call('refund', { ...request, idempotencyKey: key });
    const again = await call('refund', request);

    expect(blocked.statusCode).toBe(409);
    expect(blocked.body.msg).toContain(key);
    expect(run.settled).toBe(1);
    expect(repeat.statusCode).toBe(200);
    expect(repeat.headers['Idempotent-Replayed']).toBe('true');
    expect(again.statusCode).toBe(200);
    expect(sandbox.counters().refund).toBe(2);
    expect(await ledger.paymentRefunds(paymentId)).toMatchObject({ inflight: null, refundedCents: 4_000 });
  });

  it('a refund of a payment the ledger does not know is settled as undeterminable, never as done or not done', async () => {
    const request = await validRequest(sandbox, 'refund');
    const key = randomUUID();
    sandbox.faults.inject('refund', { kind: 'resetBeforeProcessing' });
    await call('refund', { ...request, idempotencyKey: key });

    await settleJob(LATER).run();
    const repeat = await call('refund', { ...request, idempotencyKey: key });
    const again = await call('refund', request);

    expect(repeat.statusCode).toBe(409);
    expect(repeat.body.data.code).toBe('outcome_undeterminable');
    expect(repeat.body.msg).toMatch(/not in the ledger.*PayHere's portal/);
    expect(repeat.headers['Idempotent-Replayed']).toBe('true');
    // The final answer freed the slot.
    expect(again.statusCode).toBe(200);
  });

  it('a retry PayHere processed is settled as done from the subscription’s payments', async () => {
    const request = await validRequest(sandbox, 'retrySubscription');
    const key = randomUUID();
    sandbox.faults.inject('retry', { kind: 'reset' });
    const lost = await call('retrySubscription', { ...request, idempotencyKey: key });

    const run = await settleJob(LATER).run();
    const repeat = await call('retrySubscription', { ...request, idempotencyKey: key });

    expect(lost.statusCode).toBe(202);
    expect(run.settled).toBe(1);
    expect(repeat.statusCode).toBe(200);
    expect(repeat.body.msg).toMatch(/records show the installment was charged/);
  });
});

describe('a request provably not sent whose key could not be released', () => {
  it('is released by the settle job, never settled as a request that may have been sent', async () => {
    // Prepare: a paid order refunded in part, then a refund above what is left: refused by the
    // service, nothing sent. Its key's release (a conditional delete) fails on every try; marking
    // it not sent works.
    const body = chargeBody();
    const charged = await call('charge', { body });
    const paymentId = charged.body.data.payment_id;
    await call('refund', { body: { payment_id: paymentId, description: 'part', amount: 20 } });
    const key = randomUUID();
    await injectDynamoDbFault({
      operation: 'DeleteItem',
      table: process.env.IDEMPOTENCY_TABLE!,
      keyPrefix: recordKey('refund', 'test-client', key),
      fault: { kind: 'status500' },
      times: 6,
    });
    const tooMuch = { payment_id: paymentId, description: 'too much', amount: 110 };
    const refused = await call('refund', { body: tooMuch, idempotencyKey: key });
    const marked = await recordOf('refund', key);

    // Act: the job's next run, while the refused request's lock may still run.
    const run = await settleJob(LATER).run();
    const after = await recordOf('refund', key);
    const records = await call('paymentRefunds', { id: String(paymentId) });
    const repeat = await call('refund', { body: tooMuch, idempotencyKey: key });

    // Assess: nothing "may have been made"; the repeat is judged again (and refused again).
    expect(refused.statusCode).toBe(409);
    expect(marked).toMatchObject({ state: 'in_progress', notSent: true });
    expect(run.settled).toBe(0);
    expect(after).toBeUndefined();
    expect(records.body.data.undetermined).toBe(0);
    expect(repeat.body.data.code).toBe('conflict');
    expect(sandbox.counters().refund).toBe(1);
  });
});

describe('a lost cancel', () => {
  /** A cancel with a key whose answer is lost and whose state PayHere cannot show at once. */
  async function lostCancel(fault: 'reset' | 'resetBeforeProcessing') {
    const request = await validRequest(sandbox, 'cancelSubscription');
    const key = randomUUID();
    sandbox.faults.inject('cancel', { kind: fault });
    sandbox.faults.inject('getSubscription', { kind: 'status', status: 503 }, 10);
    sandbox.faults.inject('listSubscriptions', { kind: 'status', status: 503 }, 10);
    const withKey = { ...request, headers: { 'Idempotency-Key': key } };
    const lost = await call('cancelSubscription', withKey);
    sandbox.faults.clear();
    return { request, withKey, lost };
  }

  it('PayHere processed is settled as done from the subscription’s state, and kept as cancelled', async () => {
    const { request, withKey, lost } = await lostCancel('reset');

    const run = await settleJob(LATER).run();
    const repeat = await call('cancelSubscription', withKey);
    const cancelsSent = sandbox.counters().cancel;
    const again = await call('cancelSubscription', request);

    expect(lost.statusCode).toBe(202);
    expect(lost.body.data.code).toBe('outcome_unknown');
    expect(run.settled).toBe(1);
    expect(repeat.statusCode).toBe(200);
    expect(repeat.body.msg).toBe('Successfully cancelled the subscription');
    expect(repeat.headers['Idempotent-Replayed']).toBe('true');
    // Settled without sending the cancel again.
    expect(cancelsSent).toBe(1);
    expect(again.statusCode).toBe(409);
  });

  it('PayHere never processed is settled as not processed, once the settle delay has passed', async () => {
    const { withKey, lost } = await lostCancel('resetBeforeProcessing');

    const early = await settleJob(0).run();
    const run = await settleJob(LATER).run();
    const repeat = await call('cancelSubscription', withKey);

    expect(lost.statusCode).toBe(202);
    expect(early).toMatchObject({ settled: 0 });
    expect(run.settled).toBe(1);
    expect(repeat.statusCode).toBe(422);
    expect(repeat.body.msg).toMatch(/is ACTIVE.*it was not processed/);
    expect(sandbox.counters().cancel).toBe(1);
  });
});

describe('a lost hold', () => {
  it('waits for its notification; settled as held when it comes', async () => {
    const { body, key } = await lostCharge(true, chargeBody(undefined, 'AUTHORIZE'));

    const before = await settleJob(LATER).run();
    await notify(
      signed({
        order_id: body.order_id,
        payhere_amount: '120.50',
        status_code: '3',
        authorization_token: randomUUID(),
      }),
    );
    const after = await settleJob(LATER + 2 * 60 * MINUTE).run();
    const repeat = await call('charge', { body, idempotencyKey: key });

    expect(before).toMatchObject({ settled: 0, stillUnknown: 1 });
    expect(after.settled).toBe(1);
    expect(repeat.statusCode).toBe(200);
    expect(repeat.body.data.status_code).toBe(3);
  });

  it('that no notification confirms within PayHere’s hold lifetime is settled as expired', async () => {
    const { body, key } = await lostCharge(true, chargeBody(undefined, 'AUTHORIZE'));

    const run = await settleJob(8 * 24 * 60 * MINUTE).run();
    const repeat = await call('charge', { body, idempotencyKey: key });

    expect(run.settled).toBe(1);
    expect((await ledger.getOrder(body.order_id))?.state).toBe('cancelled');
    expect(repeat.statusCode).toBe(402);
    expect(repeat.body.msg).toMatch(/expired/);
  });
});

describe('a reported success', () => {
  const checkout = async (amount: number) => {
    const created = await call('createCheckout', {
      body: { kind: 'payment', items: 'Settle', currency: 'LKR', amount },
    });
    return created.body.data.order_id as string;
  };

  it('PayHere’s records never show is settled as not done a settle delay later', async () => {
    const orderId = await checkout(300);
    await notify(signed({ order_id: orderId, payhere_amount: '300.00', status_code: '2' }));

    const early = await settleJob(0).run();
    const late = await settleJob(LATER).run();

    expect(early.settled).toBe(0);
    expect(late.settled).toBe(1);
    expect(await ledger.getOrder(orderId)).toMatchObject({ state: 'failed', reportedAt: null });
  });

  it('PayHere could not confirm at first is confirmed by the job', async () => {
    const orderId = await checkout(120.5);
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
    await notify(signed({ order_id: orderId, payhere_amount: '120.50', status_code: '2' }));
    // Paid in PayHere's SDK: PayHere's records show it now.
    await apiClient(sandbox, await accessToken(sandbox)).post('payment/charge', chargeBody(orderId));

    const run = await settleJob(LATER).run();

    expect(run.settled).toBe(1);
    expect((await ledger.getOrder(orderId))?.state).toBe('succeeded');
  });
});

describe('a run', () => {
  it('is bounded in PayHere calls, resumes in the next run, and settles each request once even when two run at once', async () => {
    const lost = [];
    for (let i = 0; i < 6; i++) lost.push(await lostCharge(true));

    const first = await settleJob(LATER, { items: 25, calls: 3 }).run();
    const [second, third] = await Promise.all([settleJob(LATER).run(), settleJob(LATER).run()]);

    expect(first.settled).toBeLessThanOrEqual(3);
    expect(first.backlog).toBe(true);
    expect(first.settled + second.settled + third.settled).toBe(6);
    for (const { body } of lost) expect((await ledger.getOrder(body.order_id))?.state).toBe('succeeded');
  });

  it('settles six queued unknowns in one run, though settling the first costs a token and a search PayHere answers 503 twice', async () => {
    // Prepare: a settle container with no token yet (its first call asks PayHere for one) and PayHere
    // still failing now and then after its outage: one item costs four calls, a whole run's worth
    // when runs were capped at four.
    const lost = [];
    for (let i = 0; i < 6; i++) lost.push(await lostCharge(true));
    const { table } = await freshStateTable();
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 2);

    // Act: a run as deployed.
    const run = await settleJob(LATER, loadSettleLimits({}), { sharedState: table }).run();

    // Assess
    expect(run).toMatchObject({ looked: 6, settled: 6, interrupted: 0, backlog: false });
    for (const { body } of lost) expect((await ledger.getOrder(body.order_id))?.state).toBe('succeeded');
  });

  it('leaves what PayHere cannot answer unknown, looks again later, and counts what is over an hour old', async () => {
    const { body, key } = await lostCharge(true);
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 9);
    const lines = captureLogs('info');

    const run = await settleJob(2 * 60 * MINUTE).run();
    const record = await recordOf('charge', key);

    expect(run).toMatchObject({ settled: 0, stillUnknown: 1, overAnHour: 1 });
    expect(record?.state).toBe('outcome_unknown');
    // At the next run: behind what else is due.
    expect(record?.settle?.at).toBeGreaterThan(Date.now() + 2 * 60 * MINUTE);
    expect(record?.settle?.at).toBeLessThanOrEqual(Date.now() + 2 * 60 * MINUTE + 2 * MINUTE);
    expect((await ledger.getOrder(body.order_id))?.state).toBe('unknown');
    expect(lines).toContainEqual(expect.objectContaining({ message: 'settle run', stillUnknown: 1 }));
  });
});
