// PayHere's scheduler on demand: a subscription's next installment, paid or declined, and its end
// (RECURRING_COMPLETE, RECURRING_STOPPED), each notified to the subscription's notify_url.
import { describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import { call, manualClock, useSandboxAndReceiver } from './helpers.ts';
import { checkoutRequest, expectedMd5sig } from './signing.ts';

// 10:00 in Colombo on 31 January 2025: a month later is the last day of February.
const clock = manualClock(Date.UTC(2025, 0, 31, 4, 30, 0));
const stand = useSandboxAndReceiver(clock);

/** A new subscription, its first installment paid; the receiver's log starts after its notification. */
async function subscribe(duration = '3 Month'): Promise<number> {
  const { subscription_id } = await stand.sandbox.completeCheckout(
    checkoutRequest(stand.receiver.url, {
      kind: 'recurring',
      order_id: 'Order-R1',
      items: 'Magazine',
      amount: 750,
      custom_2: 'plan-b',
      recurrence: '1 Month',
      duration,
    }),
  );
  stand.receiver.clear();
  return subscription_id!;
}

async function subscriptionStatus(id: number): Promise<string> {
  return (await stand.api.get(`subscription/${id}`)).json.data.status;
}

describe('an installment', () => {
  it('paid: one more payment of the subscription, notified RECURRING_INSTALLMENT_SUCCESS', async () => {
    const id = await subscribe();
    const answer = await stand.sandbox.chargeInstallment(id, { outcome: 'success' });
    const [notification] = stand.receiver.received;
    const payments = await stand.api.get(`subscription/${id}/payments`);

    expect(answer).toMatchObject({
      subscription_id: id,
      message_type: 'RECURRING_INSTALLMENT_SUCCESS',
      payment_id: expect.any(Number),
      status: 'ACTIVE',
      installments_paid: 2,
    });
    expect(notification?.fields).toEqual({
      merchant_id: '1211149',
      order_id: 'Order-R1',
      payment_id: String(answer.payment_id),
      payhere_amount: '750.00',
      payhere_currency: 'LKR',
      status_code: '2',
      md5sig: expectedMd5sig(notification!.fields),
      custom_1: 'cart-42',
      custom_2: 'plan-b',
      status_message: 'Successfully received the VISA payment',
      method: 'VISA',
      card_holder_name: 'S Perera',
      card_no: '************1234',
      card_expiry: '12/27',
      recurring: '1',
      subscription_id: String(id),
      message_type: 'RECURRING_INSTALLMENT_SUCCESS',
      item_recurrence: '1 Month',
      item_duration: '3 Month',
      item_rec_status: '0',
      item_rec_date_next: '2025-03-31',
      item_rec_install_paid: '2',
    });
    expect(payments.json.data.map((p: { payment_id: number }) => p.payment_id)).toContain(answer.payment_id);
    expect(payments.json.data).toHaveLength(2);
  });

  it('carries the same signature every time, as docs/payhere.md warns', async () => {
    const id = await subscribe('Forever');
    await stand.sandbox.chargeInstallment(id, { outcome: 'success' });
    await stand.sandbox.chargeInstallment(id, { outcome: 'success' });
    const [first, second] = stand.receiver.received;

    expect(first?.fields.payment_id).not.toBe(second?.fields.payment_id);
    expect(first?.fields.md5sig).toBe(second?.fields.md5sig);
  });

  it('paid for the last time completes the subscription, which then has nothing due', async () => {
    const id = await subscribe('2 Month');
    const answer = await stand.sandbox.chargeInstallment(id, { outcome: 'success' });

    expect(answer.status).toBe('COMPLETED');
    expect(stand.receiver.received[0]?.fields).toMatchObject({
      item_rec_status: '1',
      item_rec_date_next: '',
      item_rec_install_paid: '2',
    });
    expect(await subscriptionStatus(id)).toBe('COMPLETED');
    await expect(stand.sandbox.chargeInstallment(id, { outcome: 'success' })).rejects.toMatchObject({
      status: 400,
      message: 'Subscription is already completed.',
    });
  });

  it('declined: the subscription FAILED, notified RECURRING_INSTALLMENT_FAILED, nothing paid', async () => {
    const id = await subscribe();
    const answer = await stand.sandbox.chargeInstallment(id, { outcome: 'decline' });
    const fields = stand.receiver.received[0]!.fields;
    const payments = await stand.api.get(`subscription/${id}/payments`);

    expect(answer).toMatchObject({ status: 'FAILED', installments_paid: 1 });
    expect(fields).toMatchObject({
      payment_id: String(answer.payment_id),
      status_code: '-2',
      status_message: 'Payment declined by the issuer.',
      message_type: 'RECURRING_INSTALLMENT_FAILED',
      item_rec_status: '-2',
      item_rec_date_next: '2025-02-28',
      item_rec_install_paid: '1',
    });
    expect(fields.md5sig).toBe(expectedMd5sig(fields));
    expect(payments.json.data).toHaveLength(1);
    expect(await subscriptionStatus(id)).toBe('FAILED');
  });

  it('declined leaves a subscription the Merchant API can retry', async () => {
    const id = await subscribe();
    await stand.sandbox.chargeInstallment(id, { outcome: 'decline' });
    const retried = await stand.api.post('subscription/retry', { subscription_id: id });

    expect(retried.json.msg).toBe('Recurring payment charged successfully');
    expect(await subscriptionStatus(id)).toBe('ACTIVE');
  });

  it('declined and then retried through the Merchant API counts the retry as an installment', async () => {
    const id = await subscribe('2 Month');
    await stand.sandbox.chargeInstallment(id, { outcome: 'decline' });
    await stand.api.post('subscription/retry', { subscription_id: id });

    expect(await subscriptionStatus(id)).toBe('COMPLETED');
  });

  it('paid after a declined one makes the subscription ACTIVE again', async () => {
    const id = await subscribe();
    await stand.sandbox.chargeInstallment(id, { outcome: 'decline' });
    const answer = await stand.sandbox.chargeInstallment(id, { outcome: 'success' });

    expect(answer).toMatchObject({ status: 'ACTIVE', installments_paid: 2 });
  });

  it('of a seeded subscription goes to the notify_url the call names', async () => {
    const answer = await stand.sandbox.chargeInstallment(SEED.subscriptions.active, {
      outcome: 'success',
      notify_url: stand.receiver.url,
    });

    expect(answer.installments_paid).toBe(3);
    expect(stand.receiver.received[0]?.fields).toMatchObject({
      order_id: 'Order23451',
      payhere_amount: '2500.00',
      subscription_id: String(SEED.subscriptions.active),
      item_recurrence: '1 Month',
      item_duration: '1 Year',
      item_rec_date_next: '2024-04-05',
      item_rec_install_paid: '3',
    });
  });

  it('of a seeded subscription without a notify_url is refused and changes nothing', async () => {
    await expect(
      stand.sandbox.chargeInstallment(SEED.subscriptions.active, { outcome: 'success' }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/no notify_url/),
    });
    expect(
      (await stand.api.get(`subscription/${SEED.subscriptions.active}/payments`)).json.data,
    ).toHaveLength(2);
  });

  it('of a cancelled or unknown subscription is refused', async () => {
    const request = { outcome: 'success', notify_url: stand.receiver.url } as const;

    await expect(
      stand.sandbox.chargeInstallment(SEED.subscriptions.cancelled, request),
    ).rejects.toMatchObject({
      status: 400,
      message: 'Subscription is already cancelled.',
    });
    await expect(stand.sandbox.chargeInstallment(SEED.subscriptions.unknown, request)).rejects.toMatchObject({
      status: 404,
      message: 'Subscription not found',
    });
  });

  it('takes the delivery faults', async () => {
    const id = await subscribe();
    await stand.sandbox.chargeInstallment(id, {
      outcome: 'success',
      delivery: { duplicate: true, tamper: { subscription_id: '420075032251' } },
    });

    expect(stand.receiver.received).toHaveLength(2);
    expect(stand.receiver.received[0]?.fields.subscription_id).toBe('420075032251');
  });
});

