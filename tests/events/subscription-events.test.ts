import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { type EventBody, EventStore, FEED_SETTLE_MS } from '../../lib/events/store.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { CONFIRM_INTERVAL_MS } from '../../lib/notifications/receiver.ts';
import { loadOrdersConfig } from '../../lib/orders/config.ts';
import { ledgerWithEvents } from '../../lib/orders/from-environment.ts';
import type { DynamoDbFault } from '../../scripts/dynamodb-faults.ts';
import {
  clearDynamoDbFaults,
  injectDynamoDbFault,
  pendingDynamoDbFaults,
} from '../helpers/dynamodb-faults.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify } from '../helpers/notifications.ts';
import { checkedSecondsAgo, customer, testLedger } from '../helpers/orders.ts';
import { ownIdempotencyTable, settleJob as settleJobOver } from '../helpers/settle.ts';
import { subscribedOrder } from '../helpers/subscriptions.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { expectEventsReplayOrders } from './replay.ts';

/**
 * A subscription's installment failed, stopped and completed (docs/contract.md "Events"): what
 * PayHere's notifications report is recorded, with its event, only once PayHere's records show it,
 * and once: through the handlers in-process against the sandbox (which plays PayHere's scheduler
 * and keeps its records) and the local DynamoDB, with its faults.
 */
// The settle job's own idempotency table, set before the handlers load.
const store = await ownIdempotencyTable();
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const client = localClient();
const alice = customer('alice');
/** The sandbox's notifications go nowhere: the tests post their forms, in the order they choose. */
const NOWHERE = 'https://notify.example.invalid/payhere';

const events = () =>
  new EventStore({ client, table: process.env.EVENTS_TABLE!, now: () => Date.now() + FEED_SETTLE_MS });

/** The order's events published so far, in their sequence (two relays may publish them in either order). */
async function eventsOf(orderId: string): Promise<EventBody[]> {
  await backgroundSettled();
  const published = (await events().page({ limit: 100, objectId: orderId })).events;
  return published.sort((a, b) => a.sequence - b.sequence);
}

const types = (list: EventBody[]) => list.map((event) => event.type);

/** The next `times` writes of the order's ledger item meet `fault` (the local DynamoDB's, in turn). */
const faultOrderWrites = (orderId: string, fault: DynamoDbFault, times = 1) =>
  injectDynamoDbFault({
    operation: 'UpdateItem',
    table: process.env.LEDGER_TABLE!,
    keyPrefix: `order#${orderId}`,
    fault,
    times,
  });

/** The settle job's ledger tells the relay, as the scheduled function's does. */
const settleJob = (later: number) => settleJobOver(store, ledgerWithEvents(), later);

/**
 * The stop recorded once by the settle job's read of PayHere's records (which counted the first
 * installment too), and the order out of its queue.
 */
async function expectStoppedByTheSettleJob(orderId: string, published: EventBody[]): Promise<void> {
  expect(types(published)).toEqual([
    'subscription.created',
    'subscription.installment_paid',
    'subscription.stopped',
  ]);
  expect(await ledger.getOrder(orderId)).toMatchObject({
    subscriptionStatus: 'CANCELLED',
    standingCheckAt: null,
  });
}

/** Every standing check of this file's earlier tests settled, so that a test's runs see only its own. */
async function settleAllDue(): Promise<void> {
  for (let run = 0; run < 5; run++)
    if ((await settleJob(loadOrdersConfig(process.env).settleDelayMs + 60_000).run()).looked === 0) return;
}

afterEach(async () => {
  // This file's faults only: other files inject theirs on the same server at the same time.
  await clearDynamoDbFaults(undefined, process.env.LEDGER_TABLE);
});

/** A recurring order paid in the sandbox, its first notification received: subscription.created. */
async function subscribed(duration = '1 Year'): Promise<{ orderId: string; subscriptionId: number }> {
  const { orderId, subscriptionId } = await subscribedOrder(sandbox, alice, duration);
  expect(await ledger.getOrder(orderId)).toMatchObject({ state: 'succeeded' });
  return { orderId, subscriptionId };
}

/** Posts a notification with its order's right to ask PayHere free (the last confirmation a minute ago). */
async function deliver(orderId: string, form: Record<string, string>) {
  await checkedSecondsAgo(orderId, 'notification', 60);
  const answer = await notify(form);
  expect(answer.statusCode).toBe(200);
  return answer;
}

