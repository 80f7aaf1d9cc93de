import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import type { Offline } from '../../scripts/offline.ts';
import { MERCHANT_SCOPES, tokenFor } from '../helpers/auth.ts';
import { startOfflineAsDeployed } from '../helpers/offline.ts';
import { customer, customerToken } from '../helpers/orders.ts';
import { busiestWindow } from '../helpers/windows.ts';

/**
 * Issue 35, "Work-conserving shares", through `npm start`'s stack (serverless-offline, several
 * function workers) against the sandbox with PayHere's own limit and the shares as deployed: the
 * merchant's back office alone on PayHere's budget gets all of it, its calls beyond its share (10
 * per 10 s) waiting for their turn rather than refused, while a customer hammering reads that each
 * cost PayHere a call at the same time still meets its cap. Bounded: 33 operations paced over
 * 10 s, the customer's loop for as long as they run, each request waiting for its answer.
 */
const OPERATIONS = 33;
const PACE_MS = 10_000 / OPERATIONS;

let sandbox: Sandbox;
let offline: Offline | undefined;
let base: string;

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: { limit: 20, windowMs: 10_000 } });
  ({ offline, base } = await startOfflineAsDeployed(sandbox, 'back-office'));
}, 120_000);

afterAll(async () => {
  await offline?.stop();
  await sandbox?.close();
});

interface Answer {
  status: number;
  body: { status: number; msg: string; data: Record<string, unknown> | null };
}

async function send(
  method: string,
  path: string,
  authorization: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(method === 'POST' ? { 'idempotency-key': randomUUID() } : {}),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) as Answer['body'] };
  } catch {
    // serverless-offline answers a handler's failure with an empty body; its log says what failed.
    throw new Error(
      `${method} ${path}: ${response.status} ${JSON.stringify(text.slice(0, 200))}\n${offline?.output().slice(-6_000)}`,
    );
  }
}

const charge = (type: 'PAYMENT' | 'AUTHORIZE') => ({
  type,
  order_id: `BO-${randomUUID().slice(0, 16)}`,
  items: 'Back office',
  currency: 'LKR',
  amount: 120,
  customer_token: SEED.customerTokens.success,
});

/**
 * One round of the back office's ordinary operations (11): charge, hold, capture, refund, hold and
 * release, the subscriptions' reads, a retry and a cancel. Each answer is kept with its name.
 */
function round(merchant: string): Array<() => Promise<[string, Answer]>> {
  const state: { paymentId?: unknown; hold?: unknown; release?: unknown } = {};
  const named = (name: string, answer: Promise<Answer>) => answer.then((a) => [name, a] as [string, Answer]);
  const subscriptions = `/subscriptions/${SEED.subscriptions.active}`;
  return [
    () =>
      named(
        'charge',
        send('POST', '/payments/charge', merchant, charge('PAYMENT')).then((answer) => {
          state.paymentId = answer.body.data?.payment_id;
          return answer;
        }),
      ),
    () =>
      named(
        'hold',
        send('POST', '/payments/charge', merchant, charge('AUTHORIZE')).then((answer) => {
          state.hold = answer.body.data?.authorization_token;
          return answer;
        }),
      ),
    () =>
      named(
        'capture',
        send('POST', '/payments/capture', merchant, {
          authorization_token: state.hold,
          amount: 100,
          deduction_details: 'back office',
        }),
      ),
    () =>
      named(
        'refund',
        send('POST', '/payments/refund', merchant, {
          payment_id: state.paymentId,
          description: 'back office',
        }),
      ),
    () =>
      named(
        'hold',
        send('POST', '/payments/charge', merchant, charge('AUTHORIZE')).then((answer) => {
          state.release = answer.body.data?.authorization_token;
          return answer;
        }),
      ),
    () =>
      named(
        'release',
        send('POST', '/payments/refund', merchant, {
          authorization_token: state.release,
          description: 'back office',
        }),
      ),
    () => named('list subscriptions', send('GET', '/subscriptions', merchant)),
    () => named('subscription', send('GET', subscriptions, merchant)),
    () => named('subscription payments', send('GET', `${subscriptions}/payments`, merchant)),
    // The first round retries the failed subscription and cancels the active one; the later rounds
    // find them no longer failed, and cancelled, as PayHere would say.
    () => named('retry', send('POST', `/subscriptions/${SEED.subscriptions.failed}/retry`, merchant)),
    () => named('cancel', send('DELETE', subscriptions, merchant)),
  ];
}