describe('the end of a subscription', () => {
  it('RECURRING_COMPLETE: COMPLETED, with its last payment id', async () => {
    const id = await subscribe();
    const { payment_id } = await stand.sandbox.chargeInstallment(id, { outcome: 'success' });
    stand.receiver.clear();
    const answer = await stand.sandbox.completeSubscription(id);
    const fields = stand.receiver.received[0]!.fields;

    expect(answer).toMatchObject({
      message_type: 'RECURRING_COMPLETE',
      status: 'COMPLETED',
      payment_id: null,
    });
    expect(fields).toMatchObject({
      payment_id: String(payment_id),
      status_code: '2',
      status_message: 'Recurring payments completed',
      message_type: 'RECURRING_COMPLETE',
      item_rec_status: '1',
      item_rec_date_next: '',
      item_rec_install_paid: '2',
    });
    expect(fields.md5sig).toBe(expectedMd5sig(fields));
    expect(await subscriptionStatus(id)).toBe('COMPLETED');
  });

  it('RECURRING_STOPPED: CANCELLED', async () => {
    const id = await subscribe();
    const answer = await stand.sandbox.stopSubscription(id);
    const fields = stand.receiver.received[0]!.fields;

    expect(answer).toMatchObject({ message_type: 'RECURRING_STOPPED', status: 'CANCELLED' });
    expect(fields).toMatchObject({
      status_code: '-1',
      status_message: 'Recurring payments stopped',
      message_type: 'RECURRING_STOPPED',
      item_rec_status: '-1',
    });
    expect(fields.md5sig).toBe(expectedMd5sig(fields));
    expect(await subscriptionStatus(id)).toBe('CANCELLED');
  });

  it('is refused when the subscription already ended the other way', async () => {
    const stopped = await subscribe();
    await stand.sandbox.stopSubscription(stopped);
    const completed = await subscribe();
    await stand.sandbox.completeSubscription(completed);

    await expect(stand.sandbox.completeSubscription(stopped)).rejects.toThrow(
      'Subscription is already cancelled.',
    );
    await expect(stand.sandbox.stopSubscription(completed)).rejects.toThrow(
      'Subscription is already completed.',
    );
  });

  it('can report a cancellation made through the Merchant API', async () => {
    const id = await subscribe();
    await stand.api.post('subscription/cancel', { subscription_id: id });
    const answer = await stand.sandbox.stopSubscription(id);

    expect(answer.status).toBe('CANCELLED');
    expect(stand.receiver.received).toHaveLength(1);
  });
});

