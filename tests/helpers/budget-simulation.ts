/**
 * PayHere's budget at scale, on a virtual clock: many containers, each running the service's own
 * SharedLimiter as a Lambda container does (one request at a time), against a stand-in for the
 * state table's budget item that throttles at DynamoDB's per-partition rates (one item lives on one
 * partition: 1,000 writes and 3,000 consistent reads a second), answers some requests with a 500
 * (some of them applied), answers some too late for the client's timeout (applied all the same),
 * and fails every request during an outage. PayHere is a stand-in that notes when each request
 * arrives and answers 429 past its limit, as the real one would.
 *
 * Nothing sleeps: every wait is a timer on the virtual clock, run in time order once everything
 * that can run at the current instant has run. The same seed gives the same run.
 */
import { AwsServiceError, AwsTimeoutError } from '../../lib/aws/errors.ts';
import { type AcquireOptions, SharedLimiter } from '../../lib/budget/limiter.ts';
import type { BudgetSnapshot, SharedStateTable, WaitMark } from '../../lib/budget/state-table.ts';
import type { CallKind } from '../../lib/budget/window-limiter.ts';
import { RateLimitedError } from '../../lib/envelope/errors.ts';
import { busiestWindow } from './windows.ts';

export interface SimulationOptions {
  containers: number;
  /** Simulated time, ms. */
  durationMs: number;
  seed: number;
  /** Requests a second offered to the whole deployment (each to a container that is free). */
  offeredPerSecond: number;
  /** Callers the requests come from: `merchant` and customers `c1`... */
  callers: number;
  /**
   * The state table fails every request in [from, to) (ms from the start): of every container, or
   * of the first `share` of them only (a table some containers reach and others do not).
   */
  outage?: { fromMs: number; toMs: number; share?: number };
  /** Share of table requests answered 500 (half of those applied) and answered too late (applied). */
  internalErrorRate?: number;
  slowRate?: number;
  /** DynamoDB's per-partition rates (per second); lower them to see throttling at a small scale. */
  writesPerSecond?: number;
  readsPerSecond?: number;
  /**
   * Customers' charges a second, among `offeredPerSecond`: money calls that may not take the
   * reserve, as the gateway client asks for a customer's; every other request is then a customer's
   * read (within its share). Unset: a quarter of the requests are money calls that may take it.
   */
  customerChargesPerSecond?: number;
}

export interface SimulationReport {
  containers: number;
  simulatedMs: number;
  /** PayHere arrivals, and the most of them in any 10 s window. */
  arrivals: number;
  maxPerWindow: number;
  /** PayHere's 429s: the budget exists so that there are none. */
  payhere429: number;
  tokenRequests: number;
  /** Token requests asked for (one container at a time when the token is due), made or refused. */
  tokenAttempts: number;
  /** Answers per caller: served (a PayHere call made) and refused (429 rate_limited). */
  answers: Record<string, { served: number; refused: number }>;
  /** Customers' charges (with `customerChargesPerSecond`): served, refused, the longest wait for a slot. */
  charges: { served: number; refused: number; slowestWaitMs: number };
  table: { requests: number; throttled: number; internalErrors: number; late: number; outage: number };
  /** Real time the run took, ms. */
  tookMs: number;
}

const LIMIT = 20;
const WINDOW_MS = 10_000;
const T0 = Date.UTC(2026, 10, 23, 9, 0, 0);
/** The gateway client's deadline for a call (lib/http/deadline.ts): 20 s. */
const DEADLINE_MS = 20_000;
const TABLE_TIMEOUT_MS = 500;
/** The shared token lives 5 minutes here, so a run of 10 minutes asks for it a few times. */
const TOKEN_LIFETIME_MS = 300_000;

/** A seeded pseudo-random source (mulberry32): the same seed, the same run. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Timers on a virtual clock, run in time order (then in the order set). */
class VirtualTime {
  now = T0;
  #seq = 0;
  readonly #heap: Array<{ at: number; seq: number; wake: () => void }> = [];

