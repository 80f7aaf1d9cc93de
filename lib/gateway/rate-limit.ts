import { RateLimitedError } from '../envelope/errors.ts';
import { countMetric, timeMetric } from '../log/metrics.ts';

export interface RateLimitOptions {
  limit: number;
  windowMs: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * PayHere allows 20 requests per 10 seconds per merchant. This sliding window keeps one container
 * under it: past the limit a call waits for a slot when its deadline allows, else fails fast.
 */
export class SlidingWindowLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  /** Start times of the calls in the current window, oldest first (reserved slots included). */
  readonly #starts: number[] = [];

  constructor(options: RateLimitOptions) {
    this.#limit = options.limit;
    this.#windowMs = options.windowMs;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? defaultSleep;
  }

  /** Take a slot, waiting at most `maxWaitMs` for one. */
  async acquire(maxWaitMs: number): Promise<void> {
    const askedAt = this.#now();
    const giveUpAt = askedAt + maxWaitMs;
    for (;;) {
      const now = this.#now();
      while (this.#starts.length > 0 && this.#starts[0]! <= now - this.#windowMs) this.#starts.shift();
      if (this.#starts.length < this.#limit) {
        this.#starts.push(now);
        if (now > askedAt) {
          countMetric('BudgetWait');
          timeMetric('BudgetWaitTime', now - askedAt);
        }
        return;
      }
      const freeAt = this.#starts[0]! + this.#windowMs;
      if (freeAt >= giveUpAt) {
        countMetric('BudgetRefused');
        throw new RateLimitedError(
          'Too many requests to the payment gateway right now; retry after a few seconds.',
          Math.max(1, Math.ceil((freeAt - now) / 1000)),
        );
      }
      await this.#sleep(freeAt - now);
    }
  }
}
