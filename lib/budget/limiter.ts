import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { isThrottlingError } from '../aws/retry.ts';
import { RateLimitedError } from '../envelope/errors.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import { inBackground } from '../net/background.ts';
import { fullJitterMs } from '../net/backoff.ts';
import type { BudgetSnapshot, SharedStateTable, WaitMark } from './state-table.ts';
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

/** What a call is beside its kind. */
export interface AcquireOptions {
  /**
   * A call beyond its caller's share: it takes a slot of the shared part only, and only while no
   * call within a share, nor a money call, waits for one (docs/budget.md "Each caller's share").
   */
  spare?: boolean;
  /**
   * Whether a money call or a token request may take the reserved share (true by default): a
   * customer's money call (and what a notification makes the service ask) may not; it takes the
   * shared part only, where reads still yield to it. Reads never take the reserve.
   */
  reserve?: boolean;
  /**
   * Aborted when the call will not be made after all (a reservation whose read was found shared):
   * the call stops waiting for a slot, and takes none it has not taken yet. Its place in the
   * container's queue goes to the next call at once.
   */
  signal?: AbortSignal;
}

/** What the gateway client asks of a budget. */
export interface GatewayLimiter {
  /**
   * A slot for a call of `kind`, waiting at most `maxWaitMs`; else 429 `rate_limited` with
   * Retry-After.
   */
  acquire(kind: CallKind, maxWaitMs: number, options?: AcquireOptions): Promise<Permit>;
  /** PayHere answered 429: nobody sends for `ms`. */
  pause(ms: number): Promise<void>;
}

/** Less time than this left to send a request after getting its slot is not worth a slot. */
const MIN_SEND_MS = 50;
/** The live reserve's slots an idle take names in its conditional write, at most. */
const MAX_NAMED_KEEP = 16;
/**
 * The slots idle work leaves free while no live call has taken one for a window and its margin:
 * the next live call's, taken at once. That take ends the quiet spell, and idle work then takes
 * nothing until the whole live reserve is free again.
 */
const QUIET_LIVE_RESERVE = 1;
/**
 * How long after the slot it waits for frees a call within its caller's share keeps spare calls
 * away (and a waiting money call reads): its own wake-up jitter and two table round trips (a read
 * of the budget, its take).
 */
const OWED_SLACK_MS = 500;

/**
 * A call whose request to the table failed (late, refused, no answer) tries once more, this long
 * at most after it (jittered): one slow request costs that request, not the container's next window.
 */
const RETRY_TABLE_MS = 200;
/** Tries of the table per call while the container's own share is not open yet. */
const TRIES_BEFORE_SHARE = 2;
/** Once its own share serves (the table failed for a window), a container tries the table this often. */
const PROBE_TABLE_MS = 1_000;
/** The longest pause between two tries of a table that throttles (full jitter below it). */
const MAX_THROTTLED_PAUSE_MS = 1_000;

/**
 * Containers waiting for one slot wake spread over this much after it frees, not all within a few
 * milliseconds: each wake-up reads the budget item and may write it, and one item takes 1,000
 * writes and 3,000 reads a second. The simulation of 500 containers (npm run bench, "The budget
 * at scale") asked the table 25% less, and was throttled 3 times less where throttling began,
 * than with 20 ms.
 */
const WAKE_SPREAD_MS = 250;
const NO_RELEASE: Permit = { release: async () => {}, handBack: async () => {} };

/**
 * Work of the service's own that can wait for the budget live calls leave (the settle job). Every
 * PayHere call made inside `idleWork.run(work, ...)`, a token request included, takes its slot as
 * `idle`, whatever it is, and waits for one no later than `until`; one refused marks `refused`, so
 * that the work knows it was cut short by its own bounds rather than answered by PayHere.
 */
export interface IdleWork {
  /** Epoch ms on the limiter's clock. */
  until: number;
  refused: boolean;
}

export const idleWork = new AsyncLocalStorage<IdleWork>();

