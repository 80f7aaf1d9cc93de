import { afterEach, describe, expect, it, vi } from 'vitest';

// Before any handler loads: windows of a minute, so that the clock is moved across one by seconds.
vi.hoisted(() => {
  process.env.ORDER_FAILED_ATTEMPTS = '3/60000';
});

import { SEED } from '../../sandbox/server.ts';
import { clearDynamoDbFaults, injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { customer, testLedger } from '../helpers/orders.ts';
import { chargeBody } from '../resilience/fixtures.ts';

/**
 * docs/budget.md "Work that cannot change anything costs PayHere nothing": an order's declined
 * charges, and a customer's declined pre-approvals, are limited in any span of the window
 * (ORDER_FAILED_ATTEMPTS, here 3 a minute), not per window: three at a window's end leave none at
 * the next one's start. In-process through the handlers against the sandbox; the clock (Date only)
 * is moved, never waited for.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const WINDOW_MS = 60_000;

afterEach(async () => {
  vi.useRealTimers();
  await clearDynamoDbFaults(undefined, process.env.LEDGER_TABLE);
});

/** The clock at `offsetMs` from the start of the next window (one the tests have not counted in yet). */
function clockAt(boundary: number, offsetMs: number): void {
  vi.setSystemTime(boundary + offsetMs);
}

function nextBoundary(): number {
  return (Math.floor(Date.now() / WINDOW_MS) + 1) * WINDOW_MS;
}

describe('an order’s declined charges, across a window’s end', () => {
  it('three at the end of one window leave the order refusing at the start of the next, until a whole window has passed', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const boundary = nextBoundary();
    const body = chargeBody();
    const declined = { ...body, customer_token: SEED.customerTokens.declined };

    clockAt(boundary, -3_000);
    const attempts = [];
    for (let i = 0; i < 3; i++) attempts.push(await call('charge', { body: declined }));
    clockAt(boundary, 1_000);
    const charges = sandbox.counters().charge;
    const next = await call('charge', { body });
    const chargesAfter = sandbox.counters().charge;
    clockAt(boundary, WINDOW_MS + 1_000);
    const later = await call('charge', { body });

    expect(attempts.map((answer) => answer.statusCode)).toEqual([402, 402, 402]);
    expect(next.statusCode).toBe(429);
    expect(next.body.msg).toMatch(/declined too many times/);
    // Allowed again once the declines' window is a whole window behind: at the window after this one.
    expect(Number(next.headers['Retry-After'])).toBe(59);
    expect(chargesAfter).toBe(charges);
    expect(later.statusCode).toBe(200);
  });
});

describe('an order’s declined charges, windows later', () => {
  it('keeps the counts of the windows its next charge is checked against only: a decline drops the older ones', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const boundary = nextBoundary();
    const window = Math.floor(boundary / WINDOW_MS);
    const declined = { ...chargeBody(), customer_token: SEED.customerTokens.declined };

    clockAt(boundary, 1_000);
    const first = await call('charge', { body: declined });
    const afterFirst = await ledger.getOrder(declined.order_id);
    clockAt(boundary, 2 * WINDOW_MS + 1_000);
    const later = await call('charge', { body: declined });
    const afterLater = await ledger.getOrder(declined.order_id);

    expect([first.statusCode, later.statusCode]).toEqual([402, 402]);
    expect(afterFirst!.failedAttempts).toEqual({ [window]: 1, [window + 1]: 1 });
    // Two windows on, neither of the first decline's windows is read again.
    expect(afterLater!.failedAttempts).toEqual({ [window + 2]: 1, [window + 3]: 1 });
  });
});

describe('an order’s declined charge whose outcome was written and its answer lost', () => {
  it('counts once: the order takes its three declines before it refuses', async () => {
    const body = chargeBody();
    const declined = { ...body, customer_token: SEED.customerTokens.declined };
    const orderWrites = {
      operation: 'UpdateItem',
      table: process.env.LEDGER_TABLE!,
      keyPrefix: `order#${body.order_id}`,
    } as const;
    // The first charge's claim goes through; its outcome is written and the answer lost.
    await injectDynamoDbFault({ ...orderWrites, fault: { kind: 'slow', ms: 0 } });
    await injectDynamoDbFault({ ...orderWrites, fault: { kind: 'applyAndLose' } });

    const attempts = [];
    for (let i = 0; i < 3; i++) attempts.push(await call('charge', { body: declined }));
    const fourth = await call('charge', { body: declined });
    const order = await ledger.getOrder(body.order_id);

    expect(attempts.map((answer) => answer.statusCode)).toEqual([402, 402, 402]);
    expect(fourth.statusCode).toBe(429);
    const window = Math.floor(Date.now() / WINDOW_MS);
    expect(order!.failedAttempts[window]).toBe(3);
  });
});

describe('a customer’s declined pre-approvals, across a window’s end', () => {
  const preapproval = (owner: string) =>
    call('createCheckout', {
      body: { kind: 'preapproval', items: 'Save my card', currency: 'LKR' },
      headers: { 'On-Behalf-Of': owner },
    });

  /** A pre-approval order of `owner`, and PayHere's signed notification of its decline with `paymentId`. */
  async function declinedPreapproval(owner: string, paymentId: string) {
    const created = await preapproval(owner);
    expect(created.statusCode).toBe(201);
    return (id = paymentId) =>
      signed({
        order_id: created.body.data.order_id,
        payhere_amount: '0.00',
        status_code: '-2',
        payment_id: id,
      });
  }

  it('three at the end of one window refuse the next pre-approval at the start of the next, until a whole window has passed', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const boundary = nextBoundary();
    const carol = customer('carol');

    clockAt(boundary, -3_000);
    for (let i = 0; i < 3; i++) {
      const declined = await declinedPreapproval(carol, `32009997000${i}`);
      expect((await notify(declined())).statusCode).toBe(200);
    }
    clockAt(boundary, 1_000);
    const next = await preapproval(carol);
    clockAt(boundary, WINDOW_MS + 1_000);
    const later = await preapproval(carol);

    expect(next.statusCode).toBe(429);
    expect(next.body.data).toEqual({ code: 'caller_rate_limited' });
    expect(Number(next.headers['Retry-After'])).toBe(59);
    expect(later.statusCode).toBe(201);
    const window = Math.floor(boundary / WINDOW_MS);
    expect(await ledger.failedPreapprovals(carol)).toEqual({ [window - 1]: 3, [window]: 3 });
  });

  it('counts no failure past the limit: a signed decline replayed with new payment ids leaves the customer’s count where it was', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const boundary = nextBoundary();
    const window = Math.floor(boundary / WINDOW_MS);
    const dave = customer('dave');
    clockAt(boundary, 1_000);
    const decline = await declinedPreapproval(dave, '320099960000');

    // The same signed notification again and again; its payment id is not signed.
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push((await notify(decline(`32009996000${i}`))).statusCode);

    expect(answers).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await ledger.failedPreapprovals(dave)).toEqual({ [window]: 3, [window + 1]: 3 });
  });

  it('drops the counts of windows no pre-approval is checked against any more when a later one fails', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const boundary = nextBoundary();
    const window = Math.floor(boundary / WINDOW_MS);
    const erin = customer('erin');
    clockAt(boundary, 1_000);
    await notify((await declinedPreapproval(erin, '320099950001'))());
    clockAt(boundary, 2 * WINDOW_MS + 1_000);
    await notify((await declinedPreapproval(erin, '320099950002'))());

    expect(await ledger.failedPreapprovals(erin)).toEqual({ [window + 2]: 1, [window + 3]: 1 });
  });
});
