import { describe, expect, it } from 'vitest';
import { SlidingWindowLimiter } from '../../lib/budget/window-limiter.ts';
import { RateLimitedError } from '../../lib/envelope/errors.ts';
import { busiestWindow } from '../helpers/windows.ts';

const T0 = Date.UTC(2024, 5, 1, 4, 30, 0);

/** A clock whose sleep moves time forward at once: one caller at a time. */
function steppingClock() {
  let now = T0;
  const sleeps: number[] = [];
  return {
    now: () => now,
    advance: (ms: number) => (now += ms),
    sleeps,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
  };
}

/** Virtual time for concurrent callers: sleepers wake in time order when the test runs the clock. */
function virtualClock() {
  let now = T0;
  const timers: { at: number; wake: () => void }[] = [];
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    now: () => now,
    sleep: (ms: number) => new Promise<void>((wake) => timers.push({ at: now + ms, wake })),
    /** Let everyone run, then wake the earliest sleeper, until nobody sleeps. */
    async run(): Promise<void> {
      for (;;) {
        await settle();
        timers.sort((a, b) => a.at - b.at);
        const next = timers.shift();
        if (!next) return;
        now = Math.max(now, next.at);
        next.wake();
      }
    },
  };
}

/** A limiter of `limit` calls per `windowMs` on a test clock. */
function limiterOn(
  time: { now: () => number; sleep: (ms: number) => Promise<void> },
  limit: number,
  windowMs = 10_000,
) {
  return new SlidingWindowLimiter({ limit, windowMs, now: time.now, sleep: time.sleep });
}