const installment = async (subscriptionId: number, outcome: 'success' | 'decline') =>
  (await sandbox.chargeInstallment(subscriptionId, { outcome, notify_url: NOWHERE })).deliveries[0]!.fields;
const stop = async (subscriptionId: number) =>
  (await sandbox.stopSubscription(subscriptionId, { notify_url: NOWHERE })).deliveries[0]!.fields;
const complete = async (subscriptionId: number) =>
  (await sandbox.completeSubscription(subscriptionId, { notify_url: NOWHERE })).deliveries[0]!.fields;

describe('an installment that failed', () => {
  it('is one subscription.installment_failed once PayHere’s records show it; replayed or varied it adds none', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const failed = await installment(subscriptionId, 'decline');

    await deliver(orderId, failed);
    await deliver(orderId, failed);
    await deliver(orderId, { ...failed, item_rec_install_paid: '7' });
    const published = await eventsOf(orderId);

    expect(failed).toMatchObject({ status_code: '-2', message_type: 'RECURRING_INSTALLMENT_FAILED' });
    expect(types(published)).toEqual([
      'subscription.created',
      'subscription.installment_paid',
      'subscription.installment_failed',
    ]);
    expect(published[2]!.data).toEqual({
      order_id: orderId,
      kind: 'recurring',
      subscription_id: String(subscriptionId),
      subscription_status: 'FAILED',
      installment: 2,
      installments_paid: 1,
    });
    expect(await ledger.getOrder(orderId)).toMatchObject({
      state: 'succeeded',
      subscriptionStatus: 'FAILED',
      failedInstallment: 2,
      installmentsPaid: 1,
    });
  });

  it('failing again after a paid retry is the next installment’s failure: one event each', async () => {
    const { orderId, subscriptionId } = await subscribed();
    await deliver(orderId, await installment(subscriptionId, 'decline'));
    // PayHere's scheduler retries it and the card pays: the third installment then fails.
    await deliver(orderId, await installment(subscriptionId, 'success'));
    const third = await installment(subscriptionId, 'decline');

    await deliver(orderId, third);
    const published = await eventsOf(orderId);

    expect(types(published).filter((type) => type === 'subscription.installment_failed')).toHaveLength(2);
    expect(published.at(-1)!.data).toMatchObject({ installment: 3, installments_paid: 2 });
    expect(await ledger.getOrder(orderId)).toMatchObject({ failedInstallment: 3, installmentsPaid: 2 });
  });

  it('is not recorded when PayHere’s records no longer show it: retried and paid before its notification came', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const failed = await installment(subscriptionId, 'decline');
    await installment(subscriptionId, 'success');

    await deliver(orderId, failed);
    const published = await eventsOf(orderId);

    expect(types(published)).toEqual(['subscription.created', 'subscription.installment_paid']);
    expect(await ledger.getOrder(orderId)).toMatchObject({
      subscriptionStatus: null,
      failedInstallment: null,
      installmentsPaid: 2,
    });
  });
});

describe('a notification whose unsigned message_type was altered', () => {
  it.each(['RECURRING_COMPLETE', 'RECURRING_STOPPED', 'RECURRING_INSTALLMENT_FAILED'])(
    'a paid installment’s, made %s, records no end and no failure: PayHere’s records show it running',
    async (messageType) => {
      const { orderId, subscriptionId } = await subscribed();
      const paid = await installment(subscriptionId, 'success');

      const answer = await deliver(orderId, { ...paid, message_type: messageType, item_rec_date_next: '' });
      const published = await eventsOf(orderId);

      expect(answer.statusCode).toBe(200);
      // The installment PayHere's payments show is the one thing recorded.
      expect(types(published)).toEqual(['subscription.created', 'subscription.installment_paid']);
      expect(await ledger.getOrder(orderId)).toMatchObject({
        subscriptionStatus: null,
        failedInstallment: null,
        installmentsPaid: 2,
      });
    },
  );

  it('a failure’s, made RECURRING_STOPPED, records the failure PayHere’s records show, not a stop', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const failed = await installment(subscriptionId, 'decline');

    await deliver(orderId, { ...failed, message_type: 'RECURRING_STOPPED' });
    const published = await eventsOf(orderId);

    expect(types(published)).not.toContain('subscription.stopped');
    expect(types(published).at(-1)).toBe('subscription.installment_failed');
    expect((await ledger.getOrder(orderId))?.subscriptionStatus).toBe('FAILED');
  });
});

