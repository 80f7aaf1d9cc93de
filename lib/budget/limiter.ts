import { randomUUID } from 'node:crypto';
import { RateLimitedError } from '../envelope/errors.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import type { BudgetSnapshot, SharedStateTable } from './state-table.ts';
import {
  budgetRefused,
  budgetWaited,
  type CallKind,
  defaultSleep,
  type SlidingWindowLimiter,
} from './window-limiter.ts';

/** A slot taken for one request: released once its answer is in (or it failed), whatever the answer. */
export interface Permit {
  release(): Promise<void>;
  /** The request was never sent: the slot is as it was before it was taken (GatewayClient.reserve). */
  handBack(): Promise<void>;
}

/** What the gateway client asks of a budget. */
export interface GatewayLimiter {
  /** A slot for a call of `kind`, waiting at most `maxWaitMs`; else 429 `rate_limited` with Retry-After. */
  acquire(kind: CallKind, maxWaitMs: number): Promise<Permit>;
  /** PayHere answered 429: nobody sends for `ms`. */
  pause(ms: number): Promise<void>;
}

/** Less time than this left to send a request after getting its slot is not worth a slot. */
const MIN_SEND_MS = 50;

const NO_RELEASE: Permit = { release: async () => {}, handBack: async () => {} };

/** One container's own window (tests, and a gateway client built without a shared table). */
export class LocalLimiter implements GatewayLimiter {
  readonly #window: SlidingWindowLimiter;
  readonly #now: () => number;

  constructor(window: SlidingWindowLimiter, now: () => number = Date.now) {
    this.#window = window;
    this.#now = now;
  }

  async acquire(kind: CallKind, maxWaitMs: number): Promise<Permit> {
    await this.#window.acquire(maxWaitMs, kind);
    return NO_RELEASE;
  }

  async pause(ms: number): Promise<void> {
    this.#window.pause(this.#now() + ms);
  }
}

/**
 * The time kept between one request's arrival at PayHere and the next on the same slot, beyond the
 * window itself: clock skew between containers and the bytes of an abandoned request still on
 * the wire. 5% of the window, at least a quarter of a second.
 */
export function arrivalMargin(windowMs: number): number {
  return Math.max(250, Math.round(windowMs / 20));
}

/** The share of the budget only money calls and token requests may take: a quarter, at least one. */
export function reservedShare(limit: number): number {
  return Math.min(limit - 1, Math.max(1, Math.floor(limit / 4)));
}

export interface SharedLimiterOptions {
  table: SharedStateTable;
  limit: number;
  windowMs: number;
  /** The container's own share while the table cannot be reached (GATEWAY_RATE_LIMIT_FALLBACK). */
  fallback: SlidingWindowLimiter;
  marginMs?: number;
  reserved?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/**
 * `limit` requests per `windowMs` for the whole deployment, counted where PayHere counts: on
 * arrival. The budget is `limit` slots in the shared table. A request takes a free slot until its
 * deadline (the latest it can arrive) and, once answered, lowers that to when its answer came (it
 * certainly arrived before). A slot is free again a window plus a margin after that, so two
 * requests on one slot arrive at least a window apart, and no window holds more than `limit`
 * arrivals however late each request left after taking its slot (a TCP handshake, a slow table).
 *
 * When the table cannot be reached (slow, unreachable, failing), this container falls back to its
 * own small share for a window, logs it once and counts every call it serves that way.
 */
export class SharedLimiter implements GatewayLimiter {
  readonly #table: SharedStateTable;
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #marginMs: number;
  readonly #reserved: number;
  readonly #fallback: SlidingWindowLimiter;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;
  /** The budget as last seen: a guess of a free slot costs one conditional write, not a read. */
  #snapshot: BudgetSnapshot | undefined;
  #fallbackUntil = 0;
  /** The latest a request the table let through may reach PayHere, as far as this container saw. */
  #seenUntil = 0;
  /** This container found the table unreachable and has not reached it since. */
  #inOutage = false;
  /**
   * Callers of one container ask the table one at a time, reads apart from money and tokens: a
   * burst in one container is one client of the table, not a herd of them, and a read waiting for
   * a slot never holds up a charge that may take a reserved one.
   */
  readonly #turns: Record<'read' | 'reserved', Promise<void>> = {
    read: Promise.resolve(),
    reserved: Promise.resolve(),
  };

