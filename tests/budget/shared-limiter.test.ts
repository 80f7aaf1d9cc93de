import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type IdleWork, idleWork, SharedLimiter } from '../../lib/budget/limiter.ts';
import type { SharedStateTable } from '../../lib/budget/state-table.ts';
import { type CallKind, SlidingWindowLimiter } from '../../lib/budget/window-limiter.ts';
import { RateLimitedError } from '../../lib/envelope/errors.ts';
import { countMetric, timeMetric } from '../../lib/log/metrics.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { captureLogs } from '../helpers/logs.ts';
import { freePort } from '../helpers/ports.ts';
import { freshStateTable, slowRelay } from '../helpers/state-table.ts';
import { busiestWindow } from '../helpers/windows.ts';

vi.mock('../../lib/log/metrics.ts', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../lib/log/metrics.ts')>()),
  countMetric: vi.fn(),
  timeMetric: vi.fn(),
}));

const T0 = Date.UTC(2026, 10, 23, 9, 0, 0);
const WINDOW = 10_000;
const MARGIN = 500;
/** A call's second try of a table that failed it comes within 200 ms (jittered). */
const RETRY_BOUND_MS = 200;

/** A clock whose sleep moves time forward at once: one caller at a time, however many containers. */
function steppingClock() {
  let now = T0;
  const sleeps: number[] = [];
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
    sleeps,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
  };
}

type Clock = ReturnType<typeof steppingClock>;

/** `clock`'s sleeps from now on last until the test wakes them; `asleep` settles as the first begins. */
function holdSleeps(clock: Clock): { asleep: Promise<void>; wake: () => void } {
  let woken!: () => void;
  const asleep = new Promise<void>((resolve) => {
    clock.sleep = async (ms) => {
      resolve();
      await new Promise<void>((wake) => {
        woken = wake;
      });
      clock.advance(ms);
    };
  });
  return { asleep, wake: () => woken() };
}

/** One container's limiter over `table`: 8 per 10 s, 2 of them reserved; its own share 2 per 10 s. */
function container(
  table: SharedStateTable,
  clock: Clock,
  options: { limit?: number; reserved?: number; random?: () => number } = {},
) {
  return new SharedLimiter({
    table,
    limit: options.limit ?? 8,
    windowMs: WINDOW,
    marginMs: MARGIN,
    reserved: options.reserved ?? 2,
    fallback: new SlidingWindowLimiter({
      limit: 2,
      windowMs: WINDOW,
      reserved: 1,
      now: clock.now,
      sleep: clock.sleep,
    }),
    now: clock.now,
    sleep: clock.sleep,
    random: options.random ?? (() => 0),
  });
}

/**
 * Every slot of the budget taken through `limiter`: the first answered at once (free at
 * T0 + WINDOW + MARGIN, the first to free), five reads holding the shared part, two merchant's
 * charges the reserve.
 */
async function takeEverySlot(limiter: SharedLimiter): Promise<void> {
  await (await limiter.acquire('read', 0)).release();
  for (let i = 0; i < 5; i++) await limiter.acquire('read', 60_000);
  for (let i = 0; i < 2; i++) await limiter.acquire('money', 60_000);
}

const counted = (name: string) =>
  vi.mocked(countMetric).mock.calls.filter(([metric]) => metric === name).length;