describe('a subscription stopped', () => {
  it('is one subscription.stopped; replayed it adds none, and a cancel through the service is answered 409 without PayHere', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const stopped = await stop(subscriptionId);

    await deliver(orderId, stopped);
    await deliver(orderId, stopped);
    const callsBefore = sandbox.arrivals().length;
    const cancel = await call('cancelSubscription', { id: String(subscriptionId) });
    const published = await eventsOf(orderId);

    expect(stopped).toMatchObject({ status_code: '-1', message_type: 'RECURRING_STOPPED' });
    expect(cancel.statusCode).toBe(409);
    expect(sandbox.arrivals().length).toBe(callsBefore);
    expect(types(published)).toEqual([
      'subscription.created',
      'subscription.installment_paid',
      'subscription.stopped',
    ]);
    expect(published[2]!.data).toEqual({
      order_id: orderId,
      kind: 'recurring',
      subscription_id: String(subscriptionId),
      subscription_status: 'CANCELLED',
    });
    expect(await ledger.getOrder(orderId)).toMatchObject({
      state: 'succeeded',
      subscriptionStatus: 'CANCELLED',
      nextInstallment: null,
    });
  });

  it('before its last installment’s success and failure arrive: each counted as PayHere’s records show, nothing moved back', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const paid = await installment(subscriptionId, 'success');
    const failed = await installment(subscriptionId, 'decline');
    const stopped = await stop(subscriptionId);

    await deliver(orderId, stopped);
    await deliver(orderId, paid);
    await deliver(orderId, failed);
    const published = await eventsOf(orderId);
    const order = await ledger.getOrder(orderId);

    // The stop's read of PayHere's payments counted the installment paid before it.
    expect(types(published)).toEqual([
      'subscription.created',
      'subscription.installment_paid',
      'subscription.stopped',
    ]);
    expect(published[1]!.data).toMatchObject({ installments_paid: 2 });
    expect(order).toMatchObject({
      subscriptionStatus: 'CANCELLED',
      failedInstallment: null,
      installmentsPaid: 2,
    });
    await expectEventsReplayOrders([order!]);
  });

  it('whose write was applied and its answer lost is still one subscription.stopped', async () => {
    const { orderId, subscriptionId } = await subscribed();
    await deliver(orderId, await installment(subscriptionId, 'success'));
    const stopped = await stop(subscriptionId);
    // The right to ask and the installments are written; the status's write lands and its answer is
    // lost. (The relay of the earlier events is done first: its writes would take the faults.)
    await checkedSecondsAgo(orderId, 'notification', 60);
    await backgroundSettled();
    await faultOrderWrites(orderId, { kind: 'slow', ms: 0 }, 2);
    await faultOrderWrites(orderId, { kind: 'applyAndLose' });

    const answer = await notify(stopped);
    const published = await eventsOf(orderId);

    expect(answer.statusCode).toBe(200);
    expect(await pendingDynamoDbFaults(undefined, process.env.LEDGER_TABLE)).toBe(0);
    expect(types(published).filter((type) => type === 'subscription.stopped')).toHaveLength(1);
    expect((await ledger.getOrder(orderId))?.subscriptionStatus).toBe('CANCELLED');
  });
  it('within 10 s of its order’s last confirmation asks PayHere nothing then; the settle job records it once the right to ask is free, once', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const stopped = await stop(subscriptionId);
    await settleAllDue();
    const callsBefore = sandbox.arrivals().length;

    // The subscription's own notification confirmed it a moment ago: the right to ask is spent.
    const asked = Date.now();
    await notify(stopped);
    const then = await ledger.getOrder(orderId);
    const early = await settleJob(0).run();
    const callsEarly = sandbox.arrivals().length;
    const due = await settleJob(CONFIRM_INTERVAL_MS + 1_000).run();
    const callsDue = sandbox.arrivals().length;
    const again = await settleJob(10 * CONFIRM_INTERVAL_MS).run();
    const published = await eventsOf(orderId);

    expect(callsEarly).toBe(callsBefore);
    expect(early.looked).toBe(0);
    expect(then).toMatchObject({ subscriptionStatus: null });
    expect(then!.standingCheckAt).toBeGreaterThanOrEqual(asked + CONFIRM_INTERVAL_MS);
    expect(then!.standingCheckAt).toBeLessThanOrEqual(Date.now() + CONFIRM_INTERVAL_MS);
    expect(due).toMatchObject({ looked: 1, settled: 1, stillUnknown: 0 });
    // Its payments, then its record.
    expect(callsDue - callsEarly).toBe(2);
    expect(again.looked).toBe(0);
    expect(sandbox.arrivals().length).toBe(callsDue);
    await expectStoppedByTheSettleJob(orderId, published);
  });

  it('that PayHere cannot confirm now is checked by the settle job until it can', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const stopped = await stop(subscriptionId);
    await settleAllDue();
    sandbox.faults.inject('subscriptionPayments', { kind: 'status', status: 400 }, 2);

    const answer = await deliver(orderId, stopped);
    const first = await settleJob(CONFIRM_INTERVAL_MS + 1_000).run();
    const postponed = (await ledger.getOrder(orderId))?.standingCheckAt;
    const second = await settleJob(postponed! - Date.now() + 1_000).run();
    const published = await eventsOf(orderId);

    expect(answer.statusCode).toBe(200);
    expect(first).toMatchObject({ looked: 1, settled: 0, stillUnknown: 1 });
    expect(postponed).toBeGreaterThan(Date.now() + CONFIRM_INTERVAL_MS);
    expect(second).toMatchObject({ looked: 1, settled: 1 });
    expect(sandbox.faults.pending()).toBe(0);
    await expectStoppedByTheSettleJob(orderId, published);
  });
});

