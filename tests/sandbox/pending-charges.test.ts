// Charges answered pending (status_code 0) that PayHere decides later: recorded out of search's
// sight until then, then a payment (or nothing) and a signed notification for the same payment id.
import { describe, expect, it } from 'vitest';
import { SandboxRefusal, SEED } from '../../sandbox/server.ts';
import { call, manualClock, useSandboxAndReceiver } from './helpers.ts';
import { expectedMd5sig } from './signing.ts';

const clock = manualClock(Date.UTC(2025, 0, 15, 4, 30, 0));
const stand = useSandboxAndReceiver(clock);

async function chargePending(overrides: Record<string, unknown> = {}) {
  const answer = await stand.api.post('payment/charge', {
    type: 'PAYMENT',
    order_id: 'OrderP1',
    items: 'Pending charge',
    currency: 'LKR',
    amount: 750,
    customer_token: SEED.customerTokens.pending,
    notify_url: stand.receiver.url,
    ...overrides,
  });
  await stand.sandbox.deliveriesSettled();
  return answer.json.data as { payment_id: number; status_code: number };
}

function sriLanka(ms: number): string {
  return new Date(ms + 5.5 * 3_600_000).toISOString().slice(0, 19).replace('T', ' ');
}

describe('a pending charge', () => {
  it('answers status_code 0 with a payment id, notified as pending, out of search until decided', async () => {
    const chargedAt = clock.now();
    const charged = await chargePending();
    const search = await stand.api.search('OrderP1');

    expect(charged.status_code).toBe(0);
    expect(String(charged.payment_id)).toMatch(/^\d{12}$/);
    expect(stand.receiver.received[0]?.fields).toMatchObject({
      payment_id: String(charged.payment_id),
      status_code: '0',
    });
    expect(search.json).toEqual({ status: -1, msg: 'No payments found', data: null });
    expect(stand.sandbox.pendingCharges()).toEqual([
      {
        order_id: 'OrderP1',
        payment_id: charged.payment_id,
        type: 'PAYMENT',
        amount: 750,
        currency: 'LKR',
        date: sriLanka(chargedAt),
        notify_url: stand.receiver.url,
      },
    ]);
  });

  it('decided a success: a RECEIVED payment with its payment id, and a signed status_code 2', async () => {
    const chargedAt = clock.now();
    const charged = await chargePending();
    stand.receiver.clear();
    clock.advance(120_000);
    const decided = await stand.sandbox.decidePending('OrderP1', 'success');
    const search = await stand.api.search('OrderP1');

    expect(decided).toEqual({
      order_id: 'OrderP1',
      payment_id: charged.payment_id,
      outcome: 'success',
      status_code: 2,
      authorization_token: null,
      deliveries: [expect.objectContaining({ status: 200 })],
    });
    // Dated when PayHere took the charge, not when it decided.
    expect(search.json.data).toEqual([
      expect.objectContaining({
        payment_id: charged.payment_id,
        status: 'RECEIVED',
        amount: 750,
        date: sriLanka(chargedAt),
      }),
    ]);
    const fields = stand.receiver.received[0]?.fields ?? {};
    expect(fields).toMatchObject({
      order_id: 'OrderP1',
      payment_id: String(charged.payment_id),
      payhere_amount: '750.00',
      status_code: '2',
      status_message: 'Successfully completed the test tokenized payment.',
    });
    expect(fields.md5sig).toBe(expectedMd5sig(fields));
    expect(stand.sandbox.pendingCharges()).toEqual([]);
  });

  it('decided a failure: nothing recorded, and a signed status_code -2 for its payment id', async () => {
    const charged = await chargePending();
    stand.receiver.clear();
    const decided = await stand.sandbox.decidePending('OrderP1', 'failure');
    const fields = stand.receiver.received[0]?.fields ?? {};

    expect(decided.status_code).toBe(-2);
    expect((await stand.api.search('OrderP1')).json.msg).toBe('No payments found');
    expect(fields).toMatchObject({ payment_id: String(charged.payment_id), status_code: '-2' });
    expect(fields.md5sig).toBe(expectedMd5sig(fields));
  });

  it('is decided once', async () => {
    await chargePending();
    await stand.sandbox.decidePending('OrderP1', 'success');
    const again = stand.sandbox.decidePending('OrderP1', 'failure');

    await expect(again).rejects.toThrow(SandboxRefusal);
    await expect(again).rejects.toMatchObject({ status: 404, message: 'No pending charge of order OrderP1' });
    expect((await stand.api.search('OrderP1')).json.data).toHaveLength(1);
  });

  it('needs the payment id when the order has two pending charges', async () => {
    const first = await chargePending();
    const second = await chargePending();
    await expect(stand.sandbox.decidePending('OrderP1', 'success')).rejects.toMatchObject({
      status: 400,
      message: 'Order OrderP1 has 2 pending charges: name the payment_id',
    });
    const decided = await stand.sandbox.decidePending('OrderP1', 'success', {
      payment_id: second.payment_id,
    });

    expect(decided.payment_id).toBe(second.payment_id);
    expect(stand.sandbox.pendingCharges().map((pending) => pending.payment_id)).toEqual([first.payment_id]);
  });

  it("notifies the call's notify_url when the charge had none, with the call's delivery options", async () => {
    await chargePending({ notify_url: undefined });
    const silent = await chargePending({ order_id: 'OrderP2', notify_url: undefined });
    const unnotified = await stand.sandbox.decidePending('OrderP2', 'success');
    const decided = await stand.sandbox.decidePending('OrderP1', 'failure', {
      notify_url: stand.receiver.url,
      delivery: { duplicate: true },
    });

    expect(unnotified.deliveries).toEqual([]);
    expect(unnotified.payment_id).toBe(silent.payment_id);
    expect(decided.deliveries).toHaveLength(2);
    expect(stand.receiver.received.map((notification) => notification.fields.status_code)).toEqual([
      '-2',
      '-2',
    ]);
  });

  it('of an AUTHORIZE decided a success is a hold: status_code 3 and a token the capture takes', async () => {
    const charged = await chargePending({ type: 'AUTHORIZE' });
    const decided = await stand.sandbox.decidePending('OrderP1', 'success');
    const captured = await stand.api.post('payment/capture', {
      authorization_token: decided.authorization_token,
      amount: 750,
      deduction_details: '',
    });

    expect(decided.status_code).toBe(3);
    expect(stand.receiver.received.at(-1)?.fields).toMatchObject({
      status_code: '3',
      authorization_token: decided.authorization_token,
    });
    expect(captured.json.data.payment_id).toBe(charged.payment_id);
  });

  it('refuses an unknown order and a misspelled outcome', async () => {
    await chargePending();

    await expect(stand.sandbox.decidePending('Order00000', 'success')).rejects.toMatchObject({ status: 404 });
    await expect(stand.sandbox.decidePending('OrderP1', 'succeeded' as 'success')).rejects.toMatchObject({
      status: 400,
      message: 'Invalid request parameter: outcome',
    });
  });
});