describe('over HTTP', () => {
  it('POST /__sandbox/subscriptions/{id}/installment', async () => {
    const id = await subscribe();
    const paid = await call(stand.sandbox, 'POST', `/__sandbox/subscriptions/${id}/installment`, {
      json: { outcome: 'success' },
    });
    const declined = await call(stand.sandbox, 'POST', `/__sandbox/subscriptions/${id}/installment`, {
      json: { outcome: 'decline', delivery: { delayMs: 50 } },
    });
    await stand.sandbox.deliveriesSettled();

    expect(paid.json.msg).toBe('Installment paid');
    expect(paid.json.data).toMatchObject({ subscription_id: id, installments_paid: 2 });
    expect(paid.json.data.deliveries).toEqual([expect.objectContaining({ status: 200 })]);
    expect(declined.json.msg).toBe('Installment declined');
    expect(declined.json.data.deliveries).toEqual([]);
    expect(stand.receiver.received).toHaveLength(2);
  });

  it('POST /__sandbox/subscriptions/{id}/complete and /stop, with an empty body', async () => {
    const first = await subscribe();
    const second = await subscribe();
    const completed = await call(stand.sandbox, 'POST', `/__sandbox/subscriptions/${first}/complete`);
    const stopped = await call(stand.sandbox, 'POST', `/__sandbox/subscriptions/${second}/stop`);

    expect(completed.json).toMatchObject({ status: 1, msg: 'Subscription completed' });
    expect(stopped.json).toMatchObject({ status: 1, msg: 'Subscription stopped' });
  });

  it('answers 404 for an unknown subscription and 400 for a bad body', async () => {
    const unknown = await call(
      stand.sandbox,
      'POST',
      `/__sandbox/subscriptions/${SEED.subscriptions.unknown}/stop`,
    );
    const bad = await call(
      stand.sandbox,
      'POST',
      `/__sandbox/subscriptions/${SEED.subscriptions.active}/installment`,
      {
        json: { outcome: 'maybe' },
      },
    );

    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ status: -1, msg: 'Subscription not found', data: null });
    expect(bad.status).toBe(400);
    expect(bad.json.msg).toBe('Invalid request parameter: outcome');
  });
});