describe('SlidingWindowLimiter', () => {
  it('lets the first `limit` calls start at once', async () => {
    // Prepare
    const time = steppingClock();
    const limiter = limiterOn(time, 20);

    // Act
    for (let i = 0; i < 20; i++) await limiter.acquire(0);

    // Assess
    expect(time.sleeps).toEqual([]);
    expect(time.now()).toBe(T0);
  });

  it('never starts more than `limit` calls in any window, one caller after another', async () => {
    // Prepare
    const time = steppingClock();
    const limiter = limiterOn(time, 20);
    const starts: number[] = [];

    // Act
    for (let i = 0; i < 100; i++) {
      await limiter.acquire(60_000);
      starts.push(time.now());
      time.advance(i % 7 === 0 ? 130 : 0);
    }

    // Assess
    expect(starts).toHaveLength(100);
    expect(busiestWindow(starts, 10_000)).toBe(20);
  });

  it('waits only until the oldest start leaves the window', async () => {
    // Prepare
    const time = steppingClock();
    const limiter = limiterOn(time, 3);
    await limiter.acquire(0);
    time.advance(2_000);
    await limiter.acquire(0);
    await limiter.acquire(0);

    // Act
    await limiter.acquire(15_000);

    // Assess
    expect(time.now()).toBe(T0 + 10_000);
  });

  it('never starts more than `limit` calls in any window, with 100 concurrent callers', async () => {
    // Prepare
    const time = virtualClock();
    const limiter = limiterOn(time, 20);
    const starts: number[] = [];

    // Act
    const calls = Promise.all(
      Array.from({ length: 100 }, () => limiter.acquire(120_000).then(() => starts.push(time.now()))),
    );
    await time.run();
    await calls;

    // Assess
    expect(starts).toHaveLength(100);
    expect(busiestWindow(starts, 10_000)).toBe(20);
    expect(Math.max(...starts)).toBe(T0 + 40_000);
  });

  it('rejects a call that cannot get a slot within maxWaitMs with 429 rate_limited and Retry-After, without waiting', async () => {
    // Prepare
    const time = steppingClock();
    const limiter = limiterOn(time, 2);
    await limiter.acquire(0);
    await limiter.acquire(0);

    // Act
    const error = await limiter.acquire(5_000).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(RateLimitedError);
    const limited = error as RateLimitedError;
    expect(limited.httpStatus).toBe(429);
    expect(limited.status).toBe(-1);
    expect(limited.code).toBe('rate_limited');
    expect(limited.headers).toEqual({ 'Retry-After': '10' });
    expect(time.sleeps).toEqual([]);
  });

  it('rounds Retry-After up to whole seconds, at least 1', async () => {
    // Prepare
    const time = steppingClock();
    const limiter = limiterOn(time, 1);
    await limiter.acquire(0);

    // Act
    time.advance(8_700);
    const in1300ms = await limiter.acquire(0).catch((e: unknown) => e);
    time.advance(1_250);
    const in50ms = await limiter.acquire(0).catch((e: unknown) => e);

    // Assess
    expect((in1300ms as RateLimitedError).headers['Retry-After']).toBe('2');
    expect((in50ms as RateLimitedError).headers['Retry-After']).toBe('1');
  });

  it('does not count a refused call against the window', async () => {
    // Prepare
    const time = steppingClock();
    const limiter = limiterOn(time, 2);
    await limiter.acquire(0);
    await limiter.acquire(0);
    await limiter.acquire(0).catch(() => undefined);
    await limiter.acquire(0).catch(() => undefined);

    // Act
    time.advance(10_000);
    await limiter.acquire(0);
    await limiter.acquire(0);

    // Assess
    expect(time.sleeps).toEqual([]);
    await expect(limiter.acquire(0)).rejects.toBeInstanceOf(RateLimitedError);
  });

  it('refuses concurrent callers whose wait would exceed maxWaitMs while the others get slots', async () => {
    // Prepare
    const time = virtualClock();
    const limiter = limiterOn(time, 5, 1_000);

    // Act
    const outcomes = Promise.allSettled(
      Array.from({ length: 20 }, () => limiter.acquire(2_500).then(() => time.now())),
    );
    await time.run();
    const settled = await outcomes;

    // Assess
    const started = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const refused = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason] : []));
    expect(started).toHaveLength(15);
    expect(busiestWindow(started, 1_000)).toBe(5);
    expect(Math.max(...started)).toBeLessThanOrEqual(T0 + 2_500);
    expect(refused).toHaveLength(5);
    for (const reason of refused) expect(reason).toBeInstanceOf(RateLimitedError);
  });

  it('keeps the reserved share for money calls and tokens: reads wait for the unreserved slots only', async () => {
    // Prepare
    const time = steppingClock();
    const limiter = new SlidingWindowLimiter({
      limit: 4,
      windowMs: 10_000,
      reserved: 1,
      now: time.now,
      sleep: time.sleep,
    });
    for (let i = 0; i < 3; i++) await limiter.acquire(0, 'read');

    // Act
    const read = await limiter.acquire(5_000, 'read').catch((e: unknown) => e);
    await limiter.acquire(0, 'money');
    const token = await limiter.acquire(5_000, 'token').catch((e: unknown) => e);

    // Assess
    expect(read).toBeInstanceOf(RateLimitedError);
    expect(token).toBeInstanceOf(RateLimitedError);
    expect(time.sleeps).toEqual([]);
  });

  it('keeps a customer’s charge (no reserve) to the unreserved slots, and keeps reads off the slot it waits for', async () => {
    // Prepare: 2 per window, 1 reserved: one slot for reads and customers' charges, taken by a read.
    const time = virtualClock();
    const limiter = new SlidingWindowLimiter({
      limit: 2,
      windowMs: 10_000,
      reserved: 1,
      now: time.now,
      sleep: time.sleep,
    });
    await limiter.acquire(0, 'read');
    const at: Record<string, number> = {};
    const note = (name: string) => (outcome: unknown) => {
      at[name] = outcome instanceof Error ? -1 : time.now();
    };

    // Act: a read waits for that slot first, then a customer's charge that may not take the reserve.
    const read = limiter.acquire(25_000, 'read').then(note('read'), note('read'));
    const charge = limiter.acquire(15_000, 'money', false).then(note('charge'), note('charge'));
    await time.run();
    await Promise.all([read, charge]);

    // Assess: the charge left the reserved slot alone and took the other when it freed, though the
    // read asked first; the read took the next, within its deadline.
    expect(at).toEqual({ charge: T0 + 10_000, read: T0 + 20_000 });
  });

  it('leaves the live reserve to live calls: idle work stops short of it', async () => {
    // Prepare: 4 per window, 1 reserved, and as large a live reserve.
    const time = steppingClock();
    const limiter = new SlidingWindowLimiter({
      limit: 4,
      windowMs: 10_000,
      reserved: 1,
      now: time.now,
      sleep: time.sleep,
    });
    for (let i = 0; i < 3; i++) await limiter.acquire(0, 'idle');

    // Act
    const idle = await limiter.acquire(5_000, 'idle').catch((e: unknown) => e);
    await limiter.acquire(0, 'money');

    // Assess
    expect(idle).toBeInstanceOf(RateLimitedError);
    expect(time.sleeps).toEqual([]);
  });

  it('starts nothing while paused after a 429, and refuses callers that cannot wait for the pause to end', async () => {
    // Prepare
    const time = steppingClock();
    const limiter = limiterOn(time, 20);
    limiter.pause(T0 + 4_000);

    // Act
    const hurried = await limiter.acquire(1_000).catch((e: unknown) => e);
    await limiter.acquire(5_000);

    // Assess
    expect((hurried as RateLimitedError).headers['Retry-After']).toBe('4');
    expect(time.now()).toBe(T0 + 4_000);
  });
});