beforeEach(() => {
  vi.mocked(countMetric).mockClear();
  vi.mocked(timeMetric).mockClear();
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the shared budget', () => {
  it('holds for every container together: never more than the limit in any window, each request answered at once', async () => {
    // Prepare
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const containers = [container(table, clock), container(table, clock), container(table, clock)];
    const starts: number[] = [];

    // Act: 60 calls round-robin over three containers, each answered 30 ms after it started.
    for (let i = 0; i < 60; i++) {
      const permit = await containers[i % 3]!.acquire(i % 5 === 0 ? 'money' : 'read', 120_000);
      starts.push(clock.now());
      clock.advance(30);
      await permit.release();
    }

    // Assess
    expect(starts).toHaveLength(60);
    expect(busiestWindow(starts, WINDOW)).toBeLessThanOrEqual(8);
    // A slot is used again a window and the margin after its last answer, not sooner.
    expect(busiestWindow(starts, WINDOW + MARGIN)).toBeLessThanOrEqual(8);
  });

  it('keeps a slot until the request’s deadline when its answer never came, so a lost request still counts', async () => {
    // Prepare
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const a = container(table, clock, { limit: 1, reserved: 0 });
    const b = container(table, clock, { limit: 1, reserved: 0 });

    // Act: a takes the only slot for a call that may last 5 s and never releases it (its container died).
    await a.acquire('money', 5_000);
    const refused = await b.acquire('read', WINDOW).catch((error: unknown) => error);
    await b.acquire('read', 60_000);

    // Assess
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(clock.now()).toBeGreaterThanOrEqual(T0 + 5_000 + WINDOW + MARGIN);
  });

  it('lets a container that has not seen the budget take its first slot with one write and no read', async () => {
    // Prepare: two cold containers whose guesses fall on the same slot.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const reads = vi.spyOn(table, 'readBudget');
    const takes = vi.spyOn(table, 'takeSlot');
    const a = container(table, clock);
    const b = container(table, clock);

    // Act
    await a.acquire('read', 20_000);
    const first = { reads: reads.mock.calls.length, takes: takes.mock.calls.length };
    await b.acquire('read', 20_000);

    // Assess: a wrote once; b's guess was taken, and the refusal showed b the budget (DynamoDB
    // sends the item with it), so b took another slot without reading the budget.
    expect(first).toEqual({ reads: 0, takes: 1 });
    expect(reads).not.toHaveBeenCalled();
    expect(takes).toHaveBeenCalledTimes(3);
    expect(takes.mock.calls[1]![0]).toBe(takes.mock.calls[0]![0]);
    expect(takes.mock.calls[2]![0]).not.toBe(takes.mock.calls[0]![0]);
    expect((await table.readBudget()).busyUntil.size).toBe(2);
    expect(clock.now()).toBe(T0);
  });

  it('reads the budget after a refused guess when the refusal does not show it', async () => {
    // Prepare: a table that answers a refused take without the item (a DynamoDB-compatible store
    // without ReturnValuesOnConditionCheckFailure); a holds the slot b guesses.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const take = table.takeSlot.bind(table);
    vi.spyOn(table, 'takeSlot').mockImplementation(async (...args) => {
      const taken = await take(...args);
      return taken.taken ? taken : { taken: false, budget: undefined };
    });
    const reads = vi.spyOn(table, 'readBudget');
    await container(table, clock).acquire('read', 20_000);

    // Act
    await container(table, clock).acquire('read', 20_000);

    // Assess: one read, then the free slot.
    expect(reads).toHaveBeenCalledTimes(1);
    expect((await table.readBudget()).busyUntil.size).toBe(2);
  });

  it('shows a cold container the whole budget with its first slot, so it knows what others hold', async () => {
    // Prepare: a holds one of two slots; b, cold, guesses the other, which is free.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const a = container(table, clock, { limit: 2, reserved: 0 });
    const b = container(table, clock, { limit: 2, reserved: 0, random: () => 0.99 });
    await a.acquire('read', 20_000);
    await b.acquire('read', 20_000);
    const reads = vi.spyOn(table, 'readBudget');
    const takes = vi.spyOn(table, 'takeSlot');

    // Act: no slot frees within 100 ms.
    const refused = await b.acquire('read', 100).catch((error: unknown) => error);

    // Assess: b knew both slots were taken: it asked the table nothing.
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(takes).not.toHaveBeenCalled();
    expect(reads).not.toHaveBeenCalled();
  });

  it('opens its own share only a window after the latest deadline it saw in flight, when the table fails', async () => {
    // Prepare: a money call took a slot until its deadline, 20 s away; then the table fails.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock);
    await limiter.acquire('money', 20_000);
    const down = Object.assign(new Error('connect ETIMEDOUT'), { name: 'TimeoutError' });
    vi.spyOn(table, 'takeSlot').mockRejectedValue(down);
    vi.spyOn(table, 'readBudget').mockRejectedValue(down);

    // Act
    await limiter.acquire('read', 60_000);

    // Assess: that call may reach PayHere until its deadline; the share opens a window after it.
    expect(clock.now()).toBeGreaterThanOrEqual(T0 + 20_000 + WINDOW + MARGIN);
    expect(counted('BudgetFallback')).toBe(1);
  });

  it('frees a slot a window and the margin after the answer came', async () => {
    // Prepare
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const a = container(table, clock, { limit: 1, reserved: 0 });
    const b = container(table, clock, { limit: 1, reserved: 0 });
    const permit = await a.acquire('read', 20_000);
    clock.advance(200);
    await permit.release();

    // Act
    await b.acquire('read', 20_000);

    // Assess
    expect(clock.now()).toBe(T0 + 200 + WINDOW + MARGIN);
    expect(counted('BudgetWait')).toBe(1);
    expect(vi.mocked(timeMetric)).toHaveBeenCalledWith('BudgetWaitTime', WINDOW + MARGIN);
  });

  it('keeps a reserved share for money calls and tokens that reads cannot take', async () => {
    // Prepare
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const reads = container(table, clock);
    const money = container(table, clock);
    for (let i = 0; i < 6; i++) await (await reads.acquire('read', 0)).release();

    // Act
    const seventhRead = await reads.acquire('read', 5_000).catch((error: unknown) => error);
    const charge = await money.acquire('money', 0).then(() => 'sent');
    const token = await money.acquire('token', 0).then(() => 'sent');
    const thirdMoney = await money.acquire('money', 5_000).catch((error: unknown) => error);

    // Assess
    expect(seventhRead).toBeInstanceOf(RateLimitedError);
    expect((seventhRead as RateLimitedError).headers['Retry-After']).toBe('11');
    expect([charge, token]).toEqual(['sent', 'sent']);
    expect(thirdMoney).toBeInstanceOf(RateLimitedError);
    expect(clock.sleeps).toEqual([]);
    expect(counted('BudgetRefused')).toBe(2);
  });

  it('lets money calls take the shared part first, so the reserve stays for later money', async () => {
    // Prepare
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock);

    // Act
    for (let i = 0; i < 6; i++) await limiter.acquire('money', 0);
    const read = await limiter.acquire('read', 0).catch((error: unknown) => error);
    for (let i = 0; i < 2; i++) await limiter.acquire('money', 0);

    // Assess
    expect(read).toBeInstanceOf(RateLimitedError);
    await expect(limiter.acquire('money', 0)).rejects.toBeInstanceOf(RateLimitedError);
  });

  it('answers 429 rate_limited with Retry-After at once when no slot frees before the deadline', async () => {
    // Prepare
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock, { limit: 2, reserved: 0 });
    await limiter.acquire('read', 0);
    clock.advance(3_000);
    await limiter.acquire('read', 0);

    // Act
    const error = await limiter.acquire('read', 2_000).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(RateLimitedError);
    const limited = error as RateLimitedError;
    expect([limited.httpStatus, limited.code]).toEqual([429, 'rate_limited']);
    // The first slot is busy until its deadline (T0) and frees a window and the margin later.
    expect(limited.headers['Retry-After']).toBe(String(Math.ceil((WINDOW + MARGIN - 3_000) / 1000)));
    expect(clock.sleeps).toEqual([]);
  });

  it('pauses every container after a 429 from PayHere', async () => {
    // Prepare
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const [a, b] = [container(table, clock), container(table, clock)];
    await a.acquire('read', 0);

    // Act
    await a.pause(3_000);
    const refused = await b.acquire('money', 1_000).catch((error: unknown) => error);
    await b.acquire('read', 5_000);

    // Assess
    expect((refused as RateLimitedError).headers['Retry-After']).toBe('3');
    expect(clock.now()).toBeGreaterThanOrEqual(T0 + 3_000);
    expect(clock.now()).toBeLessThan(T0 + 3_100);
  });
});