  readonly clock = () => this.now;
  readonly sleep = (ms: number): Promise<void> =>
    new Promise((wake) => this.#push({ at: this.now + Math.max(0, ms), seq: this.#seq++, wake }));

  /** Runs timers until `until` or none is left, letting everything at one instant run first. */
  async run(until: number): Promise<void> {
    for (;;) {
      // Everything the last timer started runs to its next wait before time moves.
      await new Promise((resolve) => setImmediate(resolve));
      const next = this.#pop();
      if (!next || next.at > until) return;
      this.now = Math.max(this.now, next.at);
      next.wake();
    }
  }

  #less(a: { at: number; seq: number }, b: { at: number; seq: number }): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #push(entry: { at: number; seq: number; wake: () => void }): void {
    const heap = this.#heap;
    heap.push(entry);
    for (let i = heap.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!this.#less(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #pop(): { at: number; seq: number; wake: () => void } | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      for (let i = 0; ; ) {
        const left = 2 * i + 1;
        const right = left + 1;
        let least = i;
        if (left < heap.length && this.#less(heap[left]!, heap[least]!)) least = left;
        if (right < heap.length && this.#less(heap[right]!, heap[least]!)) least = right;
        if (least === i) break;
        [heap[i], heap[least]] = [heap[least]!, heap[i]!];
        i = least;
      }
    }
    return top;
  }
}

type TableBehaviour = Required<
  Pick<SimulationOptions, 'internalErrorRate' | 'slowRate' | 'writesPerSecond' | 'readsPerSecond'>
> &
  Pick<SimulationOptions, 'outage'>;

/**
 * The budget item as the state table keeps it, with the conditional writes SharedStateTable makes
 * (lib/budget/state-table.ts), each applied whole at one instant as DynamoDB applies a write to one
 * item, and the faults above.
 */
class SimulatedStateTable {
  readonly #time: VirtualTime;
  readonly #random: () => number;
  readonly #options: TableBehaviour;
  readonly #busyUntil = new Map<number, number>();
  readonly #takenBy = new Map<number, string>();
  #pausedUntil = 0;
  /** The last live take (`liveAt`). */
  #liveAt = 0;
  /** Each waiting mark's time, as the budget item holds them (`<mark>Until`). */
  readonly #marks: Record<WaitMark | 'spare', number> = { owed: 0, spare: 0, money: 0, token: 0 };
  /** Requests served in the current second, by kind: what the partition's rate counts. */
  #second = -1;
  #served = { read: 0, write: 0 };
  readonly stats = { requests: 0, throttled: 0, internalErrors: 0, late: 0, outage: 0 };

  constructor(time: VirtualTime, random: () => number, options: TableBehaviour) {
    this.#time = time;
    this.#random = random;
    this.#options = options;
  }

  #markUntil(mark: WaitMark): number {
    return this.#marks[mark];
  }