describe('a subscription’s standing check', () => {
  it('ends when PayHere’s records hold no such subscription of the order: nothing recorded, no look again', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const stopped = await stop(subscriptionId);
    await settleAllDue();
    await notify(stopped);
    // PayHere has no record of it: its one-subscription endpoint and its list say so.
    sandbox.faults.inject('getSubscription', { kind: 'status', status: 404 });
    sandbox.faults.inject('listSubscriptions', {
      kind: 'status',
      status: 200,
      body: JSON.stringify({ status: 1, msg: 'Found 0 subscriptions', data: [] }),
      contentType: 'application/json',
    });

    const run = await settleJob(CONFIRM_INTERVAL_MS + 1_000).run();
    const again = await settleJob(3 * CONFIRM_INTERVAL_MS).run();
    const published = await eventsOf(orderId);

    expect(run).toMatchObject({ looked: 1, settled: 1, stillUnknown: 0 });
    expect(again.looked).toBe(0);
    expect(types(published).filter((type) => type === 'subscription.stopped')).toEqual([]);
    expect(await ledger.getOrder(orderId)).toMatchObject({ standingCheckAt: null, standingSince: null });
  });

  it('that cannot be queued fails the notification, which is not noted: PayHere’s resend queues it', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const stopped = await stop(subscriptionId);
    await settleAllDue();
    await backgroundSettled();
    // The right to ask (spent: the subscription's own notification confirmed it a moment ago) is
    // asked for first; the check's write then fails every try.
    await faultOrderWrites(orderId, { kind: 'slow', ms: 0 });
    await faultOrderWrites(orderId, { kind: 'status500' }, 5);

    const failed = await notify(stopped);
    await clearDynamoDbFaults(undefined, process.env.LEDGER_TABLE);
    const queuedThen = (await ledger.getOrder(orderId))?.standingCheckAt;
    const resent = await notify(stopped);

    expect(failed.statusCode).toBeGreaterThanOrEqual(500);
    expect(queuedThen).toBeNull();
    expect(resent.statusCode).toBe(200);
    expect((await ledger.getOrder(orderId))?.standingCheckAt).not.toBeNull();
  });

  it('a stop PayHere’s record does not show yet is looked at once more after the settle delay, and then recorded', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const paid = await installment(subscriptionId, 'success');
    await settleAllDue();

    // A paid installment's notification made RECURRING_STOPPED: PayHere's record shows it running.
    const asked = Date.now();
    await deliver(orderId, { ...paid, message_type: 'RECURRING_STOPPED', item_rec_date_next: '' });
    const then = await ledger.getOrder(orderId);
    // Meanwhile PayHere's record comes to show the stop.
    await stop(subscriptionId);
    const early = await settleJob(CONFIRM_INTERVAL_MS + 1_000).run();
    const late = await settleJob(loadOrdersConfig(process.env).settleDelayMs + 60_000).run();
    const published = await eventsOf(orderId);

    expect(then).toMatchObject({ subscriptionStatus: null });
    expect(then!.standingCheckAt).toBeGreaterThanOrEqual(asked + loadOrdersConfig(process.env).settleDelayMs);
    expect(early.looked).toBe(0);
    expect(late).toMatchObject({ looked: 1, settled: 1 });
    expect(types(published)).toEqual([
      'subscription.created',
      'subscription.installment_paid',
      'subscription.stopped',
    ]);
  });

  it('asked for by a stop PayHere’s record does not show yet when the settle job reads it is read once more after the settle delay, and then recorded', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const paid = await installment(subscriptionId, 'success');
    await ledger.confirmInstallments(orderId, 2);
    await settleAllDue();
    const settleDelayMs = loadOrdersConfig(process.env).settleDelayMs;

    // A paid installment's notification made RECURRING_STOPPED, with the right to ask spent: the
    // settle job reads PayHere's record, which shows the subscription running.
    await checkedSecondsAgo(orderId, 'notification', 1);
    await notify({ ...paid, message_type: 'RECURRING_STOPPED', item_rec_date_next: '' });
    const first = await settleJob(CONFIRM_INTERVAL_MS + 1_000).run();
    const then = await ledger.getOrder(orderId);
    // Meanwhile PayHere's record comes to show the stop.
    await stop(subscriptionId);
    const late = await settleJob(settleDelayMs + 60_000).run();
    const published = await eventsOf(orderId);

    expect(first).toMatchObject({ looked: 1, settled: 1 });
    expect(then).toMatchObject({
      subscriptionStatus: null,
      standingCheckAt: then!.standingSince! + settleDelayMs,
    });
    expect(late).toMatchObject({ looked: 1, settled: 1 });
    expect(types(published).filter((type) => type === 'subscription.stopped')).toHaveLength(1);
    expect(await ledger.getOrder(orderId)).toMatchObject({
      subscriptionStatus: 'CANCELLED',
      standingCheckAt: null,
    });
  });

  it('asked for again while the settle job reads PayHere’s records is not ended by that read: the next run reads again', async () => {
    const { orderId, subscriptionId } = await subscribed();
    await settleAllDue();
    await checkedSecondsAgo(orderId, 'notification', 1);
    await notify(await installment(subscriptionId, 'decline'));
    // The job's first read (the subscription's payments) answers late.
    sandbox.faults.inject('subscriptionPayments', { kind: 'latency', ms: 300 });
    const callsBefore = sandbox.arrivals().length;

    const running = settleJob(CONFIRM_INTERVAL_MS + 1_000).run();
    for (let wait = 0; wait < 200 && sandbox.arrivals().length === callsBefore; wait++) await delay(5);
    // Another notification of the order, its right to ask spent, asks while the job reads.
    await checkedSecondsAgo(orderId, 'notification', 1);
    await notify(await stop(subscriptionId));
    const first = await running;
    const then = await ledger.getOrder(orderId);
    const next = await settleJob(CONFIRM_INTERVAL_MS + 2_000).run();

    expect(first).toMatchObject({ looked: 1, settled: 1 });
    expect(then!.standingCheckAt).not.toBeNull();
    expect(next).toMatchObject({ looked: 1, settled: 1 });
    expect(await ledger.getOrder(orderId)).toMatchObject({
      subscriptionStatus: 'CANCELLED',
      standingCheckAt: null,
    });
  });

  it('due when a notification reads PayHere’s records itself is done by that read: the job asks nothing more', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const stopped = await stop(subscriptionId);
    await settleAllDue();
    await ledger.checkStandingAt(orderId, Date.now() - 1_000);

    await deliver(orderId, stopped);
    const run = await settleJob(0).run();

    expect(run.looked).toBe(0);
    expect(await ledger.getOrder(orderId)).toMatchObject({
      subscriptionStatus: 'CANCELLED',
      standingCheckAt: null,
    });
  });
});