describe('calls beyond their caller’s share (spare ones)', () => {
  it('take every slot of the shared part when nobody else calls, never the reserve', async () => {
    // Prepare: 8 slots, 2 of them reserved.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock);

    // Act
    for (let i = 0; i < 6; i++) await limiter.acquire(i % 2 === 0 ? 'read' : 'money', 0, { spare: true });
    const seventh = await limiter.acquire('money', 0, { spare: true }).catch((error: unknown) => error);
    const withinShare = await limiter.acquire('money', 0).then(() => 'sent');

    // Assess
    expect(seventh).toBeInstanceOf(RateLimitedError);
    expect(withinShare).toBe('sent');
    expect(clock.sleeps).toEqual([]);
  });

  it('leave the slots that free to a call within its caller’s share that waits for one', async () => {
    // Prepare: the shared part taken by spare calls of one container, answered at once.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const [a, c] = [container(table, clock), container(table, clock)];
    for (let i = 0; i < 6; i++) await (await a.acquire('read', 0, { spare: true })).release();

    // Act: a spare call of another container waits (and said so); a call within its share waits for
    // the first slot to free; meanwhile (its mark set, its slot not yet taken) a spare call asks.
    await table.markWaiting('spare', T0 + 60_000, T0);
    const sleep = clock.sleep;
    let spareAsked: unknown;
    let firstSleep = true;
    clock.sleep = async (ms) => {
      if (firstSleep) {
        firstSleep = false;
        await sleep(ms);
        spareAsked = await c.acquire('read', 0, { spare: true }).catch((error: unknown) => error);
        return;
      }
      await sleep(ms);
    };
    const owed = await container(table, clock).acquire('read', 20_000);
    const owedAt = clock.now();
    const { owedUntil } = await table.readBudget();

    // Assess: the spare call was refused with every slot of the first container free again; the
    // call within its share took one; the mark lasts half a second past when its slot freed.
    expect(spareAsked).toBeInstanceOf(RateLimitedError);
    expect(owed).toBeDefined();
    expect(owedAt).toBe(T0 + WINDOW + MARGIN);
    expect(owedUntil).toBe(T0 + WINDOW + MARGIN + 500);
  });

  it('cost the table nothing more where none waits: a call within its share waits without a mark', async () => {
    // Prepare
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock);
    for (let i = 0; i < 6; i++) await (await limiter.acquire('read', 0)).release();
    const marks = vi.spyOn(table, 'markWaiting');

    // Act
    await limiter.acquire('read', 20_000);

    // Assess
    expect(marks).not.toHaveBeenCalled();
    expect((await table.readBudget()).owedUntil).toBe(0);
  });

  it('wait for a call within its share to take its slot, within their own deadline', async () => {
    // Prepare: a call within its share waiting for a slot until T0 + 5 s.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock);
    await table.markWaiting('owed', T0 + 5_000, T0);

    // Act
    const atOnce = await limiter.acquire('read', 1_000, { spare: true }).catch((error: unknown) => error);
    const withinShare = await limiter.acquire('read', 0).then(() => 'sent');
    await limiter.acquire('read', 10_000, { spare: true });

    // Assess
    expect((atOnce as RateLimitedError).headers['Retry-After']).toBe('5');
    expect(withinShare).toBe('sent');
    expect(clock.now()).toBeGreaterThanOrEqual(T0 + 5_000);
    expect(clock.now()).toBeLessThan(T0 + 5_100);
  });
});

