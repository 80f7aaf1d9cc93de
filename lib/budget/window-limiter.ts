import { RateLimitedError } from '../envelope/errors.ts';
import { countMetric, timeMetric } from '../log/metrics.ts';

/**
 * What a call to PayHere is, for the budget: money calls (charge, capture, refund, retry, cancel)
 * and token requests may use the reserved share, reads may not. `idle` is the service's own work
 * that can wait (the settle job, lib/budget/limiter.ts `idleWork`): it takes a slot only while the
 * live reserve stays free beside it.
 */
export type CallKind = 'read' | 'money' | 'token' | 'idle';

export interface RateLimitOptions {
  limit: number;
  windowMs: number;
  /** Slots of the window that only money calls and token requests may take (0 by default). */
  reserved?: number;
  /** Slots an `idle` call leaves free for live calls (the reserved share's size by default). */
  liveReserve?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** Resolves after `ms`, or at once when `signal` is aborted (its timer cleared). */
export const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * The refusal when no slot frees in time: 429 `rate_limited`, Retry-After in whole seconds (at
 * least 1). Counted for live calls only: idle work is refused at every run's end by design.
 */
export function budgetRefused(waitMs: number, kind?: CallKind): RateLimitedError {
  if (kind !== 'idle') countMetric('BudgetRefused');
  return new RateLimitedError(
    'Too many requests to the payment gateway right now; retry after a few seconds.',
    Math.max(1, Math.ceil(waitMs / 1000)),
  );
}

/** A live call got its slot after waiting: counted and timed (idle work waits by design). */
export function budgetWaited(waitedMs: number, kind?: CallKind): void {
  if (waitedMs <= 0 || kind === 'idle') return;
  countMetric('BudgetWait');
  timeMetric('BudgetWaitTime', waitedMs);
}

/**
 * PayHere allows 20 requests per 10 seconds per merchant. This sliding window keeps one container
 * under a limit of its own (the fallback share when the shared budget cannot be reached): past the
 * limit a call waits for a slot when its deadline allows, else fails fast.
 */
export class SlidingWindowLimiter {
  readonly #limit: number;
  readonly #reserved: number;
  readonly #liveReserve: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  /** Start times of the calls in the current window, oldest first. */
  readonly #starts: number[] = [];
  #pausedUntil = 0;
  /**
   * Until when (inclusive) a money call of the shared part waits for a slot here: reads take none
   * until it has, as in the shared budget (docs/budget.md "The reserve").
   */
  #moneyUntil = Number.NEGATIVE_INFINITY;

  constructor(options: RateLimitOptions) {
    this.#limit = options.limit;
    this.#reserved = Math.min(options.reserved ?? 0, options.limit - 1);
    this.#liveReserve = Math.min(options.liveReserve ?? this.#reserved, options.limit - 1);
    this.#windowMs = options.windowMs;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? defaultSleep;
  }

  /**
   * Take a slot, waiting at most `maxWaitMs` for one; a read leaves the reserved share alone, and so
   * does a money call that may not take it (`reserve` false: a customer's); idle work leaves the
   * live reserve. A money call of the shared part that waits keeps reads off the slot it waits for.
   */
  async acquire(maxWaitMs: number, kind: CallKind = 'money', reserve = true): Promise<void> {
    const askedAt = this.#now();
    const giveUpAt = askedAt + maxWaitMs;
    const sharedOnly = kind === 'read' || (kind === 'money' && !reserve);
    const limit = sharedOnly
      ? this.#limit - this.#reserved
      : kind === 'idle'
        ? this.#limit - this.#liveReserve
        : this.#limit;
    for (;;) {
      const now = this.#now();
      while (this.#starts.length > 0 && this.#starts[0]! <= now - this.#windowMs) this.#starts.shift();
      const yielding = kind === 'read' && this.#moneyUntil >= now;
      if (now >= this.#pausedUntil && !yielding && this.#starts.length < limit) {
        this.#starts.push(now);
        budgetWaited(now - askedAt, kind);
        return;
      }
      // The slot a read may take frees when the start `limit` places from the newest leaves.
      const slotFreeAt =
        this.#starts.length < limit ? now : this.#starts[this.#starts.length - limit]! + this.#windowMs;
      const freeAt = Math.max(slotFreeAt, this.#pausedUntil, kind === 'read' ? this.#moneyUntil + 1 : 0);
      if (freeAt >= giveUpAt) throw budgetRefused(freeAt - now, kind);
      if (kind === 'money' && sharedOnly) this.#moneyUntil = Math.max(this.#moneyUntil, freeAt);
      await this.#sleep(freeAt - now);
    }
  }

  /** PayHere answered 429: nothing starts before `until` (epoch ms on this limiter's clock). */
  pause(until: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, until);
  }
}