describe('an installment whose notification came within 10 s of its order’s last confirmation', () => {
  it('is confirmed by the settle job: one subscription.installment_paid', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const paid = await installment(subscriptionId, 'success');
    await settleAllDue();

    await checkedSecondsAgo(orderId, 'notification', 1);
    await notify(paid);
    const then = await ledger.getOrder(orderId);
    await settleJob(CONFIRM_INTERVAL_MS + 1_000).run();
    const published = await eventsOf(orderId);

    expect(then).toMatchObject({ installmentsPaid: null, reported: { installmentsPaid: 2 } });
    expect(then!.standingCheckAt).not.toBeNull();
    expect(types(published)).toEqual(['subscription.created', 'subscription.installment_paid']);
    // The next date came with the notification alone, unsigned: unknown once the installment is paid.
    expect(published[1]!.data).toMatchObject({ installments_paid: 2, next_installment: null });
    expect((await ledger.getOrder(orderId))?.nextInstallment).toBeNull();
    expect(await ledger.getOrder(orderId)).toMatchObject({ installmentsPaid: 2, standingCheckAt: null });
  });

  it('that PayHere’s records show failed and then paid again is one payment and no failure', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const failed = await installment(subscriptionId, 'decline');
    await settleAllDue();

    await checkedSecondsAgo(orderId, 'notification', 1);
    await notify(failed);
    // PayHere's scheduler retries it and the card pays before the settle job looks.
    await installment(subscriptionId, 'success');
    await settleJob(CONFIRM_INTERVAL_MS + 1_000).run();
    const published = await eventsOf(orderId);

    expect(types(published)).toEqual(['subscription.created', 'subscription.installment_paid']);
    expect(await ledger.getOrder(orderId)).toMatchObject({
      subscriptionStatus: null,
      failedInstallment: null,
      installmentsPaid: 2,
      standingCheckAt: null,
    });
  });
});