describe('money calls that wait for a slot of the shared part (reads yield to money)', () => {
  /** A customer's charge: a money call that may not take the reserve. */
  const customerMoney = { reserve: false } as const;

  /** The shared part (6 of 8) taken by reads of `limiter`: the first answered at once, the others held 60 s. */
  async function readsHoldTheSharedPart(limiter: SharedLimiter): Promise<void> {
    await (await limiter.acquire('read', 0)).release();
    for (let i = 0; i < 5; i++) await limiter.acquire('read', 60_000);
  }

  it('keep a read off the slot a waiting charge needs: the read that asks first when it frees is refused, the charge takes it', async () => {
    // Prepare: reads of container a hold every slot of the shared part; one frees at T0 + 10.5 s.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const a = container(table, clock);
    await readsHoldTheSharedPart(a);
    // b, cold, guesses the slot that frees: only the take's own condition can stop it.
    const b = container(table, clock);
    const takes = vi.spyOn(table, 'takeSlot');
    const sleep = clock.sleep;
    let readAsked: unknown;
    let first = true;
    clock.sleep = async (ms) => {
      await sleep(ms);
      if (!first) return;
      first = false;
      // The slot is free; the charge has not woken yet: a read asks first.
      readAsked = await b.acquire('read', 0).catch((error: unknown) => error);
    };

    // Act: a customer's charge (of a container made now, to sleep on the clock above) waits for that slot.
    const charge = await container(table, clock).acquire('money', 20_000, customerMoney);
    const chargedAt = clock.now();
    const { moneyUntil } = await table.readBudget();

    // Assess: the read's write named the mark and was refused; the charge took the slot when it freed.
    expect(readAsked).toBeInstanceOf(RateLimitedError);
    const readTake = takes.mock.calls.find((args) => args[6]?.includes('money'));
    expect(readTake).toBeDefined();
    expect(await takes.mock.results[takes.mock.calls.indexOf(readTake!)]!.value).toMatchObject({
      taken: false,
    });
    expect(charge).toBeDefined();
    expect(chargedAt).toBe(T0 + WINDOW + MARGIN);
    expect(moneyUntil).toBe(T0 + WINDOW + MARGIN + 500);
  });

  it('cost nothing where no charge waits: a charge that finds a slot writes no mark, and reads take every slot as it frees', async () => {
    // Prepare: five reads and a charge (at once) hold the shared part.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock);
    const marks = vi.spyOn(table, 'markWaiting');
    await (await limiter.acquire('read', 0)).release();
    for (let i = 0; i < 4; i++) await limiter.acquire('read', 60_000);
    await limiter.acquire('money', 60_000, customerMoney);

    // Act: a read waits for the first slot to free.
    await limiter.acquire('read', 20_000);

    // Assess
    expect(clock.now()).toBe(T0 + WINDOW + MARGIN);
    expect(marks).not.toHaveBeenCalled();
    expect((await table.readBudget()).moneyUntil).toBe(0);
  });

  it('hold reads off for half a second past the charge’s slot at most: a read waits its turn within its deadline', async () => {
    // Prepare: the shared part held by reads, two of them answered at once (their slots free at
    // T0 + 10.5 s and T0 + 10.8 s); a charge waits for the first and takes it.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock);
    await (await limiter.acquire('read', 0)).release();
    clock.advance(300);
    await (await limiter.acquire('read', 0)).release();
    for (let i = 0; i < 4; i++) await limiter.acquire('read', 60_000);
    await limiter.acquire('money', 20_000, customerMoney);
    const chargedAt = clock.now();

    // Act: a read, then a read that cannot wait.
    const read = await container(table, clock).acquire('read', 20_000);
    const readAt = clock.now();
    const hurried = await container(table, clock)
      .acquire('read', 1_000)
      .catch((error: unknown) => error);

    // Assess: the second slot went to the read once the mark lapsed, not before; the hurried read
    // was refused, as it is when no slot frees before its deadline.
    expect(chargedAt).toBe(T0 + WINDOW + MARGIN);
    expect(read).toBeDefined();
    expect(readAt).toBe(T0 + WINDOW + MARGIN + 500);
    expect(hurried).toBeInstanceOf(RateLimitedError);
  });

  it('mark the wait once when the mark’s write was applied and its answer lost', async () => {
    // Prepare: the table's next write (the charge's mark) is applied and its answer lost; the
    // client tries again, as the functions' clients do.
    const { table, name } = await freshStateTable({ attempts: 3 });
    const clock = steppingClock();
    const limiter = container(table, clock);
    await readsHoldTheSharedPart(limiter);
    captureLogs('silent');
    await injectDynamoDbFault({ operation: 'UpdateItem', table: name, fault: { kind: 'applyAndLose' } });

    // Act
    const charge = await limiter.acquire('money', 20_000, customerMoney);

    // Assess: the retry met its own mark and changed nothing; the charge waited for its slot.
    expect(charge).toBeDefined();
    expect(clock.now()).toBe(T0 + WINDOW + MARGIN);
    expect((await table.readBudget()).moneyUntil).toBe(T0 + WINDOW + MARGIN + 500);
    expect(counted('BudgetRefused')).toBe(0);
  });

  it('free a slot whose take was applied with every answer lost: it is not held, unused, to the call’s deadline', async () => {
    // Prepare: the take's first try applied and its answer lost, the client's two retries failed.
    const { table, name } = await freshStateTable({ attempts: 3 });
    const clock = steppingClock();
    const limiter = container(table, clock);
    captureLogs('silent');
    await injectDynamoDbFault({ operation: 'UpdateItem', table: name, fault: { kind: 'applyAndLose' } });
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: name,
      fault: { kind: 'status500' },
      times: 2,
    });

    // Act: the read asks the table again and gets a slot.
    const read = await limiter.acquire('read', 20_000);
    await backgroundSettled();

    // Assess: one slot busy, the read's; the lost take's slot is free again, not busy until
    // T0 + 20 s and unusable a window after.
    expect(read).toBeDefined();
    const budget = await table.readBudget();
    expect([...budget.busyUntil.values()]).toEqual([T0 + 20_000]);
  });

  it('take no slot for a call no longer wanted, and keep no place in the container’s queue for it', async () => {
    // Prepare: every slot taken; a read of another container waits for the first to free (its sleep
    // runs until the test ends it), and a second read of that container waits behind it.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    await takeEverySlot(container(table, clock));
    const { asleep, wake } = holdSleeps(clock);
    const waiting = container(table, clock);
    const unwanted = new AbortController();
    let outcome: unknown = 'waiting';
    void waiting.acquire('read', 60_000, { signal: unwanted.signal }).then(
      () => {
        outcome = 'a slot';
      },
      (error: unknown) => {
        outcome = error;
      },
    );
    await asleep;
    const behind = waiting.acquire('read', 60_000);
    const takes = vi.spyOn(table, 'takeSlot');

    // Act: the first read is no longer wanted (its answer was found shared, say).
    unwanted.abort();
    await new Promise((resolve) => setImmediate(resolve));
    wake();

    // Assess: it stopped waiting at once; the read behind it took the slot that freed, the only take.
    expect(outcome).toMatchObject({ name: 'AbortError' });
    await expect(behind).resolves.toBeDefined();
    const taken = await Promise.all(takes.mock.results.map((result) => result.value));
    expect(taken.map((take) => take.taken)).toEqual([true]);
  });

  it('never free, for a lost take, a slot another take holds, even to the same deadline', async () => {
    const { table } = await freshStateTable();
    await table.takeSlot(3, T0 + 20_000, T0 - WINDOW, T0, 'theirs');

    const freed = await Promise.all([
      table.dropTake(3, T0 + 20_000, 'ours'),
      table.dropTake(3, T0 + 19_999, 'theirs'),
    ]);

    expect(freed).toEqual([false, false]);
    expect((await table.readBudget()).busyUntil.get(3)).toBe(T0 + 20_000);
  });

  it('wait all the same when the table throttles the mark: it is best effort, and the limit never depends on it', async () => {
    // Prepare: every try of the charge's mark throttled.
    const { table, name } = await freshStateTable({ attempts: 3 });
    const clock = steppingClock();
    const limiter = container(table, clock);
    await readsHoldTheSharedPart(limiter);
    captureLogs('silent');
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: name,
      fault: { kind: 'throttle' },
      times: 3,
    });

    // Act
    const charge = await limiter.acquire('money', 20_000, customerMoney);
    const budget = await table.readBudget();

    // Assess: no mark, the charge's slot all the same; no slot beyond the limit, none from the
    // container's own share.
    expect(charge).toBeDefined();
    expect(clock.now()).toBe(T0 + WINDOW + MARGIN);
    expect(budget.moneyUntil).toBe(0);
    expect(budget.busyUntil.size).toBe(6);
    expect(counted('BudgetFallback')).toBe(0);
  });

  it('never hold up, within one container, a merchant’s charge that may take the reserve', async () => {
    // Prepare: reads hold the shared part; a customer's charge of the same container waits for a
    // slot of it (its sleep runs until the test ends it).
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock);
    await readsHoldTheSharedPart(limiter);
    const { asleep, wake } = holdSleeps(clock);
    const waiting = container(table, clock);
    const customer = waiting.acquire('money', 20_000, customerMoney);
    await asleep;

    // Act: the merchant's charge, with no time to wait.
    const merchant = await waiting.acquire('money', 0).then(() => 'sent');
    wake();

    // Assess
    expect(merchant).toBe('sent');
    await expect(customer).resolves.toBeDefined();
  });

  it('leave the merchant’s charge that waits for a reserved slot unmarked: reads lose nothing to it', async () => {
    // Prepare: every slot taken, the reserve's first to free (at T0 + 10.5 s), the shared part's
    // a second later.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock);
    const reads = await Promise.all(Array.from({ length: 6 }, () => limiter.acquire('read', 60_000)));
    await (await limiter.acquire('money', 0)).release();
    await limiter.acquire('money', 60_000);
    clock.advance(1_000);
    for (const read of reads) await read.release();
    const marks = vi.spyOn(table, 'markWaiting');

    // Act
    await limiter.acquire('money', 20_000);

    // Assess
    expect(clock.now()).toBe(T0 + WINDOW + MARGIN);
    expect(marks).not.toHaveBeenCalled();
  });
});