  constructor(options: SharedLimiterOptions) {
    this.#table = options.table;
    this.#limit = options.limit;
    this.#windowMs = options.windowMs;
    this.#marginMs = options.marginMs ?? arrivalMargin(options.windowMs);
    this.#reserved = options.reserved ?? reservedShare(options.limit);
    this.#fallback = options.fallback;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
  }

  async acquire(kind: CallKind, maxWaitMs: number): Promise<Permit> {
    const askedAt = this.#now();
    const giveUpAt = askedAt + maxWaitMs;
    if (this.#now() >= this.#fallbackUntil) {
      try {
        return (
          (await this.#inTurn(kind === 'read' ? 'read' : 'reserved', giveUpAt, () =>
            this.#now() < this.#fallbackUntil ? undefined : this.#shared(kind, askedAt, giveUpAt),
          )) ?? (await this.#fromFallback(kind, giveUpAt))
        );
      } catch (error) {
        if (error instanceof RateLimitedError) throw error;
        this.#fallBack(error);
      }
    }
    return this.#fromFallback(kind, giveUpAt);
  }

  async #fromFallback(kind: CallKind, giveUpAt: number): Promise<Permit> {
    await this.#fallback.acquire(giveUpAt - this.#now(), kind);
    countMetric('BudgetFallback');
    return NO_RELEASE;
  }

  /**
   * Run `work` once the callers of this container ahead of it in `queue` are done, or refuse at
   * `giveUpAt` (a caller behind one with a later deadline must not wait past its own).
   */
  async #inTurn<T>(
    queue: 'read' | 'reserved',
    giveUpAt: number,
    work: () => Promise<T> | undefined,
  ): Promise<T | undefined> {
    const ahead = this.#turns[queue];
    let done!: () => void;
    this.#turns[queue] = new Promise<void>((resolve) => {
      done = resolve;
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), Math.max(0, giveUpAt - this.#now()));
    });
    try {
      if ((await Promise.race([ahead, late])) === 'late') throw budgetRefused(this.#windowMs);
      clearTimeout(timer);
      return await work();
    } finally {
      clearTimeout(timer);
      done();
    }
  }

  async pause(ms: number): Promise<void> {
    const until = this.#now() + ms;
    this.#fallback.pause(until);
    if (this.#snapshot) this.#snapshot.pausedUntil = Math.max(this.#snapshot.pausedUntil, until);
    try {
      await this.#table.pause(until, this.#now());
    } catch (error) {
      this.#fallBack(error);
    }
  }

  async #shared(kind: CallKind, askedAt: number, giveUpAt: number): Promise<Permit> {
    // A container that has not seen the budget yet guesses that every slot is free: its first
    // slot's write either succeeds or fails, and shows it the budget either way (one round trip,
    // where reading the budget first made two); a warm container whose view was stale learns the
    // same way.
    let snapshot = this.#snapshot ?? {
      busyUntil: new Map<number, number>(),
      takenBy: new Map<number, string>(),
      pausedUntil: 0,
    };
    for (;;) {
      const now = this.#now();
      // A slot with no time left to send on is no use: the caller hears 429 now, not a timeout later.
      if (now > giveUpAt || (giveUpAt > askedAt && giveUpAt - now < MIN_SEND_MS)) {
        throw budgetRefused(this.#windowMs);
      }
      const freeBefore = now - this.#windowMs - this.#marginMs;
      const slot = snapshot.pausedUntil <= now ? this.#freeSlot(snapshot, kind, freeBefore) : undefined;
      if (slot !== undefined) {
        // The take's own name on the slot: a retry of a write whose answer was lost knows it.
        const take = randomUUID();
        const busyUntil = giveUpAt;
        const taken = await this.#table.takeSlot(slot, busyUntil, freeBefore, now, take);
        if (taken.taken) {
          this.#snapshot = this.#saw(taken.budget);
          budgetWaited(now - askedAt);
          return this.#permit(slot, busyUntil, taken.previous);
        }
        // Another container was first: its refusal showed the budget, unless the table keeps it to
        // itself (then it is read).
        snapshot = this.#saw(taken.budget ?? (await this.#table.readBudget()));
        this.#snapshot = snapshot;
        // Or the refusal met this take's own write, retried after its answer was lost: the slot is ours.
        if (snapshot.takenBy.get(slot) === take) {
          budgetWaited(now - askedAt);
          return this.#permit(slot, busyUntil, undefined);
        }
        continue;
      }
      const freeAt = Math.max(snapshot.pausedUntil, this.#earliestFree(snapshot, kind, now));
      if (freeAt >= giveUpAt) {
        this.#snapshot = snapshot;
        throw budgetRefused(freeAt - now);
      }
      // A little jitter, so that the containers waiting for one slot do not all ask at once.
      await this.#sleep(freeAt - now + Math.floor(this.#random() * 20));
      snapshot = this.#saw(await this.#table.readBudget());
      this.#snapshot = snapshot;
    }
  }

  /** The table answered: note how late the requests it let through may still arrive. */
  #saw(snapshot: BudgetSnapshot): BudgetSnapshot {
    this.#inOutage = false;
    let latest = this.#now();
    for (const until of snapshot.busyUntil.values()) latest = Math.max(latest, until);
    this.#seenUntil = Math.max(this.#seenUntil, latest);
    return snapshot;
  }

  #permit(slot: number, busyUntil: number, previous: number | undefined): Permit {
    return {
      handBack: async () => {
        if (this.#snapshot?.busyUntil.get(slot) === busyUntil) {
          if (previous === undefined) this.#snapshot.busyUntil.delete(slot);
          else this.#snapshot.busyUntil.set(slot, previous);
        }
        try {
          await this.#table.handBackSlot(slot, busyUntil, previous);
        } catch (error) {
          // The slot stays taken until the request's deadline: later than needed, never too early.
          log.debug('could not hand back an unused budget slot', { error: describeError(error) });
        }
      },
      release: async () => {
        const doneAt = this.#now();
        this.#snapshot?.busyUntil.set(slot, doneAt);
        try {
          await this.#table.releaseSlot(slot, busyUntil, doneAt);
        } catch (error) {
          // The slot stays taken until the request's deadline: later than needed, never too early.
          log.debug('could not release a budget slot', { error: describeError(error) });
        }
      },
    };
  }

  /** The slots `kind` may take: reads the shared part only; money and tokens that first, then the reserve. */
  #ranges(kind: CallKind): Array<[number, number]> {
    const shared: [number, number] = [this.#reserved, this.#limit];
    return kind === 'read' ? [shared] : [shared, [0, this.#reserved]];
  }

  /** A free slot, from a random place in each range so that containers rarely pick the same one. */
  #freeSlot(snapshot: BudgetSnapshot, kind: CallKind, freeBefore: number): number | undefined {
    for (const [from, to] of this.#ranges(kind)) {
      const size = to - from;
      const start = Math.floor(this.#random() * size);
      for (let i = 0; i < size; i++) {
        const slot = from + ((start + i) % size);
        if ((snapshot.busyUntil.get(slot) ?? Number.NEGATIVE_INFINITY) <= freeBefore) return slot;
      }
    }
    return undefined;
  }

  /** When a slot `kind` may take frees; a request still in flight is expected to be answered soon. */
  #earliestFree(snapshot: BudgetSnapshot, kind: CallKind, now: number): number {
    let earliest = Number.POSITIVE_INFINITY;
    for (const [from, to] of this.#ranges(kind)) {
      for (let slot = from; slot < to; slot++) {
        const busyUntil = Math.min(snapshot.busyUntil.get(slot) ?? 0, now);
        earliest = Math.min(earliest, busyUntil + this.#windowMs + this.#marginMs);
      }
    }
    return earliest;
  }

  /**
   * The table failed. The container's own share opens only once every request the table may have
   * let through (until now, by any container, and until the deadlines of those this container saw
   * in flight) is a window and the margin old: so that when the table fails for every container,
   * no window at PayHere holds shared and fallback arrivals together, and the containers' shares
   * alone stay within the limit. Once per outage: while the table stays unreachable it lets
   * nothing through.
   */
  #fallBack(error: unknown): void {
    const now = this.#now();
    if (!this.#inOutage) {
      this.#inOutage = true;
      this.#fallback.pause(Math.max(this.#seenUntil, now) + this.#windowMs + this.#marginMs);
    }
    if (now >= this.#fallbackUntil) {
      log.warn('the shared budget table cannot be reached: this container uses its own fallback share', {
        error: describeError(error),
        retryTableInMs: this.#windowMs,
      });
    }
    this.#fallbackUntil = now + this.#windowMs;
    this.#snapshot = undefined;
  }
}
