import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError } from '../../lib/envelope/errors.ts';
import { chargeEngineFromEnvironment } from '../../lib/orders/from-environment.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { customer, testLedger } from '../helpers/orders.ts';
import { ownIdempotencyTable, settleJob } from '../helpers/settle.ts';
import { chargeBody } from '../resilience/fixtures.ts';

/**
 * Charges PayHere answered pending (`status_code` 0) that nothing ends in time. A hold (AUTHORIZE):
 * PayHere keeps no record of one to read (docs/payhere.md), so only its own notification or
 * PayHere's hold lifetime (7 days) ends it; it never blocks its order for good. A payment whose
 * records keep saying pending past its limit stays pending, and the operator is told; records
 * saying pending never refute a reported success.
 */
const store = await ownIdempotencyTable();
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const DAY = 86_400_000;

/** A charge of `body` PayHere answers pending (202), with the payment id its answer gave. */
async function chargedPending(body: ReturnType<typeof chargeBody>): Promise<string> {
  const paymentId = String(320_025_000_000 + Math.floor(Math.random() * 1_000_000));
  const data = {
    status_code: 0,
    status_message: 'Pending',
    order_id: body.order_id,
    payment_id: Number(paymentId),
  };
  const answer = JSON.stringify({ status: 1, msg: 'Pending', data });
  sandbox.faults.inject('charge', {
    kind: 'status',
    status: 200,
    contentType: 'application/json',
    body: answer,
  });
  const charged = await call('charge', { body });
  sandbox.faults.clear();
  expect(charged.statusCode).toBe(202);
  expect((await ledger.getOrder(body.order_id))?.state).toBe('pending');
  return paymentId;
}

/** A hold PayHere answers pending, with the payment id its answer gave. */
async function pendingHold() {
  const body = chargeBody(undefined, 'AUTHORIZE');
  return { body, paymentId: await chargedPending(body) };
}

describe('a hold PayHere answered pending', () => {
  it('ends with the signed failure of its own payment: its order may be held again', async () => {
    const { body, paymentId } = await pendingHold();

    const failed = await notify(
      signed({ order_id: body.order_id, payhere_amount: '120.50', status_code: '-2', payment_id: paymentId }),
    );
    const order = await ledger.getOrder(body.order_id);
    const again = await call('charge', { body });

    expect(failed.statusCode).toBe(200);
    expect(order?.state).toBe('failed');
    expect(again.statusCode).toBe(200);
  });

  it('is not expired by a look at it before PayHere’s hold lifetime has passed', async () => {
    const { body } = await pendingHold();
    const order = (await ledger.getOrder(body.order_id))!;

    const early = chargeEngineFromEnvironment().settlePending(
      order,
      Date.now() + 5_000,
      () => Date.now() + 6 * DAY,
    );

    await expect(early).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect((await ledger.getOrder(body.order_id))?.state).toBe('pending');
  });

  it('without a notification stays pending until PayHere’s hold lifetime, then the settle job has it expire', async () => {
    const { body } = await pendingHold();
    sandbox.resetCounters();

    await settleJob(store, ledger, 2 * DAY).run();
    const beforeTheLifetime = (await ledger.getOrder(body.order_id))?.state;
    await settleJob(store, ledger, 8 * DAY).run();
    const order = await ledger.getOrder(body.order_id);
    const calls = Object.values(sandbox.counters()).reduce((sum, count) => sum + (count ?? 0), 0);
    const again = await call('charge', { body });

    expect(beforeTheLifetime).toBe('pending');
    expect(order?.state).toBe('cancelled');
    // A hold has no record at PayHere to read: ending it cost PayHere nothing.
    expect(calls).toBe(0);
    expect(again.statusCode).toBe(200);
  });
});

describe('a charge PayHere answered pending whose records keep answering pending past its limit', () => {
  it('stays pending, and counts as unknown over an hour (alarm unknown-over-an-hour)', async () => {
    const body = chargeBody();
    await chargedPending(body);
    sandbox.faults.inject('search', { kind: 'searchPending' }, Number.POSITIVE_INFINITY);

    const beforeTheLimit = await settleJob(store, ledger, DAY / 2).run();
    const afterIt = await settleJob(store, ledger, 2 * DAY, { items: 100, calls: 100 }).run();

    expect(beforeTheLimit.overAnHour).toBe(0);
    expect(afterIt).toMatchObject({ stillUnknown: 1, overAnHour: 1 });
    expect((await ledger.getOrder(body.order_id))?.state).toBe('pending');
  });
});

describe('a reported success whose payment PayHere’s records still show pending', () => {
  it('is never refuted by them: past the settle delay its order stays pending, not failed and chargeable', async () => {
    const created = await call('createCheckout', {
      body: { kind: 'payment', items: 'Door bell', currency: 'LKR', amount: 1000 },
      headers: { 'On-Behalf-Of': customer('alice') },
    });
    const orderId: string = created.body.data.order_id;
    sandbox.faults.inject('search', { kind: 'searchPending' }, Number.POSITIVE_INFINITY);

    await notify(
      signed({ order_id: orderId, payhere_amount: '1000.00', status_code: '2', payment_id: '320012345679' }),
    );
    await settleJob(store, ledger, 30 * 60_000).run();

    expect(await ledger.getOrder(orderId)).toMatchObject({
      state: 'pending',
      reported: { paymentId: '320012345679' },
    });
  });
});