describe('the merchant’s back office alone on PayHere’s budget, a customer hammering beside it', () => {
  it(`answers all ${OPERATIONS} of the merchant’s sequential operations as without shares (none 429), and keeps the customer within its cap`, async () => {
    const merchant = `Bearer ${await tokenFor(MERCHANT_SCOPES)}`;
    // The customer: orders of its own with no payment, more than its cap, read in turn: a
    // not-found answer is shared for its window, so each order's first read in a window is the
    // one that costs PayHere a call.
    const hammerer = customer('hammerer');
    const orderIds: string[] = [];
    for (let i = 0; i < 12; i++) {
      const checkout = await send(
        'POST',
        '/checkouts',
        merchant,
        { kind: 'charge', items: 'Door bell', currency: 'LKR', amount: 100 },
        { 'on-behalf-of': hammerer },
      );
      expect(checkout.status).toBe(201);
      orderIds.push(String(checkout.body.data?.order_id));
    }
    const customerAuth = `Bearer ${await customerToken(hammerer)}`;
    sandbox.resetCounters();
    const startedAt = Date.now();

    // Act: the back office's operations, one after another, paced over 10 s; the customer reads
    // its orders in a loop (one request at a time, 100 ms apart) for as long as they run.
    let done = false;
    const customerAnswers: Record<string, number> = {};
    const hammering = (async () => {
      for (let read = 0; !done; read++) {
        const answer = await send('GET', `/payments/${orderIds[read % orderIds.length]}`, customerAuth);
        const key = `${answer.status} ${answer.body.data?.code ?? ''}`.trim();
        customerAnswers[key] = (customerAnswers[key] ?? 0) + 1;
        await delay(100);
      }
    })();
    const operations = [0, 1, 2].flatMap(() => round(merchant));
    const answers: Array<[string, Answer]> = [];
    for (const [i, operation] of operations.entries()) {
      const due = startedAt + i * PACE_MS;
      if (Date.now() < due) await delay(due - Date.now());
      answers.push(await operation());
    }
    done = true;
    await hammering;
    const seconds = (Date.now() - startedAt) / 1000;

    // Assess: every operation answered as PayHere answers it (the second and third rounds' retry
    // and cancel meet a subscription no longer failed, or cancelled: 409); none 429.
    const statuses = answers.map(([name, answer]) => `${name} ${answer.status}`);
    expect(answers).toHaveLength(OPERATIONS);
    expect(statuses.filter((status) => status.endsWith(' 429'))).toEqual([]);
    for (const [name, answer] of answers.slice(0, 11)) expect(`${name} ${answer.status}`).toBe(`${name} 200`);
    for (const [name, answer] of answers.slice(11)) {
      if (name === 'retry' || name === 'cancel') expect(answer.status).toBeLessThan(500);
      else expect(`${name} ${answer.status}`).toBe(`${name} 200`);
    }
    // The customer stayed within its cap (8 calls per 10 s): PayHere saw no more of its reads than
    // the cap allows in the windows the run spanned, however many it asked for. Whether it was also
    // refused depends on the machine's pace (its spare calls wait their turn behind the merchant's,
    // and a not-found answer is shared for its window); the refusal at the cap itself is
    // tests/budget/caller-shares.test.ts's.
    const asked = Object.values(customerAnswers).reduce((sum, count) => sum + count, 0);
    const windows = Math.ceil(seconds / 10) + 1;
    expect(asked).toBeGreaterThan(0);
    expect(sandbox.counters().search ?? 0).toBeLessThanOrEqual(8 * windows);
    // And PayHere's limit held throughout.
    expect(
      busiestWindow(
        sandbox.arrivals().map((arrival) => arrival.at),
        10_000,
      ),
    ).toBeLessThanOrEqual(20);
  }, 180_000);
});
