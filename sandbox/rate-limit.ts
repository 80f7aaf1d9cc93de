// PayHere's limit: N requests per window over all Merchant API endpoints, as a sliding window.
export interface RateLimitOptions {
  limit: number;
  windowMs: number;
}

export type Admission = { admitted: true } | { admitted: false; retryAfterSeconds: number };

export class SlidingWindowLimiter {
  readonly #options: RateLimitOptions;
  readonly #now: () => number;
  // Times of admitted requests only: a rejected request must not extend the block.
  #admittedAt: number[] = [];

  constructor(options: RateLimitOptions, now: () => number) {
    this.#options = options;
    this.#now = now;
  }

  admit(): Admission {
    const now = this.#now();
    const windowStart = now - this.#options.windowMs;
    this.#admittedAt = this.#admittedAt.filter((time) => time > windowStart);
    if (this.#admittedAt.length < this.#options.limit) {
      this.#admittedAt.push(now);
      return { admitted: true };
    }
    // A slot frees when the oldest admitted request leaves the window.
    const oldest = this.#admittedAt[0] ?? now;
    const waitMs = oldest + this.#options.windowMs - now;
    return { admitted: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
  }

  clear(): void {
    this.#admittedAt = [];
  }
}