/**
 * `acquire` for the call being made: as idle work inside `idleWork.run`, else as `kind` (at no
 * cost to a live call: no promise of its own). A token request is never idle work, wherever it is
 * made: the container making it holds the deployment's token lease, and every live call waits for
 * the token it brings.
 */
function acquireAs(
  kind: CallKind,
  maxWaitMs: number,
  now: () => number,
  acquire: (kind: CallKind, maxWaitMs: number, options: AcquireOptions) => Promise<Permit>,
  options: AcquireOptions = {},
): Promise<Permit> {
  const work = idleWork.getStore();
  if (!work || kind === 'token') return acquire(kind, maxWaitMs, options);
  const idle = options.signal ? { signal: options.signal } : {};
  return acquire('idle', Math.min(maxWaitMs, work.until - now()), idle).catch((error: unknown) => {
    if (error instanceof RateLimitedError) work.refused = true;
    throw error;
  });
}

/**
 * One container's own window (tests, and a gateway client built without a shared table): a call
 * beyond its caller's share takes a slot as any other, there being no other container to yield to.
 */
export class LocalLimiter implements GatewayLimiter {
  readonly #window: SlidingWindowLimiter;
  readonly #now: () => number;

  constructor(window: SlidingWindowLimiter, now: () => number = Date.now) {
    this.#window = window;
    this.#now = now;
  }

