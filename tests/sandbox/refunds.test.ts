// Refunds of payments as the control API shows them: each request a refund of its own (so a lost
// answer that is retried refunds twice, and a test can count it), moving REFUND REQUESTED →
// REFUND PROCESSING → REFUNDED, with the payment's status following.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, SandboxRefusal, SEED, startSandbox } from '../../sandbox/server.ts';
import { type ApiClient, accessToken, apiClient, call, manualClock } from './helpers.ts';

const clock = manualClock(Date.UTC(2025, 0, 15, 4, 30, 0));
const refundable = SEED.payments.refundable; // 1500.00 LKR
let sandbox: Sandbox;
let api: ApiClient;

beforeAll(async () => {
  sandbox = await startSandbox({ now: clock.now, rateLimit: false, clockOffsetMs: -3_000 });
});
afterAll(() => sandbox.close());
beforeEach(async () => {
  sandbox.reset();
  api = apiClient(sandbox, await accessToken(sandbox));
});

function refund(amount?: number) {
  return api.post('payment/refund', {
    payment_id: refundable,
    description: 'Item is out of stock',
    ...(amount === undefined ? {} : { amount }),
  });
}

async function searchStatus(): Promise<string> {
  return (await api.search(SEED.orders.refundable)).json.data[0].status;
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

describe('a refund whose answer is lost', () => {
  it('is applied all the same: one refund listed, the payment REFUND REQUESTED', async () => {
    sandbox.faults.inject('refund', { kind: 'reset' });
    const requestedAt = clock.now();
    const code = await failureCode(refund());

    expect(['ECONNRESET', 'UND_ERR_SOCKET']).toContain(code);
    expect(await searchStatus()).toBe('REFUND REQUESTED');
    expect(sandbox.refunds(refundable)).toEqual({
      payment_id: refundable,
      order_id: SEED.orders.refundable,
      status: 'REFUND REQUESTED',
      amount: 1500,
      refunded_amount: 1500,
      refunds: [
        {
          refund_id: expect.any(Number),
          amount: 1500,
          description: 'Item is out of stock',
          at: requestedAt,
          // By PayHere's clock, 3 s behind ours.
          date: sriLanka(requestedAt - 3_000),
          status: 'REFUND REQUESTED',
        },
      ],
    });
  });

  it('retried in full is refused: nothing remains', async () => {
    sandbox.faults.inject('refund', { kind: 'reset' });
    await failureCode(refund());
    const retried = await refund();

    expect(retried.json).toEqual({ status: -1, msg: 'Error processing refund', data: null });
    expect(sandbox.refunds(refundable).refunds).toHaveLength(1);
  });

  it('retried in part refunds twice, as PayHere would: two refunds to count', async () => {
    sandbox.faults.inject('refund', { kind: 'reset' });
    await failureCode(refund(100));
    const retried = await refund(100);
    const listed = sandbox.refunds(refundable);

    expect(retried.json.status).toBe(1);
    expect(listed.refunds.map((r) => r.amount)).toEqual([100, 100]);
    expect(listed.refunds[1]?.refund_id).toBe(retried.json.data);
    expect(listed.refunds[0]?.refund_id).not.toBe(retried.json.data);
    expect(listed.refunded_amount).toBe(200);
  });
});

describe("a refund's steps", () => {
  it('REFUND REQUESTED → REFUND PROCESSING → REFUNDED, in search too', async () => {
    await refund();
    const requested = await searchStatus();
    const processing = sandbox.advanceRefunds(refundable, { status: 'REFUND PROCESSING' });
    const processingInSearch = await searchStatus();
    const refunded = sandbox.advanceRefunds(refundable);

    expect(requested).toBe('REFUND REQUESTED');
    expect(processing.status).toBe('REFUND PROCESSING');
    expect(processing.refunds[0]?.status).toBe('REFUND PROCESSING');
    expect(processingInSearch).toBe('REFUND PROCESSING');
    expect(refunded.status).toBe('REFUNDED');
    expect(await searchStatus()).toBe('REFUNDED');
  });

  it('never moves a refund back', async () => {
    await refund();
    sandbox.advanceRefunds(refundable);
    const after = sandbox.advanceRefunds(refundable, { status: 'REFUND PROCESSING' });

    expect(after.refunds[0]?.status).toBe('REFUNDED');
    expect(after.status).toBe('REFUNDED');
  });

  it('a second partial refund of a payment already partly refunded is a refund of its own, and the status goes back', async () => {
    await refund(500);
    sandbox.advanceRefunds(refundable);
    const afterFirst = await searchStatus();
    clock.advance(60_000);
    const second = await refund(300);
    const listed = sandbox.refunds(refundable);

    expect(afterFirst).toBe('REFUNDED'); // partly: PayHere documents no "partially refunded"
    expect(second.json.status).toBe(1);
    expect(listed.status).toBe('REFUND REQUESTED');
    expect(await searchStatus()).toBe('REFUND REQUESTED');
    expect(listed.refunds.map((r) => [r.amount, r.status])).toEqual([
      [500, 'REFUNDED'],
      [300, 'REFUND REQUESTED'],
    ]);
    expect(listed.refunds[1]?.date).toBe(sriLanka(clock.now() - 3_000));
    expect(listed.refunded_amount).toBe(800);
  });

  it('moves one refund by its id; the payment shows the least advanced', async () => {
    const first = (await refund(100)).json.data as number;
    const second = (await refund(200)).json.data as number;
    const one = sandbox.advanceRefunds(refundable, { refund_id: second });
    const both = sandbox.advanceRefunds(refundable, { status: 'REFUND PROCESSING', refund_id: first });

    expect(one.refunds.map((r) => r.status)).toEqual(['REFUND REQUESTED', 'REFUNDED']);
    expect(one.status).toBe('REFUND REQUESTED');
    expect(both.status).toBe('REFUND PROCESSING');
  });

  it('a payment never refunded has an empty list; unknown payments and refunds are refused', () => {
    expect(sandbox.refunds(SEED.payments.sample)).toMatchObject({
      status: 'RECEIVED',
      refunded_amount: 0,
      refunds: [],
    });
    expect(() => sandbox.refunds(320099999999)).toThrow(SandboxRefusal);
    expect(() => sandbox.advanceRefunds(SEED.payments.sample)).toThrow('has no refunds');
    expect(() => sandbox.advanceRefunds(refundable, { status: 'RECEIVED' as 'REFUNDED' })).toThrow(
      'Invalid request parameter: status',
    );
  });

  it('reset() forgets them with the rest of the state', async () => {
    await refund();
    sandbox.reset();

    expect(sandbox.refunds(refundable).refunds).toEqual([]);
  });
});

describe('over HTTP', () => {
  it('GET /__sandbox/payments/{id}/refunds and POST /__sandbox/payments/{id}/refunds/advance', async () => {
    await refund(100);
    await refund(100);
    const listed = await call(sandbox, 'GET', `/__sandbox/payments/${refundable}/refunds`);
    const advanced = await call(sandbox, 'POST', `/__sandbox/payments/${refundable}/refunds/advance`, {
      json: { status: 'REFUND PROCESSING' },
    });
    const refunded = await call(sandbox, 'POST', `/__sandbox/payments/${refundable}/refunds/advance`);
    const unknown = await call(sandbox, 'GET', '/__sandbox/payments/320099999999/refunds');
    const invalid = await call(sandbox, 'POST', `/__sandbox/payments/${refundable}/refunds/advance`, {
      json: { status: 'DONE' },
    });

    expect(listed.json).toMatchObject({ status: 1, msg: 'Refunds', data: { refunded_amount: 200 } });
    expect(listed.json.data.refunds).toHaveLength(2);
    expect(advanced.json.data.status).toBe('REFUND PROCESSING');
    expect(refunded.json).toMatchObject({ status: 1, msg: 'Refunds advanced', data: { status: 'REFUNDED' } });
    expect(unknown.status).toBe(404);
    expect(unknown.json.msg).toBe('Payment 320099999999 not found');
    expect(invalid.status).toBe(400);
    expect(invalid.json.msg).toBe('Invalid request parameter: status');
  });
});