describe('over HTTP', () => {
  it('GET /__sandbox/pending lists them; POST /__sandbox/pending/{order_id} decides one', async () => {
    const charged = await chargePending({ order_id: 'Order P/3' });
    const listed = await call(stand.sandbox, 'GET', '/__sandbox/pending');
    const decided = await call(
      stand.sandbox,
      'POST',
      `/__sandbox/pending/${encodeURIComponent('Order P/3')}`,
      {
        json: { outcome: 'success', payment_id: charged.payment_id },
      },
    );
    const again = await call(stand.sandbox, 'POST', `/__sandbox/pending/${encodeURIComponent('Order P/3')}`, {
      json: { outcome: 'failure' },
    });
    const invalid = await call(stand.sandbox, 'POST', '/__sandbox/pending/OrderP1', {
      json: { outcome: 'maybe' },
    });

    expect(listed.json.data).toEqual([expect.objectContaining({ payment_id: charged.payment_id })]);
    expect(decided.json).toMatchObject({
      status: 1,
      msg: 'Pending charge succeeded',
      data: { order_id: 'Order P/3', payment_id: charged.payment_id, status_code: 2 },
    });
    expect((await stand.api.search('Order P/3')).json.data).toHaveLength(1);
    expect(again.status).toBe(404);
    expect(invalid.status).toBe(400);
    expect(invalid.json.msg).toBe('Invalid request parameter: outcome');
  });
});
