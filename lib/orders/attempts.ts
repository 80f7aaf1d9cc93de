/**
 * Card testing's count of failed attempts (ORDER_FAILED_ATTEMPTS, `limit` per `windowMs`): an
 * order's declined charges, a customer's declined pre-approvals. The count is kept in fixed
 * windows, each failure counted in the window it happened in and in the next one, so that a
 * window's count is its own failures and the previous window's: a new attempt is allowed only
 * while that count is below the limit, so no span of `windowMs` holds more than `limit` failures.
 * A count of each window's own failures alone would let `limit` through at the end of one window
 * and `limit` more at the start of the next.
 */
export class AttemptWindows {
  readonly #windowMs: number;
  readonly #now: () => number;

  constructor(windowMs: number, now: () => number = () => Date.now()) {
    this.#windowMs = windowMs;
    this.#now = now;
  }

  /** The window an attempt made now is checked against. */
  current(): number {
    return Math.floor(this.#now() / this.#windowMs);
  }

  /** The windows a failure now counts in: this one and the next. */
  failureWindows(): [number, number] {
    const window = this.current();
    return [window, window + 1];
  }

  /**
   * Epoch ms from which an attempt is allowed again, given the counts per window: the start of the
   * first window from this one whose count is below `limit` (the next window counts this one's
   * failures, the one after it none yet).
   */
  allowedFrom(counts: Readonly<Record<number, number>>, limit: number): number {
    let window = this.current();
    while ((counts[window] ?? 0) >= limit) window++;
    return window * this.#windowMs;
  }

  /**
   * The windows of `counts` before this one: no attempt from now on is checked against them, so a
   * failure's write drops them (an order or a customer failing for months keeps two windows'
   * counts, not one per window that ever had a failure).
   */
  stale(counts: Readonly<Record<number, number>>): number[] {
    const current = this.current();
    return Object.keys(counts)
      .map(Number)
      .filter((window) => window < current);
  }

  /**
   * Whether a failure now would change no decision: both windows it counts in hold `limit` already.
   * Counting it would only grow the count (a signed notification replayed with new unsigned ids).
   */
  atLimit(counts: Readonly<Record<number, number>>, limit: number): boolean {
    return this.failureWindows().every((window) => (counts[window] ?? 0) >= limit);
  }

  /** Whole seconds until `allowedFrom`, at least 1 (a Retry-After). */
  retryAfterSeconds(counts: Readonly<Record<number, number>>, limit: number): number {
    return Math.max(1, Math.ceil((this.allowedFrom(counts, limit) - this.#now()) / 1000));
  }
}