  acquire(kind: CallKind, maxWaitMs: number, options: AcquireOptions = {}): Promise<Permit> {
    return acquireAs(
      kind,
      maxWaitMs,
      this.#now,
      async (as, waitMs, { reserve }) => {
        await this.#window.acquire(waitMs, as, reserve);
        return NO_RELEASE;
      },
      options,
    );
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
  /**
   * The container's own share while the table cannot be reached (GATEWAY_RATE_LIMIT_FALLBACK);
   * none: a call waits for the table within its deadline, else 429.
   */
  fallback?: SlidingWindowLimiter;
  /**
   * Slots of `limit` the table never gives out, kept for the containers' own shares: with every
   * container's share within them (GATEWAY_FALLBACK_CONTAINERS × its share), a share opens as soon
   * as the table fails, whoever else still reaches it. 0: the table gives out every slot, and a
   * share opens only a window and the margin after the failure (safe only when the table fails for
   * every container at once).
   */
  fallbackSlots?: number;
  marginMs?: number;
  reserved?: number;
  /** Slots of the shared part idle work leaves free for live calls; as many as `reserved` by default. */
  liveReserve?: number;
  now?: () => number;
  /** Resolves after `ms`; it may end early once `signal` is aborted (the limiter stops waiting then anyway). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
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
 *
 * Idle work (the settle job) takes a slot only while, beside it, `liveReserve` slots of the shared
 * part are free, in the same conditional write: a slot any live call may take, a read as much as a
 * charge. It takes the reserved part first, which reads cannot use anyway; so during a backlog
 * live calls still find the live reserve free, and every slot the job frees that live calls took
 * meanwhile stays theirs until the reserve is whole again.
 *
 * While no live call has taken a slot for a window and its margin (`liveAt`, which every live take
 * sets), the budget is idle, and idle work may borrow the live reserve but QUIET_LIVE_RESERVE
 * slots: each such take is on the condition, in its write, that no live take came since. So the
 * next live call takes a slot at once, and the live reserve is whole again from then on: the job
 * takes nothing more until it is. A live call right behind the first waits for the next slot the
 * job frees, never racing the job for it; and since idle work takes at most one slot per window
 * and margin's share of the budget (525 ms of PayHere's 20 per 10 s), the slots it holds free one
 * at a time, never together: that wait is about half a second, a little over a second at most.
 *
 * A spare call (beyond its caller's share, lib/budget/caller-shares.ts) takes a slot of the shared
 * part only while no call within a share waits for one: such a call marks the budget (`owedUntil`)
 * before it sleeps when spare calls may be waiting too (they mark `spareUntil`), and a spare take
 * checks the mark in its conditional write. So a caller alone uses every slot nobody else wants,
 * and callers within their shares come first when they want them.
 *
 * Reads yield to money. A money call that may not take the reserve (a customer's) takes slots of
 * the shared part, where reads take theirs; one about to wait for a slot of the shared part marks
 * the budget (`moneyUntil`: when that slot frees, plus the same slack), and a read neither takes a
 * slot while the mark runs, checked in its conditional write, nor counts on one before it ends. So
 * customers reading within their shares cannot together hold every slot a customer's charge needs.
 * Spare calls yield to the mark too; token requests and idle work do not look at it. A money call
 * that does not wait writes nothing more; a mark lost (the table throttled or failed it) only lets
 * a read go first once, and no take depends on it for the limit.
 */
export class SharedLimiter implements GatewayLimiter {
  readonly #table: SharedStateTable;
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #marginMs: number;
  readonly #reserved: number;
  readonly #liveReserve: number;
  /** What idle work leaves free of the shared part in a quiet spell. */
  readonly #quietReserve: number;
  /** Idle work's pace: a slot per window and margin's share of the budget. */
  readonly #idleSpacingMs: number;
  /** When this container's idle work may take its next slot (two runs at once pace themselves each). */
  #idlePacedUntil = 0;
  readonly #fallback: SlidingWindowLimiter | undefined;
  readonly #fallbackSlots: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #random: () => number;
  /** The budget as last seen: a guess of a free slot costs one conditional write, not a read. */
  #snapshot: BudgetSnapshot | undefined;
  /** When the table first failed this container since it last answered; undefined while it answers. */
  #failingSince: number | undefined;
  /** When this container's own share opens in the current failure. */
  #shareOpensAt = 0;
  /** The last try of the table while it failed. */
  #probedAt = Number.NEGATIVE_INFINITY;
  /** The last warning that the table failed: one a window. */
  #warnedAt = Number.NEGATIVE_INFINITY;
  /** The latest a request the table let through may reach PayHere, as far as this container saw. */
  #seenUntil = 0;
  /**
   * Callers of one container ask the table one at a time in each queue (queueOf): a burst in one
   * container is one client of the table, not a herd of them, and a read waiting for a slot never
   * holds up a charge that may take a reserved one, nor does a customer's charge waiting for a
   * slot of the shared part, and no call holds up a token request.
   */
  readonly #turns: Record<Queue, Promise<void>> = {
    read: Promise.resolve(),
    reserved: Promise.resolve(),
    shared: Promise.resolve(),
    idle: Promise.resolve(),
    spare: Promise.resolve(),
    token: Promise.resolve(),
  };

  constructor(options: SharedLimiterOptions) {
    this.#table = options.table;
    this.#fallback = options.fallback;
    this.#fallbackSlots = options.fallback ? Math.max(0, options.fallbackSlots ?? 0) : 0;
    // What the table gives out: the budget less the containers' own shares' part.
    this.#limit = options.limit - this.#fallbackSlots;
    if (this.#limit < 1) throw new RangeError('the containers’ own shares must leave the table a slot');
    this.#windowMs = options.windowMs;
    this.#marginMs = options.marginMs ?? arrivalMargin(options.windowMs);
    this.#reserved = options.reserved ?? reservedShare(this.#limit);
    // The shared part keeps at least one slot for idle work to take, or the job could never run.
    this.#liveReserve = Math.max(
      0,
      Math.min(options.liveReserve ?? this.#reserved, this.#limit - this.#reserved - 1),
    );
    this.#quietReserve = Math.min(QUIET_LIVE_RESERVE, this.#liveReserve);
    this.#idleSpacingMs = Math.ceil((this.#windowMs + this.#marginMs) / this.#limit);
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
  }

  acquire(kind: CallKind, maxWaitMs: number, options: AcquireOptions = {}): Promise<Permit> {
    return acquireAs(
      kind,
      maxWaitMs,
      this.#now,
      (as, waitMs, { spare = false, reserve = true, signal }) =>
        this.#acquire(as, waitMs, {
          spare,
          reserve: reserve && !spare && (as === 'money' || as === 'token'),
          signal,
        }),
      options,
    );
  }