  #snapshot(): BudgetSnapshot {
    return {
      busyUntil: new Map(this.#busyUntil),
      takenBy: new Map(this.#takenBy),
      pausedUntil: this.#pausedUntil,
      owedUntil: this.#marks.owed,
      spareUntil: this.#marks.spare,
      moneyUntil: this.#marks.money,
      tokenUntil: this.#marks.token,
      liveAt: this.#liveAt,
    };
  }

  /** One request: its latency, and whichever fault meets it; `apply` runs at the table. */
  /** Whether the container now asking is one the outage cuts off (read as its request starts). */
  #askedByCutOff = true;

  /** The table as container `index` of `of` reaches it. */
  viewFor(index: number, of: number): SharedStateTable {
    const cutOff = index < Math.round((this.#options.outage?.share ?? 1) * of);
    const asked =
      <A extends unknown[], R>(method: (...args: A) => R) =>
      (...args: A): R => {
        this.#askedByCutOff = cutOff;
        return method.apply(this, args);
      };
    return {
      readBudget: asked(this.readBudget),
      takeSlot: asked(this.takeSlot),
      releaseSlot: asked(this.releaseSlot),
      handBackSlot: asked(this.handBackSlot),
      dropTake: asked(this.dropTake),
      pause: asked(this.pause),
      markWaiting: asked(this.markWaiting),
    } as unknown as SharedStateTable;
  }

  async #request<T>(kind: 'read' | 'write', apply: () => T): Promise<T> {
    this.stats.requests++;
    const latency = 3 + Math.floor(this.#random() * 8);
    const { outage } = this.#options;
    const at = this.#time.now - T0;
    if (outage && this.#askedByCutOff && at >= outage.fromMs && at < outage.toMs) {
      this.stats.outage++;
      await this.#time.sleep(TABLE_TIMEOUT_MS);
      throw new AwsTimeoutError('DynamoDB', 'answer', TABLE_TIMEOUT_MS);
    }
    await this.#time.sleep(latency / 2);
    const second = Math.floor(this.#time.now / 1000);
    if (second !== this.#second) {
      this.#second = second;
      this.#served = { read: 0, write: 0 };
    }
    const rate = kind === 'read' ? this.#options.readsPerSecond : this.#options.writesPerSecond;
    if (this.#served[kind] >= rate) {
      this.stats.throttled++;
      await this.#time.sleep(latency / 2);
      throw new AwsServiceError('ProvisionedThroughputExceededException', 'throttled', 400);
    }
    this.#served[kind]++;
    const fault = this.#random();
    if (fault < this.#options.internalErrorRate) {
      this.stats.internalErrors++;
      if (kind === 'write' && this.#random() < 0.5) apply();
      await this.#time.sleep(latency / 2);
      throw new AwsServiceError('InternalServerError', 'simulated', 500);
    }
    const result = apply();
    if (fault < this.#options.internalErrorRate + this.#options.slowRate) {
      this.stats.late++;
      await this.#time.sleep(TABLE_TIMEOUT_MS);
      throw new AwsTimeoutError('DynamoDB', 'answer', TABLE_TIMEOUT_MS);
    }
    await this.#time.sleep(latency / 2);
    return result;
  }

  readBudget(): Promise<BudgetSnapshot> {
    return this.#request('read', () => this.#snapshot());
  }

  takeSlot(
    slot: number,
    busyUntil: number,
    freeBefore: number,
    now: number,
    take: string,
    keepFree: readonly number[] = [],
    yieldTo: readonly WaitMark[] = [],
    options: { ends?: WaitMark | undefined; live?: boolean; quietBefore?: number | undefined } = {},
  ): ReturnType<SharedStateTable['takeSlot']> {
    return this.#request('write', () => {
      const free = (s: number) => (this.#busyUntil.get(s) ?? Number.NEGATIVE_INFINITY) <= freeBefore;
      const ok =
        free(slot) &&
        this.#pausedUntil <= now &&
        keepFree.every(free) &&
        yieldTo.every((mark) => this.#markUntil(mark) <= now) &&
        (options.quietBefore === undefined || this.#liveAt <= options.quietBefore);
      if (!ok) return { taken: false as const, budget: this.#snapshot() };
      const previous = this.#busyUntil.get(slot);
      this.#busyUntil.set(slot, busyUntil);
      this.#takenBy.set(slot, take);
      if (options.ends) this.#marks[options.ends] = 0;
      if (options.live) this.#liveAt = now;
      return { taken: true as const, budget: this.#snapshot(), previous };
    });
  }

  releaseSlot(slot: number, busyUntil: number, doneAt: number): Promise<boolean> {
    return this.#request('write', () => {
      if (this.#busyUntil.get(slot) !== busyUntil) return false;
      this.#busyUntil.set(slot, doneAt);
      return true;
    });
  }

  handBackSlot(slot: number, busyUntil: number, previous: number | undefined): Promise<boolean> {
    return this.#request('write', () => {
      if (this.#busyUntil.get(slot) !== busyUntil) return false;
      if (previous === undefined) this.#busyUntil.delete(slot);
      else this.#busyUntil.set(slot, previous);
      return true;
    });
  }

  dropTake(slot: number, busyUntil: number, take: string): Promise<boolean> {
    return this.#request('write', () => {
      if (this.#busyUntil.get(slot) !== busyUntil || this.#takenBy.get(slot) !== take) return false;
      this.#busyUntil.delete(slot);
      this.#takenBy.delete(slot);
      return true;
    });
  }

  async pause(until: number): Promise<void> {
    await this.#request('write', () => {
      this.#pausedUntil = Math.max(this.#pausedUntil, until);
    });
  }

  async markWaiting(who: WaitMark | 'spare', until: number): Promise<void> {
    await this.#request('write', () => {
      this.#marks[who] = Math.max(this.#marks[who], until);
    });
  }
}

/** Runs the simulation; the service's log lines and metrics are its own business meanwhile. */
export async function simulateBudget(options: SimulationOptions): Promise<SimulationReport> {
  const started = performance.now();
  const time = new VirtualTime();
  const random = seeded(options.seed);
  const table = new SimulatedStateTable(time, seeded(options.seed + 1), {
    internalErrorRate: options.internalErrorRate ?? 0,
    slowRate: options.slowRate ?? 0,
    writesPerSecond: options.writesPerSecond ?? 1_000,
    readsPerSecond: options.readsPerSecond ?? 3_000,
    outage: options.outage,
  });
  const end = T0 + options.durationMs;
  const arrivals: number[] = [];
  let payhere429 = 0;
  let tokenRequests = 0;
  let tokenDueAt = T0;
  let tokenLeased = false;
  let tokenAttempts = 0;
  const callers = [
    'merchant',
    ...Array.from({ length: Math.max(0, options.callers - 1) }, (_, i) => `c${i + 1}`),
  ];
  const answers: SimulationReport['answers'] = Object.fromEntries(
    callers.map((caller) => [caller, { served: 0, refused: 0 }]),
  );

  const charges = { served: 0, refused: 0, slowestWaitMs: 0 };

  /** One PayHere call on a slot: sent 5-100 ms later, answered 200-1,500 ms after it arrives. */
  async function call(
    limiter: SharedLimiter,
    kind: CallKind,
    options: AcquireOptions = {},
  ): Promise<boolean> {
    const askedAt = time.now;
    const charge = options.reserve === false;
    let permit: Awaited<ReturnType<SharedLimiter['acquire']>>;
    try {
      permit = await limiter.acquire(kind, DEADLINE_MS, options);
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
      if (charge) charges.refused++;
      return false;
    }
    if (charge) {
      charges.served++;
      charges.slowestWaitMs = Math.max(charges.slowestWaitMs, time.now - askedAt);
    }
    await time.sleep(5 + Math.floor(random() * 96));
    // A request its deadline has passed is abandoned before it is sent, as the client's deadline does.
    if (time.now > askedAt + DEADLINE_MS) {
      await permit.release();
      return false;
    }
    arrivals.push(time.now);
    let recent = 0;
    for (let i = arrivals.length - 1; i >= 0 && arrivals[i]! > time.now - WINDOW_MS; i--) recent++;
    await time.sleep(200 + Math.floor(random() * 1_301));
    if (recent > LIMIT) {
      payhere429++;
      await limiter.pause(WINDOW_MS);
    }
    await permit.release();
    return true;
  }

  async function container(index: number): Promise<void> {
    const limiter = new SharedLimiter({
      table: table.viewFor(index, options.containers),
      limit: LIMIT,
      windowMs: WINDOW_MS,
      now: time.clock,
      sleep: time.sleep,
      random,
    });
    const meanGapMs = (1000 * options.containers) / options.offeredPerSecond;
    for (;;) {
      await time.sleep(-Math.log(1 - random()) * meanGapMs);
      if (time.now >= end) return;
      // The shared token: one container fetches the next when it is due, the others keep theirs.
      if (time.now >= tokenDueAt && !tokenLeased) {
        tokenLeased = true;
        tokenAttempts++;
        if (await call(limiter, 'token')) {
          tokenRequests++;
          tokenDueAt = time.now + TOKEN_LIFETIME_MS;
        }
        tokenLeased = false;
      }
      const caller = callers[Math.floor(random() * callers.length)]!;
      const customerCharge =
        options.customerChargesPerSecond !== undefined &&
        random() < options.customerChargesPerSecond / options.offeredPerSecond;
      const kind: CallKind =
        options.customerChargesPerSecond === undefined
          ? random() < 0.25
            ? 'money'
            : 'read'
          : customerCharge
            ? 'money'
            : 'read';
      if (await call(limiter, kind, customerCharge ? { reserve: false } : {})) answers[caller]!.served++;
      else answers[caller]!.refused++;
    }
  }

  const running = Array.from({ length: options.containers }, (_, index) => container(index));
  // Every container stops at its first request after the end; calls end by their deadlines.
  await time.run(Number.POSITIVE_INFINITY);
  await Promise.all(running);
  return {
    containers: options.containers,
    simulatedMs: options.durationMs,
    arrivals: arrivals.length,
    maxPerWindow: busiestWindow(arrivals, WINDOW_MS),
    payhere429,
    tokenRequests,
    tokenAttempts,
    answers,
    charges,
    table: { ...table.stats },
    tookMs: Math.round(performance.now() - started),
  };
}