describe('a token request that waits for a slot (every call yields to it)', () => {
  it('takes the slot that frees before a money call that asks first: without the token nothing reaches PayHere', async () => {
    // Prepare: reads hold the shared part and the merchant's charges the reserve; the first
    // slot frees at T0 + 10.5 s.
    const { table } = await freshStateTable();
    const clock = steppingClock();
    await takeEverySlot(container(table, clock));
    // b, cold, guesses the slot that frees: only the take's own condition can stop it.
    const b = container(table, clock);
    const takes = vi.spyOn(table, 'takeSlot');
    const sleep = clock.sleep;
    let chargeAsked: unknown;
    let first = true;
    clock.sleep = async (ms) => {
      await sleep(ms);
      if (!first) return;
      first = false;
      // The slot is free; the token request has not woken yet: a merchant's charge asks first.
      chargeAsked = await b.acquire('money', 0).catch((error: unknown) => error);
    };

    // Act: the token request (of a container made now, to sleep on the clock above) waits.
    const marks = vi.spyOn(table, 'markWaiting');
    const fetcher = container(table, clock);
    const token = await fetcher.acquire('token', 20_000);
    const tokenAt = clock.now();
    const { tokenUntil } = await table.readBudget();

    // Assess: the charge's write named the mark and was refused; the token took the slot.
    expect(chargeAsked).toBeInstanceOf(RateLimitedError);
    const chargeTake = takes.mock.calls.find((args) => args[6]?.includes('token'));
    expect(chargeTake).toBeDefined();
    expect(await takes.mock.results[takes.mock.calls.indexOf(chargeTake!)]!.value).toMatchObject({
      taken: false,
    });
    expect(token).toBeDefined();
    expect(tokenAt).toBe(T0 + WINDOW + MARGIN);
    expect(marks).toHaveBeenCalledWith('token', T0 + WINDOW + MARGIN + 500, expect.any(Number));
    // Its take ended its mark: nobody waits for a token already fetched.
    expect(tokenUntil).toBe(0);
  });

  it('never waits behind a charge of its container that waits for a slot: it asks the table in a queue of its own', async () => {
    // Prepare: every slot taken, the first answered at once (free at T0 + 10.5 s); a merchant's
    // charge of the same container waits for it (its sleep runs until the test ends it).
    const { table } = await freshStateTable();
    const clock = steppingClock();
    await takeEverySlot(container(table, clock));
    const { asleep, wake } = holdSleeps(clock);
    const waiting = container(table, clock);
    const charge = waiting.acquire('money', 20_000).catch((error: unknown) => error);
    await asleep;
    clock.advance(WINDOW + MARGIN);

    // Act: the token, with no time to wait, while the charge still sleeps.
    const token = await waiting.acquire('token', 0).then(
      () => 'taken',
      (error: unknown) => error,
    );
    wake();

    // Assess: the slot that freed is the token's; the charge finds none left before its deadline.
    expect(token).toBe('taken');
    await charge;
  });

  it('costs nothing when it finds a slot: no mark is written', async () => {
    const { table } = await freshStateTable();
    const clock = steppingClock();
    const marks = vi.spyOn(table, 'markWaiting');

    await container(table, clock).acquire('token', 20_000);

    expect(marks).not.toHaveBeenCalled();
    expect((await table.readBudget()).tokenUntil).toBe(0);
  });
});

