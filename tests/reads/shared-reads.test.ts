import { setTimeout as sleep } from 'node:timers/promises';
import { beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { NotFoundError } from '../../lib/envelope/errors.ts';
import { NoPaymentsError } from '../../lib/gateway/answers.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { ageHeaders, SharedReads } from '../../lib/reads/shared-reads.ts';
import { CLOCK_SKEW_MS, SHARED_READS, SharedReadStore } from '../../lib/reads/store.ts';
import { SEED } from '../../sandbox/server.ts';
import { useTestGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { dynamoDbAt, freshStateTable, slowRelay } from '../helpers/state-table.ts';

/**
 * The shared reads (lib/reads/) against the sandbox and a state table of their own in dynalite, on a
 * clock the test moves: what is shared, for how long, what is never kept, and that a table that
 * cannot be reached costs PayHere calls, never an answer.
 */
const sandbox = useTestGateway();

const T0 = Date.UTC(2026, 10, 23, 9, 0, 0);
let now = T0;
const clock = () => now;

async function sharedReads(options: { endpoint?: string; timeoutMs?: number } = {}) {
  const { name } = await freshStateTable();
  const store = new SharedReadStore({
    client: dynamoDbAt(options.endpoint ?? inject('dynamodbEndpoint')),
    table: name,
    timeoutMs: options.timeoutMs ?? 2_000,
    now: clock,
  });
  const payhere = createPayHere(loadConfig(process.env));
  return { store, reads: new SharedReads({ payhere, store, now: clock }) };
}

const deadline = () => Date.now() + 5_000;
const count = (endpoint: string) => sandbox.counters()[endpoint] ?? 0;
const active = String(SEED.subscriptions.active);

beforeEach(() => {
  now = T0;
});

describe('freshness windows', () => {
  it('shares an order’s payments for 10 s, with their age, then asks PayHere again', async () => {
    const { reads } = await sharedReads();

    const first = await reads.paymentsOfOrder(SEED.orders.sample, deadline());
    now = T0 + 9_999;
    const second = await reads.paymentsOfOrder(SEED.orders.sample, deadline());
    const searchesWithin = count('search');
    now = T0 + 10_000;
    const third = await reads.paymentsOfOrder(SEED.orders.sample, deadline());

    expect(first.shared).toBe(false);
    expect(ageHeaders(first, now)).toEqual({});
    expect(second).toMatchObject({ shared: true, fetchedAt: T0, answer: first.answer });
    expect(ageHeaders(second, T0 + 9_999)).toEqual({ Age: '9' });
    expect(searchesWithin).toBe(1);
    expect(third.shared).toBe(false);
    expect(count('search')).toBe(2);
  });

  it.each([
    ['the subscriptions', 'listSubscriptions', (reads: SharedReads) => reads.listSubscriptions(deadline())],
    [
      'one subscription',
      'getSubscription',
      (reads: SharedReads) => reads.getSubscription(active, deadline()),
    ],
    [
      'a subscription’s payments',
      'subscriptionPayments',
      (reads: SharedReads) => reads.subscriptionPayments(active, deadline()),
    ],
  ] as const)('shares %s for 30 s', async (_, endpoint, read) => {
    const { reads } = await sharedReads();

    await read(reads);
    now = T0 + 29_999;
    const within = await read(reads);
    const callsWithin = count(endpoint);
    now = T0 + 30_000;
    const after = await read(reads);

    expect(within.shared).toBe(true);
    expect(ageHeaders(within, now - 1)).toEqual({ Age: '29' });
    expect(callsWithin).toBe(1);
    expect(after.shared).toBe(false);
    expect(count(endpoint)).toBe(2);
  });

  it('answers one subscription from the shared list while the list is fresh', async () => {
    const { reads } = await sharedReads();

    await reads.listSubscriptions(deadline());
    now = T0 + 5_000;
    const one = await reads.getSubscription(String(SEED.subscriptions.failed), deadline());

    expect(one).toMatchObject({ shared: true, fetchedAt: T0 });
    expect(one.answer.data).toMatchObject({ subscription_id: SEED.subscriptions.failed, status: 'FAILED' });
    expect(sandbox.counters()).toMatchObject({ listSubscriptions: 1, getSubscription: 0 });
  });

  it('lets callers of one container asking at once share one PayHere call', async () => {
    const { reads } = await sharedReads();

    const answers = await Promise.all(
      Array.from({ length: 10 }, () => reads.paymentsOfOrder(SEED.orders.sample, deadline())),
    );

    expect(new Set(answers.map((answer) => JSON.stringify(answer.answer))).size).toBe(1);
    expect(count('search')).toBe(1);
  });
});

describe('the shared write', () => {
  it('is not waited for by the read that fetched the answer, and this container’s next read sees it', async () => {
    // Prepare: a table whose writes take 400 ms.
    const { store, reads } = await sharedReads();
    const put = store.put.bind(store);
    let written = false;
    vi.spyOn(store, 'put').mockImplementation(async (...args) => {
      await sleep(400);
      const kept = await put(...args);
      written = true;
      return kept;
    });

    // Act
    const started = performance.now();
    const first = await reads.paymentsOfOrder(SEED.orders.sample, deadline());
    const firstMs = performance.now() - started;
    const writtenWhenAnswered = written;
    const writesMadeWhenAnswered = vi.mocked(store.put).mock.calls.length;
    const second = await reads.paymentsOfOrder(SEED.orders.sample, deadline());

    // Assess: answered before the write was even made (lib/net/background.ts), let alone landed;
    // the next read waited for it and was served from it.
    expect(first.shared).toBe(false);
    expect(writesMadeWhenAnswered).toBe(0);
    expect(store.put).toHaveBeenCalledTimes(1);
    expect(writtenWhenAnswered).toBe(false);
    expect(firstMs).toBeLessThan(400);
    expect(second).toMatchObject({ shared: true, fetchedAt: T0 });
    expect(count('search')).toBe(1);
  });

  it.each([
    ['whole', (reads: SharedReads) => reads.listSubscriptions(deadline())],
    [
      'for a first page',
      (reads: SharedReads) => reads.listSubscriptionsUnless(Promise.resolve(undefined), deadline()),
    ],
  ] as const)(
    'of the subscription list (%s) lands before the list is answered: another container’s one-subscription read finds it',
    async (_, list) => {
      // Prepare: two containers (listSubscriptions' and getSubscription's) on one table whose writes take 200 ms.
      const { store, reads } = await sharedReads();
      const other = new SharedReads({ payhere: createPayHere(loadConfig(process.env)), store, now: clock });
      const put = store.put.bind(store);
      vi.spyOn(store, 'put').mockImplementation(async (...args) => {
        await sleep(200);
        return put(...args);
      });

      // Act: the app asks for its subscriptions, then at once for one of them.
      const listed = await list(reads);
      const one = await other.getSubscription(active, deadline());

      // Assess
      expect(listed).toMatchObject({ shared: false });
      expect(one).toMatchObject({ shared: true, fetchedAt: T0 });
      expect(sandbox.counters()).toMatchObject({ listSubscriptions: 1, getSubscription: 0 });
    },
  );
});

describe('a not-found, shared like an answer', () => {
  it('answers every container 404 from one PayHere call per window, then asks again', async () => {
    const { store, reads } = await sharedReads();
    const other = new SharedReads({ payhere: createPayHere(loadConfig(process.env)), store, now: clock });
    const unknown = String(SEED.subscriptions.unknown);

    const first = await reads.paymentsOfOrder(SEED.orders.withoutPayments, deadline()).catch((e) => e);
    // Kept in the background: another container sees it once written.
    await sleep(100);
    now = T0 + 9_999;
    const shared = await other.paymentsOfOrder(SEED.orders.withoutPayments, deadline()).catch((e) => e);
    for (let i = 0; i < 2; i++) {
      await expect(other.subscriptionPayments(unknown, deadline())).rejects.toBeInstanceOf(NotFoundError);
    }
    const searchesWithin = count('search');
    now = T0 + 10_000;
    await expect(reads.paymentsOfOrder(SEED.orders.withoutPayments, deadline())).rejects.toBeInstanceOf(
      NoPaymentsError,
    );

    // The same class and message as PayHere's own answer: readers cannot tell them apart.
    expect(first).toBeInstanceOf(NoPaymentsError);
    expect(shared).toBeInstanceOf(NoPaymentsError);
    expect(shared.message).toBe(first.message);
    expect(searchesWithin).toBe(1);
    expect(count('subscriptionPayments')).toBe(1);
    expect(count('search')).toBe(2);
  });

  it('is dropped by the service’s own money call on the order, like an answer', async () => {
    const { store, reads } = await sharedReads();

    await expect(reads.paymentsOfOrder(SEED.orders.withoutPayments, deadline())).rejects.toThrow();
    await sleep(50);
    await store.forgetOrder(SEED.orders.withoutPayments);
    now = T0 + CLOCK_SKEW_MS + 1;
    await expect(reads.paymentsOfOrder(SEED.orders.withoutPayments, deadline())).rejects.toThrow();

    expect(count('search')).toBe(2);
  });
});

describe('never kept', () => {
  it('a pending answer', async () => {
    const { reads } = await sharedReads();
    const pending = JSON.stringify({ status: 0, msg: 'Payment pending', data: [] });
    sandbox.faults.inject(
      'search',
      { kind: 'status', status: 200, body: pending, contentType: 'application/json' },
      2,
    );

    const first = await reads.paymentsOfOrder(SEED.orders.sample, deadline());
    const second = await reads.paymentsOfOrder(SEED.orders.sample, deadline());

    expect([first.answer.pending, second.answer.pending]).toEqual([true, true]);
    expect(second.shared).toBe(false);
    expect(count('search')).toBe(2);
  });

  it('an answer too large for a DynamoDB item (over 300 KB), which is still served', async () => {
    const { reads } = await sharedReads();
    const record = {
      payment_id: 320025071278,
      order_id: SEED.orders.sample,
      status: 'RECEIVED',
      currency: 'LKR',
      amount: 500,
      description: 'x'.repeat(310_000),
    };
    const large = JSON.stringify({ status: 1, msg: 'Payments', data: [record] });
    sandbox.faults.inject(
      'search',
      { kind: 'status', status: 200, body: large, contentType: 'application/json' },
      2,
    );

    const first = await reads.paymentsOfOrder(SEED.orders.sample, deadline());
    const second = await reads.paymentsOfOrder(SEED.orders.sample, deadline());

    expect(first.answer.data[0]?.description).toHaveLength(310_000);
    expect(second.shared).toBe(false);
    expect(count('search')).toBe(2);
  });
});

describe('a table that cannot be reached', () => {
  it('when refused: every read goes to PayHere and is answered', async () => {
    const { reads } = await sharedReads({ endpoint: `http://127.0.0.1:${await freePort()}`, timeoutMs: 300 });

    const first = await reads.paymentsOfOrder(SEED.orders.sample, deadline());
    const second = await reads.listSubscriptions(deadline());
    const third = await reads.paymentsOfOrder(SEED.orders.sample, deadline());

    expect([first.shared, second.shared, third.shared]).toEqual([false, false, false]);
    expect(third.answer.data).toHaveLength(1);
    expect(sandbox.counters()).toMatchObject({ search: 2, listSubscriptions: 1 });
  });

  it('when too slow: the read does not wait for it beyond its timeout', async () => {
    const relay = await slowRelay(3_000);
    try {
      const { reads } = await sharedReads({ endpoint: relay.endpoint, timeoutMs: 200 });
      const started = Date.now();

      const answer = await reads.getSubscription(active, deadline());

      expect(answer.answer.data).toMatchObject({ subscription_id: SEED.subscriptions.active });
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(count('getSubscription')).toBe(1);
    } finally {
      await relay.close();
    }
  });
});

describe('a table request that was too slow', () => {
  it('costs that read only: the next read asks the table again and its answer is shared', async () => {
    const relay = await slowRelay(1_000);
    try {
      const { reads } = await sharedReads({ endpoint: relay.endpoint, timeoutMs: 200 });
      const slow = await reads.paymentsOfOrder(SEED.orders.sample, deadline());
      await backgroundSettled();
      relay.slow = false;

      const next = await reads.paymentsOfOrder(SEED.orders.sample, deadline());
      await backgroundSettled();
      const after = await reads.paymentsOfOrder(SEED.orders.sample, deadline());

      expect([slow.shared, next.shared, after.shared]).toEqual([false, false, true]);
      expect(count('search')).toBe(2);
    } finally {
      await relay.close();
    }
  });
});

describe('a short read', () => {
  it('gives a slow table at most a quarter of its time, and does not take it for down', async () => {
    const relay = await slowRelay(1_500);
    try {
      const { reads } = await sharedReads({ endpoint: relay.endpoint, timeoutMs: 2_000 });
      const started = Date.now();

      const short = await reads.paymentsOfOrder(SEED.orders.sample, Date.now() + 1_200);
      const tookMs = Date.now() - started;
      relay.slow = false;
      await reads.paymentsOfOrder(SEED.orders.sample, deadline());
      const after = await reads.paymentsOfOrder(SEED.orders.sample, deadline());

      expect(short.answer.data).toHaveLength(1);
      expect(tookMs).toBeLessThan(1_000);
      // The table is asked again at once, and keeps the next answer.
      expect(after.shared).toBe(true);
    } finally {
      await relay.close();
    }
  });
});

describe('dropped after the service’s own money call', () => {
  it('asks PayHere again once an order or a subscription is forgotten', async () => {
    const { reads, store } = await sharedReads();
    await reads.paymentsOfOrder(SEED.orders.sample, deadline());
    // One subscription first: asked together with the list, it may be answered from the list.
    await reads.getSubscription(active, deadline());
    await Promise.all([reads.listSubscriptions(deadline()), reads.subscriptionPayments(active, deadline())]);

    await store.forgetOrder(SEED.orders.sample);
    await store.forgetSubscription(`0${active}`);
    // Answers to requests sent within the clock skew of a drop are served, not kept.
    now = T0 + CLOCK_SKEW_MS;
    const again = await Promise.all([
      reads.paymentsOfOrder(SEED.orders.sample, deadline()),
      reads.listSubscriptions(deadline()),
      reads.subscriptionPayments(active, deadline()),
    ]);
    // The list is fresh again: one subscription is answered from it.
    const one = await reads.getSubscription(active, deadline());

    expect(again.map((answer) => answer.shared)).toEqual([false, false, false]);
    expect(one.shared).toBe(true);
    expect(sandbox.counters()).toMatchObject({
      search: 2,
      listSubscriptions: 2,
      subscriptionPayments: 2,
      getSubscription: 1,
    });
  });

  it('refuses to keep an answer whose request started before the drop', async () => {
    const { store } = await sharedReads();
    const read = SHARED_READS.orderPayments('Order-dropped');
    const answer = { msg: 'Payments with order_id:Order-dropped', data: [] };
    now = T0 + 5_000;
    await store.drop([read]);

    const sentBefore = await store.put(read, answer, T0 + 4_000);
    const sentJustAfter = await store.put(read, answer, T0 + 5_000 + CLOCK_SKEW_MS - 1);
    const sentAfter = await store.put(read, answer, T0 + 5_000 + CLOCK_SKEW_MS);
    const older = await store.put(read, answer, T0 + 5_000 + CLOCK_SKEW_MS);

    expect([sentBefore, sentJustAfter, sentAfter, older]).toEqual([false, false, true, false]);
  });
});

describe('the one-subscription endpoint missing', () => {
  const bare404 = { kind: 'status', status: 404, body: 'Not Found', contentType: 'text/plain' } as const;

  it('is remembered for an hour: later calls go straight to the shared list', async () => {
    const { reads } = await sharedReads();
    sandbox.faults.inject('getSubscription', bare404);

    const first = await reads.getSubscription(active, deadline());
    // The list is stale by now, the remembered fallback is not.
    now = T0 + 31_000;
    const second = await reads.getSubscription(String(SEED.subscriptions.failed), deadline());
    const callsWithinTheHour = { ...sandbox.counters() };
    now = T0 + 3_600_000;
    await reads.getSubscription(String(SEED.subscriptions.completed), deadline());

    expect(first.answer.data).toMatchObject({ subscription_id: SEED.subscriptions.active });
    expect(second.answer.data).toMatchObject({ subscription_id: SEED.subscriptions.failed });
    expect(callsWithinTheHour).toMatchObject({ getSubscription: 1, listSubscriptions: 2 });
    // After the hour PayHere's one-subscription endpoint is asked again (it answers now).
    expect(sandbox.counters()).toMatchObject({ getSubscription: 2, listSubscriptions: 2 });
  });

  it('is not remembered for a subscription PayHere says it does not know', async () => {
    const { reads, store } = await sharedReads();

    await expect(
      reads.getSubscription(String(SEED.subscriptions.unknown), deadline()),
    ).rejects.toBeInstanceOf(NotFoundError);
    // Without the list it fetched (a recent list would be refreshed instead).
    await store.drop([SHARED_READS.subscriptions]);
    await reads.getSubscription(active, deadline());

    expect(count('getSubscription')).toBe(2);
  });

  it('asks for the list again when a fresh shared one lacks the subscription (it may be newer)', async () => {
    const { reads } = await sharedReads();
    await reads.listSubscriptions(deadline());

    await expect(reads.getSubscription('420075030000', deadline())).rejects.toBeInstanceOf(NotFoundError);

    expect(sandbox.counters()).toMatchObject({ getSubscription: 0, listSubscriptions: 2 });
  });
});

describe('a list read lately', () => {
  it('is refreshed for one subscription once stale, rather than asking for that one alone', async () => {
    const { reads } = await sharedReads();
    await reads.listSubscriptions(deadline());
    now = T0 + 31_000;

    const [one, other] = await Promise.all([
      reads.getSubscription(active, deadline()),
      reads.getSubscription(String(SEED.subscriptions.failed), deadline()),
    ]);
    now = T0 + 31_000 + 10 * 60_000;
    await reads.getSubscription(active, deadline());

    expect([one.shared, other.shared]).toEqual([false, false]);
    expect(other.answer.data).toMatchObject({ subscription_id: SEED.subscriptions.failed });
    // Ten minutes after the list was last fetched, one subscription is asked for alone again.
    expect(sandbox.counters()).toMatchObject({ listSubscriptions: 2, getSubscription: 1 });
  });
});