  async #acquire(kind: CallKind, maxWaitMs: number, call: Call): Promise<Permit> {
    const askedAt = this.#now();
    const giveUpAt = askedAt + maxWaitMs;
    let failed = 0;
    let throttled = 0;
    for (;;) {
      const now = this.#now();
      call.signal?.throwIfAborted();
      if (!this.#mayTryTable(now, failed)) return this.#fromFallback(kind, giveUpAt, call);
      if (this.#failingSince !== undefined) this.#probedAt = now;
      try {
        return (
          (await this.#inTurn(queueOf(kind, call), giveUpAt, call.signal, () =>
            this.#shared(kind, askedAt, giveUpAt, call),
          )) ?? (await this.#fromFallback(kind, giveUpAt, call))
        );
      } catch (error) {
        if (error instanceof RateLimitedError || call.signal?.aborted) throw error;
        if (isThrottlingError(error)) {
          // The table is there, only busy: the call waits and asks again within its deadline. A
          // throttled container never takes its own share, so throttling never adds arrivals.
          const pauseMs = fullJitterMs(throttled++, this.#random, MAX_THROTTLED_PAUSE_MS);
          if (this.#now() + pauseMs + MIN_SEND_MS >= giveUpAt) throw budgetRefused(pauseMs, kind);
          await this.#sleepFor(pauseMs, call);
          continue;
        }
        this.#fallBack(error);
        failed++;
        if (!this.#fallback) {
          // No share of its own: the call asks the table again, paced, until its deadline.
          const pauseMs = fullJitterMs(failed, this.#random, MAX_THROTTLED_PAUSE_MS);
          if (this.#now() + pauseMs + MIN_SEND_MS >= giveUpAt) throw budgetRefused(PROBE_TABLE_MS, kind);
          await this.#sleepFor(pauseMs, call);
        } else if (failed < TRIES_BEFORE_SHARE && !this.#shareOpen(this.#now())) {
          const pauseMs = Math.floor(this.#random() * RETRY_TABLE_MS);
          if (this.#now() + pauseMs + MIN_SEND_MS < giveUpAt) await this.#sleepFor(pauseMs, call);
        }
      }
    }
  }

  /**
   * Whether this call asks the table (again): always while the table answers; after a failure, a
   * call tries it at most TRIES_BEFORE_SHARE times until the container's own share opens, and once
   * that share serves, one call a PROBE_TABLE_MS does.
   */
  #mayTryTable(now: number, failed: number): boolean {
    if (this.#failingSince === undefined || !this.#fallback) return true;
    if (!this.#shareOpen(now)) return failed < TRIES_BEFORE_SHARE;
    return failed === 0 && now - this.#probedAt >= PROBE_TABLE_MS;
  }

  #shareOpen(now: number): boolean {
    return this.#failingSince !== undefined && now >= this.#shareOpensAt;
  }

  async #fromFallback(kind: CallKind, giveUpAt: number, call: Call): Promise<Permit> {
    // A container's own share is what its live calls may need; idle work waits for the table.
    if (kind === 'idle' || !this.#fallback)
      throw budgetRefused(Math.max(PROBE_TABLE_MS, this.#shareOpensAt - this.#now()), kind);
    await this.#fallback.acquire(giveUpAt - this.#now(), kind, call.reserve);
    countMetric('BudgetFallback');
    return NO_RELEASE;
  }

  /**
   * Run `work` once the callers of this container ahead of it in `queue` are done, or refuse at
   * `giveUpAt` (a caller behind one with a later deadline must not wait past its own).
   */
  async #inTurn<T>(
    queue: Queue,
    giveUpAt: number,
    signal: AbortSignal | undefined,
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
    let ours = false;
    try {
      const turn = await this.#unlessAborted(Promise.race([ahead, late]), signal);
      if (turn === 'late') throw budgetRefused(this.#windowMs, queue === 'idle' ? 'idle' : undefined);
      clearTimeout(timer);
      ours = true;
      return await work();
    } finally {
      clearTimeout(timer);
      // Left before its turn (late, or no longer wanted): the caller behind it still waits for the
      // one ahead, so that the container asks the table one call at a time.
      if (ours) done();
      else void ahead.then(done);
    }
  }

  /** `waiting`, or the abort's reason as soon as `signal` is aborted. */
  async #unlessAborted<T>(waiting: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    if (!signal) return waiting;
    signal.throwIfAborted();
    let stop!: () => void;
    const aborted = new Promise<never>((_, reject) => {
      stop = () => reject(signal.reason);
      signal.addEventListener('abort', stop, { once: true });
    });
    try {
      const value = await Promise.race([waiting, aborted]);
      signal.throwIfAborted();
      return value;
    } finally {
      signal.removeEventListener('abort', stop);
    }
  }

  /** Asleep `ms`, or until the call is no longer wanted. */
  #sleepFor(ms: number, call: Call): Promise<void> {
    return this.#unlessAborted(this.#sleep(ms, call.signal), call.signal);
  }

  async pause(ms: number): Promise<void> {
    const until = this.#now() + ms;
    this.#fallback?.pause(until);
    if (this.#snapshot) this.#snapshot.pausedUntil = Math.max(this.#snapshot.pausedUntil, until);
    try {
      await this.#table.pause(until, this.#now());
    } catch (error) {
      this.#fallBack(error);
    }
  }

  async #shared(kind: CallKind, askedAt: number, giveUpAt: number, call: Call): Promise<Permit> {
    const { spare } = call;
    // What this call leaves the slots that free to: every call to a token request (without the
    // token nothing reaches PayHere), a spare call to calls within a share and to money calls, a
    // read to money calls (each marks when it waits; a lapsed mark holds nobody).
    const yieldTo = yieldsTo(kind, spare);
    const heldUntil = (budget: BudgetSnapshot) => Math.max(0, ...yieldTo.map((mark) => markOf(budget, mark)));
    // A container that has not seen the budget yet guesses that every slot is free: its first
    // slot's write either succeeds or fails, and shows it the budget either way (one round trip,
    // where reading the budget first made two); a warm container whose view was stale learns the
    // same way.
    let snapshot = this.#snapshot ?? {
      busyUntil: new Map<number, number>(),
      takenBy: new Map<number, string>(),
      pausedUntil: 0,
      owedUntil: 0,
      spareUntil: 0,
      moneyUntil: 0,
      tokenUntil: 0,
      liveAt: 0,
    };
    // A wait the budget caused is one spent asleep for a slot, not the scheduling of the call itself.
    let slept = false;
    for (;;) {
      // A call no longer wanted takes no slot.
      call.signal?.throwIfAborted();
      const now = this.#now();
      // A slot with no time left to send on is no use: the caller hears 429 now, not a timeout later.
      if (now > giveUpAt || (giveUpAt > askedAt && giveUpAt - now < MIN_SEND_MS)) {
        throw budgetRefused(this.#windowMs, kind);
      }
      const freeBefore = now - this.#windowMs - this.#marginMs;
      const paced = kind === 'idle' ? this.#idlePacedUntil : 0;
      const open = snapshot.pausedUntil <= now && heldUntil(snapshot) <= now && paced <= now;
      const free = open ? this.#freeSlot(snapshot, kind, freeBefore, call) : undefined;
      if (free !== undefined) {
        const { slot, keep, quietBefore } = free;
        // The take's own name on the slot: a retry of a write whose answer was lost knows it.
        const take = randomUUID();
        const busyUntil = giveUpAt;
        // A token request's take ends its own mark: the calls waiting for the token go on at once.
        const taken = await this.#table
          .takeSlot(slot, busyUntil, freeBefore, now, take, keep, yieldTo, {
            ends: kind === 'token' ? 'token' : undefined,
            live: kind !== 'idle',
            quietBefore,
          })
          .catch((error: unknown) => {
            // Every try's answer lost, the write perhaps applied: the slot would stay busy, used by
            // nobody, until the call's deadline and a window after. A throttled write was not applied.
            if (!isThrottlingError(error)) inBackground(() => this.#dropTake(slot, busyUntil, take));
            throw error;
          });
        if (taken.taken) {
          this.#snapshot = this.#saw(taken.budget);
          if (kind === 'idle') this.#idlePacedUntil = now + this.#idleSpacingMs;
          budgetWaited(slept ? now - askedAt : 0, kind);
          return this.#permit(slot, busyUntil, taken.previous);
        }
        // Another container was first: its refusal showed the budget, unless the table keeps it to
        // itself (then it is read).
        snapshot = this.#saw(taken.budget ?? (await this.#table.readBudget()));
        this.#snapshot = snapshot;
        // Or the refusal met this take's own write, retried after its answer was lost: the slot is ours.
        if (snapshot.takenBy.get(slot) === take) {
          if (kind === 'idle') this.#idlePacedUntil = now + this.#idleSpacingMs;
          budgetWaited(slept ? now - askedAt : 0, kind);
          return this.#permit(slot, busyUntil, undefined);
        }
        continue;
      }
      const earliest = this.#earliestFree(snapshot, kind, now, call);
      const budgetFreeAt = Math.max(snapshot.pausedUntil, heldUntil(snapshot), earliest);
      const freeAt = Math.max(budgetFreeAt, paced);
      if (freeAt >= giveUpAt) {
        this.#snapshot = snapshot;
        throw budgetRefused(freeAt - now, kind);
      }
      // A spare call about to wait says so; a call within its caller's share about to wait while
      // spare calls may be waiting too marks that they leave it the slot that frees. A money call
      // about to wait for a slot of the shared part marks that reads (and spare calls) leave it
      // that slot. Where nobody marks, waiting costs the table nothing more than it did.
      if (spare && snapshot.spareUntil < giveUpAt) await this.#markWaiting('spare', giveUpAt, now);
      const markUntil = freeAt + OWED_SLACK_MS;
      const moneyForShared =
        kind === 'money' &&
        !spare &&
        this.#earliestFree(snapshot, 'read', now, { spare: false, reserve: false }) <= earliest;
      if (kind === 'token') {
        if (snapshot.tokenUntil < markUntil) await this.#markWaiting('token', markUntil, now);
      } else if (moneyForShared) {
        if (snapshot.moneyUntil < markUntil) await this.#markWaiting('money', markUntil, now);
      } else if (!spare && kind !== 'idle' && snapshot.spareUntil > now && snapshot.owedUntil < markUntil) {
        await this.#markWaiting('owed', markUntil, now);
      }
      // Idle work waiting for its pace only: its take's write shows the budget if it changed.
      if (paced > budgetFreeAt) {
        await this.#sleepFor(Math.max(0, paced - this.#now()), call);
        slept = true;
        continue;
      }
      // Spread, so that the containers waiting for one slot do not all ask at once; never past the
      // last moment the call can still use a slot (a refusal then comes at its deadline, not later).
      const wakeAt = freeAt + Math.floor(this.#random() * WAKE_SPREAD_MS);
      await this.#sleepFor(
        Math.max(0, Math.max(freeAt, Math.min(wakeAt, giveUpAt - MIN_SEND_MS)) - this.#now()),
        call,
      );
      slept = true;
      snapshot = this.#saw(await this.#table.readBudget());
      this.#snapshot = snapshot;
    }
  }

  /**
   * Best effort: a mark lost only lets a spare call (or, for a money call's, a read) take a slot
   * first, and the call that marked waits for the next one (a table that fails for good is met by
   * the next take). Nothing of the budget's bound depends on it: every take checks its slot in the
   * table, mark or none.
   */
  async #markWaiting(who: WaitMark | 'spare', until: number, now: number): Promise<void> {
    try {
      await this.#table.markWaiting(who, until, now);
    } catch (error) {
      log.debug('could not mark a call waiting for the budget', { who, error: describeError(error) });
    }
  }

  async #dropTake(slot: number, busyUntil: number, take: string): Promise<void> {
    try {
      await this.#table.dropTake(slot, busyUntil, take);
    } catch (error) {
      // The slot stays taken until the call's deadline: later than needed, never too early.
      log.debug('could not free a budget slot whose take went unanswered', { error: describeError(error) });
    }
  }

  /** The table answered: note how late the requests it let through may still arrive. */
  #saw(snapshot: BudgetSnapshot): BudgetSnapshot {
    this.#failingSince = undefined;
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

  /**
   * The slots a call may take: the shared part, then the reserve for a money call or a token
   * request that may take it (not a read, not a spare call, not a customer's money call).
   */
  #ranges(call: Call): Array<[number, number]> {
    const shared: [number, number] = [this.#reserved, this.#limit];
    return call.reserve ? [shared, [0, this.#reserved]] : [shared];
  }

  /**
   * Up to `want` free slots of [from, to), from a random place on so that containers rarely pick the
   * same one.
   */
  #freeIn(
    snapshot: BudgetSnapshot,
    [from, to]: [number, number],
    freeBefore: number,
    want: number,
  ): number[] {
    const size = to - from;
    const start = Math.floor(this.#random() * size);
    const free: number[] = [];
    for (let i = 0; i < size && free.length < want; i++) {
      const slot = from + ((start + i) % size);
      if ((snapshot.busyUntil.get(slot) ?? Number.NEGATIVE_INFINITY) <= freeBefore) free.push(slot);
    }
    return free;
  }

  /**
   * A free slot `kind` may take, and the slots that must stay free beside it (idle work's live
   * reserve); `quietBefore` when idle work borrows the live reserve, counting on no live take since.
   */
  #freeSlot(
    snapshot: BudgetSnapshot,
    kind: CallKind,
    freeBefore: number,
    call: Call,
  ): { slot: number; keep: number[]; quietBefore?: number } | undefined {
    if (kind === 'idle') {
      const leaving = (live: number) => {
        const shared = this.#freeIn(snapshot, [this.#reserved, this.#limit], freeBefore, live + 1);
        if (shared.length < live) return undefined;
        const slot = this.#freeIn(snapshot, [0, this.#reserved], freeBefore, 1)[0] ?? shared[live];
        // The write names what DynamoDB's expressions can hold; beyond that (budgets far larger
        // than PayHere's), the rest of the reserve is checked on this container's view of the budget.
        return slot === undefined
          ? undefined
          : { slot, keep: shared.slice(0, Math.min(live, MAX_NAMED_KEEP)) };
      };
      const free = leaving(this.#liveReserve);
      // No live call took a slot for a window and the margin: the job may borrow the live reserve.
      if (free || snapshot.liveAt > freeBefore) return free;
      const borrowed = leaving(this.#quietReserve);
      return borrowed && { ...borrowed, quietBefore: freeBefore };
    }
    for (const range of this.#ranges(call)) {
      const [slot] = this.#freeIn(snapshot, range, freeBefore, 1);
      if (slot !== undefined) return { slot, keep: [] };
    }
    return undefined;
  }

  /** When a slot `kind` may take frees; a request still in flight is expected to be answered soon. */
  #earliestFree(snapshot: BudgetSnapshot, kind: CallKind, now: number, call: Call): number {
    const freeAt = (slot: number) =>
      Math.min(snapshot.busyUntil.get(slot) ?? 0, now) + this.#windowMs + this.#marginMs;
    if (kind === 'idle') {
      // A reserved slot once the live reserve is free in the shared part, or one more shared slot.
      const shared: number[] = [];
      for (let slot = this.#reserved; slot < this.#limit; slot++) shared.push(freeAt(slot));
      shared.sort((a, b) => a - b);
      let reserved = Number.POSITIVE_INFINITY;
      for (let slot = 0; slot < this.#reserved; slot++) reserved = Math.min(reserved, freeAt(slot));
      const leaving = (live: number) =>
        Math.min(
          Math.max(reserved, live === 0 ? Number.NEGATIVE_INFINITY : shared[live - 1]!),
          shared[live] ?? Number.POSITIVE_INFINITY,
        );
      // Or one the job may borrow, once the quiet spell begins.
      const quietAt = snapshot.liveAt + this.#windowMs + this.#marginMs;
      return Math.min(leaving(this.#liveReserve), Math.max(quietAt, leaving(this.#quietReserve)));
    }
    let earliest = Number.POSITIVE_INFINITY;
    for (const [from, to] of this.#ranges(call)) {
      for (let slot = from; slot < to; slot++) earliest = Math.min(earliest, freeAt(slot));
    }
    return earliest;
  }

  /**
   * The table failed. The container's own share opens only once every request the table may have
   * let through (until now, by any container, and until the deadlines of those this container saw
   * in flight) is a window and the margin old: so that when the table fails for every container,
   * no window at PayHere holds shared and fallback arrivals together, and the containers' shares
   * alone stay within the limit. Set once per failure: while the table keeps failing it lets
   * nothing through. Until then the container's calls keep trying the table (a slow request costs
   * that request only); once it opens, one call a second still does.
   */
  #fallBack(error: unknown): void {
    const now = this.#now();
    if (this.#failingSince === undefined) {
      this.#failingSince = now;
      // Shares within slots the table never gives out open at once; shares on top of the table's
      // slots once whatever the table let through is a window and the margin old.
      this.#shareOpensAt =
        this.#fallbackSlots > 0 ? now : Math.max(this.#seenUntil, now) + this.#windowMs + this.#marginMs;
      this.#fallback?.pause(this.#shareOpensAt);
    }
    if (now >= this.#warnedAt + this.#windowMs) {
      this.#warnedAt = now;
      const message = this.#fallback
        ? 'the shared budget table cannot be reached: this container uses its own fallback share'
        : 'the shared budget table cannot be reached: calls wait for it within their deadline';
      log.warn(message, {
        error: describeError(error),
        shareOpensInMs: Math.max(0, this.#shareOpensAt - now),
      });
    }
    this.#snapshot = undefined;
  }
}

/** The marks a call of `kind` leaves the slots that free to (docs/budget.md "The reserve"). */
function yieldsTo(kind: CallKind, spare: boolean): WaitMark[] {
  if (kind === 'token') return [];
  if (spare) return ['owed', 'money', 'token'];
  return kind === 'read' ? ['money', 'token'] : ['token'];
}

function markOf(budget: BudgetSnapshot, mark: WaitMark): number {
  return mark === 'owed' ? budget.owedUntil : mark === 'money' ? budget.moneyUntil : budget.tokenUntil;
}

/**
 * The queue a call asks the table in, within one container: a call beyond its caller's share waits
 * in one of its own, never ahead of a call within one; a money call that may not take the reserve
 * (a customer's) in one of its own, neither behind reads nor ahead of calls that may take it.
 */
type Queue = 'read' | 'reserved' | 'shared' | 'idle' | 'spare' | 'token';

/** A call as the shared budget sees it besides its kind: `reserve` already false for reads and spare calls. */
interface Call {
  spare: boolean;
  reserve: boolean;
  signal?: AbortSignal | undefined;
}

function queueOf(kind: CallKind, call: Call): Queue {
  if (call.spare) return 'spare';
  // A token request never waits behind the container's charges: every call needs it.
  if (kind === 'read' || kind === 'idle' || kind === 'token') return kind;
  return call.reserve ? 'reserved' : 'shared';
}