describe('idle work (the settle job)', () => {
  /** `calls` run as idle work that may wait until `until`. */
  const asIdle = <T>(until: number, call: () => Promise<T>, work: IdleWork = { until, refused: false }) =>
    idleWork.run(work, call);

  /** A job that took `n` slots as idle work on a fresh budget, each busy until its deadline. */
  const jobHolding = async (n: number) => {
    const { table } = await freshStateTable();
    const at = steppingClock();
    const job = container(table, at);
    for (let i = 0; i < n; i++) await asIdle(T0 + 60_000, () => job.acquire('read', 60_000));
    return { table, at, job };
  };
  /** Idle work's pace here: a window and the margin's share of the 8 slots. */
  const PACE = Math.ceil((WINDOW + MARGIN) / 8);
  /** The job takes a slot as idle work until `until`, answered at once; when it took it. */
  const take = async (job: SharedLimiter, at: Clock, until: number) => {
    await (await asIdle(until, () => job.acquire('read', 60_000))).release();
    return at.now();
  };

  it('takes only what leaves the live reserve free while live calls are about: the reserved part first, then the shared part down to the reserve, a slot per pace', async () => {
    // Prepare: 8 slots, 2 reserved for money; the live reserve is as large, 2. A live call of
    // another container has just taken a slot of the shared part.
    const { table } = await freshStateTable();
    const at = steppingClock();
    await (await container(table, at).acquire('read', 0)).release();
    const job = container(table, at);

    // Act: five, one a pace apart; a sixth waits for the first to free.
    const taken: number[] = [];
    for (let i = 0; i < 6; i++) taken.push(await take(job, at, T0 + 60_000));
    const budget = await table.readBudget();

    // Assess
    expect(taken.slice(0, 5)).toEqual([0, 1, 2, 3, 4].map((i) => T0 + i * PACE));
    expect(taken[5]).toBeGreaterThanOrEqual(T0 + WINDOW + MARGIN);
    expect([...budget.busyUntil.keys()].filter((slot) => slot < 2)).toHaveLength(2);
    // Neither waits nor refusals of idle work are the live calls' metrics.
    expect(counted('BudgetWait')).toBe(0);
  });

  it('leaves one slot free while no live call took one for a window and the margin: the next live call takes it at once', async () => {
    // Prepare: 8 slots, 2 reserved, a live reserve of 2; nothing live for a window.
    const { table } = await freshStateTable();
    const at = steppingClock();
    const job = container(table, at);

    // Act: the job takes all it may, then tries for an eighth; a live call of another container.
    const taken: number[] = [];
    for (let i = 0; i < 7; i++) taken.push(await take(job, at, T0 + 60_000));
    const eighth = await take(job, at, at.now() + 1_000).catch((error: unknown) => error);
    const sleptBefore = at.sleeps.length;
    await container(table, at).acquire('money', 0);

    // Assess: seven of eight, a pace apart; the eighth is the live call's, taken without a wait.
    expect(taken).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => T0 + i * PACE));
    expect(eighth).toBeInstanceOf(RateLimitedError);
    expect(at.sleeps.length).toBe(sleptBefore);
    expect((await table.readBudget()).busyUntil.size).toBe(8);
  });

  it('leaves the whole live reserve again once a live call takes a slot, until that take is a window and the margin old', async () => {
    // Prepare: the job holds 5 of 8 (the job's slots busy until their deadline), 3 free; a live
    // call of another container takes one of them.
    const { table, at, job } = await jobHolding(5);
    const liveAt = at.now();
    await container(table, at).acquire('read', 0);

    // Act: the job, at once; then twice more, waiting until it may.
    const atOnce = await asIdle(liveAt + 1_000, () => job.acquire('read', 60_000)).catch(
      (error: unknown) => error,
    );
    const later: number[] = [];
    for (let i = 0; i < 2; i++) {
      await asIdle(liveAt + 30_000, () => job.acquire('read', 60_000));
      later.push(at.now());
    }

    // Assess: two free are the live reserve; once the live take is a window and the margin old
    // (its slot free too), the job leaves one again: it takes two, a pace apart.
    expect(atOnce).toBeInstanceOf(RateLimitedError);
    expect(later).toEqual([liveAt + WINDOW + MARGIN, liveAt + WINDOW + MARGIN + PACE]);
  });

  it('borrows the live reserve only in a quiet spell, on the condition, in its write, that no live call took a slot since', async () => {
    // Prepare: 8 slots, 2 reserved, a live reserve of 2; nothing live for a window.
    const { table } = await freshStateTable();
    const at = steppingClock();
    const job = container(table, at);
    const takes = vi.spyOn(table, 'takeSlot');

    // Act: all the job may take.
    for (let i = 0; i < 7; i++) await asIdle(T0 + 60_000, () => job.acquire('read', 60_000));

    // Assess: six leave the live reserve free and count on nothing; the seventh borrows one of its
    // two slots, counting on the quiet spell that began a window and the margin before it.
    const conditions = takes.mock.calls.map((call) => call[7]?.quietBefore);
    expect(conditions.slice(0, 6)).toEqual(Array(6).fill(undefined));
    expect(conditions[6]).toBe(T0 + 6 * PACE - WINDOW - MARGIN);
    expect(takes.mock.calls[6]![5]).toHaveLength(1);
    expect(takes.mock.calls.map((call) => call[7]?.live)).toEqual(Array(7).fill(false));
  });

  it('a take counting on a quiet spell is refused by the table once a live call took a slot since', async () => {
    // Prepare: a live call's take.
    const { table } = await freshStateTable();
    const live = await table.takeSlot(0, T0 + 5_000, T0 - WINDOW, T0, 'live', [], [], { live: true });

    // Act: idle work's takes of another slot, one counting on no live take since just before it,
    // one since it.
    const since = (quietBefore: number, slot: number) =>
      table.takeSlot(slot, T0 + 5_000, T0 - WINDOW, T0 + 1, `idle${slot}`, [], [], { quietBefore });
    const refused = await since(T0 - 1, 1);
    const taken = await since(T0, 2);

    // Assess
    expect(live).toMatchObject({ taken: true, budget: { liveAt: T0 } });
    expect(refused).toMatchObject({ taken: false, budget: { liveAt: T0 } });
    expect(taken.taken).toBe(true);
  });

  it('counts no BudgetWait for a slot taken at once, however long the call took to be scheduled', async () => {
    // Prepare: a clock that moves a millisecond every time it is read, as a busy event loop does.
    const { table } = await freshStateTable();
    let now = T0;
    const ticking = {
      now: () => now++,
      sleep: async (ms: number) => {
        now += ms;
      },
    };

    // Act
    await container(table, ticking as never).acquire('money', 5_000);

    // Assess
    expect(counted('BudgetWait')).toBe(0);
  });

  it('never delays a live call while live calls are about: a read and a charge find the live reserve free while the job holds the rest', async () => {
    // Prepare: a live call took a slot; the job then took all it may in another container.
    const { table } = await freshStateTable();
    const at = steppingClock();
    const live = container(table, at);
    await live.acquire('read', 0);
    const job = container(table, at);
    for (let i = 0; i < 5; i++) await asIdle(T0 + 60_000, () => job.acquire('money', 60_000));
    const sleptBefore = at.sleeps.length;

    // Act
    const read = await live.acquire('read', 0).then(() => 'sent');
    const charge = await live.acquire('money', 0).then(() => 'sent');
    const jobAgain = await asIdle(at.now() + 5_000, () => job.acquire('read', 60_000)).catch(
      (error: unknown) => error,
    );

    // Assess: at once, no wait; the job does not take what live calls left it meanwhile.
    expect([read, charge]).toEqual(['sent', 'sent']);
    expect(at.sleeps.length).toBe(sleptBefore);
    expect(jobAgain).toBeInstanceOf(RateLimitedError);
  });

  it('checks the live reserve in its write: a container that saw it free before live calls took it takes nothing', async () => {
    // Prepare: a live call holds a slot, the job 4 of 8, and it last saw 3 of the shared part
    // free; then live calls of another container take 2 of those 3.
    const { table } = await freshStateTable();
    const at = steppingClock();
    const live = container(table, at, { random: () => 0.99 });
    await live.acquire('read', 0);
    const job = container(table, at, { random: () => 0.5 });
    for (let i = 0; i < 4; i++) await asIdle(T0 + 60_000, () => job.acquire('read', 60_000));
    await live.acquire('read', 0);
    await live.acquire('read', 0);
    const takes = vi.spyOn(table, 'takeSlot');

    // Act: the job's view says it may take one more.
    const until = at.now() + 5_000;
    const work: IdleWork = { until, refused: false };
    const refused = await asIdle(until, () => job.acquire('read', 60_000), work).catch(
      (error: unknown) => error,
    );
    const budget = await table.readBudget();

    // Assess: its write named the reserve, failed, and showed it the budget; the last slot is free.
    expect(takes).toHaveBeenCalledTimes(1);
    expect(takes.mock.calls[0]![5]).toHaveLength(2);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(work.refused).toBe(true);
    expect(budget.busyUntil.size).toBe(7);
    expect(counted('BudgetRefused')).toBe(0);
  });

  it('waits no later than its work’s end, whatever the call’s own deadline', async () => {
    // Prepare: the job holds all it may (in a quiet spell, 7 of 8).
    const { at, job } = await jobHolding(7);
    const asked = at.now();
    const work: IdleWork = { until: asked + 2_000, refused: false };

    // Act
    const refused = await asIdle(asked + 2_000, () => job.acquire('money', 60_000), work).catch(
      (error: unknown) => error,
    );

    // Assess
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(work.refused).toBe(true);
    expect(at.now()).toBe(asked);
  });

  it('never takes the container’s own share when the table cannot be reached: it waits for the table', async () => {
    // Prepare
    const { table } = await freshStateTable({
      endpoint: `http://127.0.0.1:${await freePort()}`,
      timeoutMs: 300,
    });
    const clock = steppingClock();
    const job = container(table, clock);
    captureLogs('warn');
    clock.advance(WINDOW + MARGIN);

    // Act
    const refused = await asIdle(clock.now() + 60_000, () => job.acquire('read', 60_000)).catch(
      (error: unknown) => error,
    );

    // Assess
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(counted('BudgetFallback')).toBe(0);
  });
});