describe('a subscription completed', () => {
  it('is one subscription.completed; replayed it adds none, and no later cancel or failure records another end', async () => {
    const { orderId, subscriptionId } = await subscribed();
    const completed = await complete(subscriptionId);

    await deliver(orderId, completed);
    await deliver(orderId, completed);
    const cancel = await call('cancelSubscription', { id: String(subscriptionId) });
    const published = await eventsOf(orderId);

    expect(completed).toMatchObject({ status_code: '2', message_type: 'RECURRING_COMPLETE' });
    expect(cancel.statusCode).toBe(409);
    expect(types(published)).toEqual([
      'subscription.created',
      'subscription.installment_paid',
      'subscription.completed',
    ]);
    expect((await ledger.getOrder(orderId))?.subscriptionStatus).toBe('COMPLETED');
  });

  it('by its last installment is recorded from that installment’s notification: paid, then completed', async () => {
    const { orderId, subscriptionId } = await subscribed('2 Month');
    const last = await installment(subscriptionId, 'success');

    await deliver(orderId, last);
    const published = await eventsOf(orderId);

    expect(last.item_rec_date_next).toBe('');
    expect(types(published)).toEqual([
      'subscription.created',
      'subscription.installment_paid',
      'subscription.completed',
    ]);
    expect(published[1]!.data).toMatchObject({ installments_paid: 2, next_installment: null });
    expect(await ledger.getOrder(orderId)).toMatchObject({
      subscriptionStatus: 'COMPLETED',
      installmentsPaid: 2,
      nextInstallment: null,
    });
  });
});

describe('a subscription cancelled through the service', () => {
  it('is one subscription.cancelled; PayHere’s stop notification of it then adds none', async () => {
    const { orderId, subscriptionId } = await subscribed();

    const cancelled = await call('cancelSubscription', { id: String(subscriptionId) });
    const stopped = await stop(subscriptionId);
    await deliver(orderId, stopped);
    const published = await eventsOf(orderId);

    expect(cancelled.statusCode).toBe(200);
    // The stop's read of PayHere's payments counted the first installment: the one event it adds.
    expect(types(published)).toEqual([
      'subscription.created',
      'subscription.cancelled',
      'subscription.installment_paid',
    ]);
    expect((await ledger.getOrder(orderId))?.subscriptionStatus).toBe('CANCELLED');
  });
});
