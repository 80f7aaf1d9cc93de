// The processLate fault: PayHere drops the connection of a charge and makes the charge later, so a
// search right after shows nothing and a later one shows the payment, dated late.
import { describe, expect, it } from 'vitest';
import { SEED, startSandbox } from '../../sandbox/server.ts';
import { accessToken, apiClient, call, manualClock, useSandboxAndReceiver } from './helpers.ts';

const clock = manualClock(Date.UTC(2025, 0, 15, 4, 30, 0));
const stand = useSandboxAndReceiver(clock);

function chargeBody(overrides: Record<string, unknown> = {}) {
  return {
    type: 'PAYMENT',
    order_id: 'OrderL1',
    items: 'Late charge',
    currency: 'LKR',
    amount: 250,
    customer_token: SEED.customerTokens.success,
    notify_url: stand.receiver.url,
    ...overrides,
  };
}

/** The low-level cause of a failed fetch (undici wraps it in "fetch failed"). */
async function failureCode(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return (error as { cause?: { code?: string } }).cause?.code;
  }
  throw new Error('the request was answered');
}

function sriLanka(ms: number): string {
  return new Date(ms + 5.5 * 3_600_000).toISOString().slice(0, 19).replace('T', ' ');
}

describe('processLate on charge', () => {
  it('resets the connection; the payment appears only once the clock passes arrival + ms, dated then', async () => {
    stand.sandbox.faults.inject('charge', { kind: 'processLate', ms: 26_000 });
    const arrival = clock.now();
    const code = await failureCode(stand.api.post('payment/charge', chargeBody()));
    const rightAfter = await stand.api.search('OrderL1');
    clock.advance(25_999);
    const justBefore = await stand.api.search('OrderL1');
    clock.advance(1);
    const due = await stand.api.search('OrderL1');

    expect(['ECONNRESET', 'UND_ERR_SOCKET']).toContain(code);
    expect(rightAfter.json).toEqual({ status: -1, msg: 'No payments found', data: null });
    expect(justBefore.json.msg).toBe('No payments found');
    expect(due.json.data).toEqual([
      expect.objectContaining({
        order_id: 'OrderL1',
        status: 'RECEIVED',
        amount: 250,
        date: sriLanka(arrival + 26_000),
      }),
    ]);
  });

  it('dates the late payment by the time it was due, not when it was first looked at', async () => {
    stand.sandbox.setClockOffset(-3_000);
    stand.sandbox.faults.inject('charge', { kind: 'processLate', ms: 26_000 });
    const arrival = clock.now();
    await failureCode(stand.api.post('payment/charge', chargeBody()));
    clock.advance(100_000);
    const search = await stand.api.search('OrderL1');

    expect(search.json.data[0].date).toBe(sriLanka(arrival + 26_000 - 3_000));
  });

  it('notifies the charge once made: processDue() finishes what is due and waits for the delivery', async () => {
    stand.sandbox.faults.inject('charge', { kind: 'processLate', ms: 26_000 });
    await failureCode(stand.api.post('payment/charge', chargeBody()));
    const early = await stand.sandbox.processDue();
    clock.advance(26_000);
    const due = await stand.sandbox.processDue();

    expect(early).toEqual({ processed: 0, waiting: 1, deliveries: [] });
    expect(due.processed).toBe(1);
    expect(due.waiting).toBe(0);
    expect(due.deliveries).toHaveLength(1);
    expect(stand.receiver.received).toHaveLength(1);
    expect(stand.receiver.received[0]?.fields).toMatchObject({
      order_id: 'OrderL1',
      payhere_amount: '250.00',
      status_code: '2',
    });
    const [payment] = (await stand.api.search('OrderL1')).json.data;
    expect(stand.receiver.received[0]?.fields.payment_id).toBe(String(payment.payment_id));
  });

  it('makes late charges in the order they fall due, each once', async () => {
    stand.sandbox.faults.inject('charge', { kind: 'processLate', ms: 20_000 });
    stand.sandbox.faults.inject('charge', { kind: 'processLate', ms: 10_000 });
    await failureCode(stand.api.post('payment/charge', chargeBody({ amount: 1 })));
    await failureCode(stand.api.post('payment/charge', chargeBody({ amount: 2 })));
    clock.advance(30_000);
    const first = await stand.api.search('OrderL1');
    const again = await stand.api.search('OrderL1');

    expect(first.json.data.map((p: { amount: number }) => p.amount)).toEqual([2, 1]);
    expect(again.json.data).toHaveLength(2);
  });

  it('makes nothing of a request refused when it arrived, and reset() drops what waits', async () => {
    stand.sandbox.faults.inject('charge', { kind: 'processLate', ms: 1_000 }, 2);
    await failureCode(stand.api.post('payment/charge', chargeBody({ amount: '250' })));
    await failureCode(stand.api.post('payment/charge', chargeBody({ order_id: 'OrderL2' })));
    stand.sandbox.reset();
    stand.api = apiClient(stand.sandbox, await accessToken(stand.sandbox));
    clock.advance(1_000);

    expect((await stand.sandbox.processDue()).processed).toBe(0);
    expect((await stand.api.search('OrderL1')).json.msg).toBe('No payments found');
    expect((await stand.api.search('OrderL2')).json.msg).toBe('No payments found');
  });

  it('is refused on any other endpoint', () => {
    expect(() => stand.sandbox.faults.inject('refund', { kind: 'processLate', ms: 1 })).toThrow(RangeError);
    expect(() => stand.sandbox.faults.inject('*', { kind: 'processLate', ms: 1 })).toThrow(RangeError);
  });

  it('over HTTP: injected with POST /__sandbox/faults, finished with POST /__sandbox/process-due', async () => {
    const injected = await call(stand.sandbox, 'POST', '/__sandbox/faults', {
      json: { endpoint: 'charge', fault: { kind: 'processLate', ms: 26_000 } },
    });
    const misplaced = await call(stand.sandbox, 'POST', '/__sandbox/faults', {
      json: { endpoint: 'search', fault: { kind: 'processLate', ms: 26_000 } },
    });
    await failureCode(stand.api.post('payment/charge', chargeBody()));
    clock.advance(26_000);
    const processed = await call(stand.sandbox, 'POST', '/__sandbox/process-due');

    expect(injected.json.data).toEqual({ pending: 1 });
    expect(misplaced.status).toBe(400);
    expect(processed.json).toMatchObject({
      status: 1,
      msg: 'Due work processed',
      data: { processed: 1, waiting: 0, deliveries: [expect.objectContaining({ status: 200 })] },
    });
  });
});

describe('processLate with real time', () => {
  it('makes and notifies the charge when its time comes, with nobody asking', async () => {
    const live = await startSandbox({ rateLimit: false });
    try {
      const liveApi = apiClient(live, await accessToken(live));
      live.faults.inject('charge', { kind: 'processLate', ms: 300 });
      const started = performance.now();
      await failureCode(liveApi.post('payment/charge', chargeBody()));
      const rightAfter = await liveApi.search('OrderL1');
      const [notification] = await stand.receiver.receivedCount(1);
      const arrivedAfter = performance.now() - started;
      const later = await liveApi.search('OrderL1');

      expect(rightAfter.json.msg).toBe('No payments found');
      expect(arrivedAfter).toBeGreaterThanOrEqual(290);
      expect(notification?.fields.status_code).toBe('2');
      expect(later.json.data).toHaveLength(1);
    } finally {
      await live.close();
    }
  });
});