describe('when the shared table cannot be reached', () => {
  const fallbackLog = (lines: { message: string }[]) =>
    lines.filter((line) => line.message.includes('fallback share'));

  it('each container falls back to its own small share a window later, logs it once a window and counts every call it serves', async () => {
    // Prepare: a table on a port where nothing listens.
    const { table } = await freshStateTable({
      endpoint: `http://127.0.0.1:${await freePort()}`,
      timeoutMs: 300,
    });
    const clock = steppingClock();
    const limiter = container(table, clock);
    const lines = captureLogs('warn');

    // Act: refused while what other containers sent through the table may be in PayHere's window.
    const whileOthersMayHaveSent = await limiter.acquire('money', 1_000).catch((error: unknown) => error);
    clock.advance(WINDOW + MARGIN);
    await limiter.acquire('read', 0);
    const secondRead = await limiter.acquire('read', 1_000).catch((error: unknown) => error);
    await limiter.acquire('money', 0);
    const thirdCall = await limiter.acquire('money', 1_000).catch((error: unknown) => error);

    // Assess
    expect((whileOthersMayHaveSent as RateLimitedError).headers['Retry-After']).toBe('11');
    expect(secondRead).toBeInstanceOf(RateLimitedError);
    expect(thirdCall).toBeInstanceOf(RateLimitedError);
    expect(counted('BudgetFallback')).toBe(2);
    // Once when the table failed, once when it failed again a window later (the four calls after).
    expect(fallbackLog(lines)).toHaveLength(2);
    expect(fallbackLog(lines)[0]).toMatchObject({ level: 'warn' });
  });

  it('gives up on a slow table after its timeout, serves from the share, and goes back to the table a window later', async () => {
    // Prepare
    const relay = await slowRelay(2_000);
    try {
      const { table } = await freshStateTable({ endpoint: relay.endpoint, timeoutMs: 300 });
      const clock = steppingClock();
      const limiter = container(table, clock);
      captureLogs('warn');

      // Act: the share opens a window and the margin after the table failed (the clock's sleep).
      const started = performance.now();
      await limiter.acquire('read', WINDOW + MARGIN + 1_000);
      const tookMs = performance.now() - started;
      relay.slow = false;
      await limiter.acquire('read', 0).catch(() => undefined); // still on its share: refused or served
      clock.advance(WINDOW);
      const fallbacksBefore = counted('BudgetFallback');
      for (let i = 0; i < 5; i++) await limiter.acquire('read', 0);

      // Assess
      expect(tookMs).toBeLessThan(1_500);
      expect(fallbacksBefore).toBeGreaterThanOrEqual(1);
      expect(counted('BudgetFallback')).toBe(fallbacksBefore);
    } finally {
      await relay.close();
    }
  });

  it('lets one slow request cost that request only: the call tries again, and the next call is served by the table at once', async () => {
    // Prepare: the table's next write of the budget answers a second late (applied at once).
    const { table, name } = await freshStateTable({ timeoutMs: 300 });
    const clock = steppingClock();
    const limiter = container(table, clock);
    captureLogs('warn');
    await injectDynamoDbFault({ operation: 'UpdateItem', table: name, fault: { kind: 'slow', ms: 1_000 } });

    // Act: a charge with 5 s to go, then at once a charge and a read with no time to wait.
    await limiter.acquire('money', 5_000);
    const next = await limiter.acquire('money', 0).catch((error: unknown) => error);
    const read = await limiter.acquire('read', 0).catch((error: unknown) => error);

    // Assess: no 429, nothing served from the container's own share, no window lost.
    expect(next).not.toBeInstanceOf(Error);
    expect(read).not.toBeInstanceOf(Error);
    expect(counted('BudgetFallback')).toBe(0);
    expect(clock.now() - T0).toBeLessThan(RETRY_BOUND_MS);
  });

  it('waits, never falls back, while the table throttles: a throttled call asks again within its deadline', async () => {
    // Prepare: the next five writes of the budget throttled, as DynamoDB does past an item's rate.
    const { table, name } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock, { random: () => 0.5 });
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: name,
      fault: { kind: 'throttle' },
      times: 5,
    });

    // Act
    await limiter.acquire('read', 10_000);
    const afterwards = await limiter.acquire('read', 0);

    // Assess: served by the table after pauses of jitter, not by the container's own share.
    expect(afterwards).toBeDefined();
    expect(counted('BudgetFallback')).toBe(0);
    expect(clock.sleeps.length).toBeGreaterThanOrEqual(5);
    expect(clock.now() - T0).toBeLessThan(5_000);
  });

  it('answers 429 at its deadline while the table throttles, never taking its own share', async () => {
    // Prepare: a table that throttles every request to it.
    const { table, name } = await freshStateTable();
    const clock = steppingClock();
    const limiter = container(table, clock, { random: () => 0.9 });
    await injectDynamoDbFault({ operation: '*', table: name, fault: { kind: 'throttle' }, times: 1_000 });

    // Act
    const refused = await limiter.acquire('money', 3_000).catch((error: unknown) => error);

    // Assess
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(counted('BudgetFallback')).toBe(0);
    expect(clock.now() - T0).toBeLessThanOrEqual(3_000);
  });

  it('without a share of its own (the deployed default), a container serves nothing while the table fails: its calls ask again until their deadline, then 429', async () => {
    // Prepare: a table on a port where nothing listens, and a container with no fallback.
    const { table } = await freshStateTable({
      endpoint: `http://127.0.0.1:${await freePort()}`,
      timeoutMs: 300,
    });
    const clock = steppingClock();
    const limiter = new SharedLimiter({
      table,
      limit: 8,
      windowMs: WINDOW,
      marginMs: MARGIN,
      reserved: 2,
      ...clock,
      random: () => 0.5,
    });
    captureLogs('warn');
    const tries = vi.spyOn(table, 'takeSlot');

    // Act: a charge with 3 s to go, and one a window later.
    const refused = await limiter.acquire('money', 3_000).catch((error: unknown) => error);
    clock.advance(WINDOW + MARGIN);
    const later = await limiter.acquire('money', 3_000).catch((error: unknown) => error);

    // Assess: every call went to the table, more than once, and none was served without it.
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(later).toBeInstanceOf(RateLimitedError);
    expect(tries.mock.calls.length).toBeGreaterThan(4);
    expect(counted('BudgetFallback')).toBe(0);
  });

  it('with shares of their own within slots the table never gives out, holds the limit while the table fails for one container only', async () => {
    // Prepare: 8 slots, 2 of them kept for two containers' shares of 1; the table fails for a
    // only, while b still reaches it and takes every slot it gives out.
    const { table } = await freshStateTable();
    const broken = new Proxy(table, {
      get(target, property) {
        const value = Reflect.get(target, property) as unknown;
        if (typeof value !== 'function') return value;
        return () => Promise.reject(Object.assign(new Error('table down'), { name: 'InternalServerError' }));
      },
    });
    const clock = steppingClock();
    const withShare = (over: SharedStateTable) =>
      new SharedLimiter({
        table: over,
        limit: 8,
        windowMs: WINDOW,
        marginMs: MARGIN,
        reserved: 2,
        fallback: new SlidingWindowLimiter({ limit: 1, windowMs: WINDOW + MARGIN, ...clock }),
        fallbackSlots: 2,
        ...clock,
        random: () => 0,
      });
    const a = withShare(broken);
    const b = withShare(table);
    captureLogs('warn');
    const starts: number[] = [];

    // Act: each asks every 250 ms for 30 s, each call given 200 ms.
    for (let step = 0; step < 120; step++) {
      for (const limiter of [a, b]) {
        try {
          const permit = await limiter.acquire(step % 3 === 0 ? 'money' : 'read', 200);
          starts.push(clock.now());
          await permit.release();
        } catch (error) {
          expect(error).toBeInstanceOf(RateLimitedError);
        }
      }
      clock.advance(250);
    }

    // Assess: a served from its share at once, b from the table's 6, never more than 8 in a window.
    expect(counted('BudgetFallback')).toBeGreaterThanOrEqual(3);
    expect(busiestWindow(starts, WINDOW)).toBeLessThanOrEqual(8);
    expect(busiestWindow(starts, WINDOW)).toBeGreaterThanOrEqual(6);
  });

  it('keeps every container together within the limit when the table fails mid-way', async () => {
    // Prepare: four containers on one table that answers 30 requests, then fails for all of them.
    // Their own shares together (4 × 2 per window) are the limit, as docs/budget.md says to size them.
    const { table } = await freshStateTable();
    let requests = 0;
    const failing = new Proxy(table, {
      get(target, property) {
        const value = Reflect.get(target, property) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (++requests > 30)
            return Promise.reject(Object.assign(new Error('table down'), { name: 'InternalServerError' }));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const clock = steppingClock();
    const containers = Array.from({ length: 4 }, () => container(failing, clock));
    captureLogs('warn');
    const starts: number[] = [];
    let fromShares = 0;

    // Act: each container asks every 250 ms for 40 s, each call given 200 ms to get a slot.
    for (let step = 0; step < 160; step++) {
      for (const [i, limiter] of containers.entries()) {
        const kind: CallKind = (step + i) % 4 === 0 ? 'money' : 'read';
        const failedBefore = requests > 30;
        try {
          const permit = await limiter.acquire(kind, 200);
          starts.push(clock.now());
          if (failedBefore) fromShares++;
          await permit.release();
        } catch (error) {
          expect(error).toBeInstanceOf(RateLimitedError);
        }
      }
      clock.advance(250);
    }

    // Assess: the table's calls and then the shares', never more than the limit in any window.
    expect(requests).toBeGreaterThan(30);
    expect(fromShares).toBeGreaterThanOrEqual(8);
    expect(busiestWindow(starts, WINDOW)).toBeLessThanOrEqual(8);
  });
});
