import * as z from 'zod/mini';
import { NotFoundError } from '../envelope/errors.ts';
import { NoPaymentsError } from '../gateway/answers.ts';
import { findSubscription, type PayHere, type Result } from '../gateway/payhere.ts';
import type { Reservation } from '../gateway/reservation.ts';
import { PaymentList, type PaymentRecord, SubscriptionList, SubscriptionRecord } from '../gateway/schemas.ts';
import { describeError, log } from '../log/log.ts';
import { LruMap } from '../memory/lru-map.ts';
import { inBackground } from '../net/background.ts';
import type { RefundStatuses } from './refund-statuses.ts';
import { SHARED_READS, type SharedRead, type SharedReadStore, type StoredAnswer } from './store.ts';

/** An answer, and whether it came from data shared earlier rather than from PayHere just now. */
export interface Served<T> {
  answer: T;
  /** Epoch ms when its request to PayHere started. */
  fetchedAt: number;
  /** From shared data (the table, a ledger copy): the response carries `Age`. */
  shared: boolean;
}

/** `Age` (whole seconds since PayHere gave it) for an answer served from shared data; none for a fresh one. */
export function ageHeaders(served: Served<unknown>, now = Date.now()): Record<string, string> {
  if (!served.shared) return {};
  return { Age: String(Math.max(0, Math.floor((now - served.fetchedAt) / 1000))) };
}

/** Stored answers are checked again when read: an item an older version wrote is a miss, not a 500. */
const resultOf = <T extends z.core.$ZodType>(data: T) => z.object({ msg: z.string(), data });
export const PaymentsAnswer = resultOf(PaymentList);
const SubscriptionsAnswer = resultOf(SubscriptionList);
const SubscriptionAnswer = resultOf(SubscriptionRecord);
const Remembered = z.literal(true);

/**
 * PayHere answered "not found": kept as its message, shared like an answer, and thrown again to
 * every reader. Five customers polling their own pre-approval orders (PayHere shows no payment for
 * them) each cost PayHere one call per window, not one per poll.
 */
const Missing = z.object({ missing: z.string() });
type Missing = z.infer<typeof Missing>;
const PaymentsOrMissing = z.union([PaymentsAnswer, Missing]);
type PaymentsOrMissing = Result<PaymentRecord[]> | Missing;

/** PayHere's not-found as an answer to share; any other failure thrown as it came. */
function missingOf(error: unknown): Missing {
  if (error instanceof NotFoundError) return { missing: error.message };
  throw error;
}

/** A shared answer, or the not-found it stands for thrown again, as `NotFound` (the class PayHere's client threw). */
function found<T>(served: Served<T | Missing>, NotFound: new (message: string) => Error): Served<T> {
  const { answer } = served;
  if (typeof answer === 'object' && answer !== null && 'missing' in answer)
    throw new NotFound(answer.missing);
  return served as Served<T>;
}

/** A list fetched this recently is refreshed for one subscription rather than asking for that one alone. */
const LIST_PREFERRED_MS = 600_000;

/** How many answers' fetch times a container remembers to guess whether the next lookup finds one. */
const SEEN_KEPT = 1_000;

const reserved = (reservation: Reservation | undefined) => (reservation ? { reservation } : {});

/** A stored answer within its window, or only when one was fetched (past its window, or unreadable). */
type Lookup<T> = { fresh: true; answer: T; fetchedAt: number } | { fresh: false; fetchedAt: number };

type Schema<T> = { safeParse(input: unknown): { success: true; data: T } | { success: false } };

/**
 * PayHere's reads through the shared store (docs/contract.md "PayHere's budget"): an answer fetched from
 * PayHere is kept for its window and served to every container and caller meanwhile; in one
 * container, callers asking for the same thing at once share one fetch. A not-found of an order's
 * or a subscription's payments is shared like an answer. Never stored: a pending answer, an answer
 * too large. The table is a convenience, never a dependency: a read whose table request fails or
 * is too slow goes to PayHere (through the budget) as without it, and the next read asks the table
 * again (a slow request costs its own read, not the container's next seconds).
 *
 * Only the read routes use this. Reads that settle money (a lost charge's search, a lost cancel's
 * or retry's check) and the notification receiver's and getCheckout's confirmations call PayHere
 * directly: they decide what the ledger records about money, so they must see PayHere now.
 */
export class SharedReads {
  readonly #payhere: PayHere;
  readonly #store: SharedReadStore;
  readonly #now: () => number;
  readonly #inFlight = new Map<string, Promise<Served<unknown>>>();
  /** When the answers this container last saw were fetched, by key. */
  readonly #seen = new LruMap<number>(SEEN_KEPT);
  /** Answers being written to the table, by key: this container's next lookup of one waits for it. */
  readonly #keeping = new Map<string, Promise<void>>();
  /** Where payments PayHere's answers show refunded have their status kept (none: not kept). */
  readonly #refundStatuses: RefundStatuses | undefined;
  /** Whether the table's last request failed (for the log: one line per outage, not per read). */
  #tableFailing = false;

  constructor(options: {
    payhere: PayHere;
    store: SharedReadStore;
    now?: () => number;
    refundStatuses?: RefundStatuses;
  }) {
    this.#payhere = options.payhere;
    this.#store = options.store;
    this.#now = options.now ?? Date.now;
    this.#refundStatuses = options.refundStatuses;
  }

  /** An order's payments, or PayHere's "no payments" (10 s); a pending answer is served but never kept. */
  async paymentsOfOrder(orderId: string, deadline: number): Promise<Served<Result<PaymentRecord[]>>> {
    const served = await this.#shared<PaymentsOrMissing>(
      SHARED_READS.orderPayments(orderId),
      PaymentsOrMissing,
      deadline,
      (reservation) =>
        this.#payhere.paymentsOfOrder(orderId, deadline, reserved(reservation)).catch(missingOf),
      {
        storable: (answer) => !('pending' in answer && answer.pending),
        fetched: (answer, fetchedAt) => this.#refundsRead(answer, fetchedAt),
      },
    );
    return found<Result<PaymentRecord[]>>(served, NoPaymentsError);
  }

  /**
   * The merchant's subscriptions. A list fetched from PayHere is kept before it is answered (not
   * after, as other answers are): the app's next request after a list is one of its subscriptions,
   * served by another function, whose container can only find the list in the table.
   */
  listSubscriptions(deadline: number, refresh = false): Promise<Served<Result<SubscriptionRecord[]>>> {
    return this.#shared(
      SHARED_READS.subscriptions,
      SubscriptionsAnswer,
      deadline,
      (reservation) => this.#payhere.listSubscriptions(deadline, reserved(reservation)),
      { refresh, keepFirst: true },
    );
  }

  /**
   * The merchant's subscriptions, unless `instead`, looked up beside them, finds what the caller
   * needs (a subscription list's snapshot: lib/reads/subscription-pages.ts): the shared list while
   * fresh, else PayHere's, its call's share and slot taken beside the lookups as #shared takes them.
   */
  async listSubscriptionsUnless<T>(
    instead: Promise<T | undefined>,
    deadline: number,
  ): Promise<{ instead: T } | Served<Result<SubscriptionRecord[]>>> {
    const read = SHARED_READS.subscriptions;
    let reservation: Reservation | undefined;
    if (this.#likelyShared(read) || this.#inFlight.has(read.key)) this.#payhere.prepare();
    else reservation = this.#payhere.reserve(deadline);
    const [found, stored] = await Promise.all([instead, this.#lookup(read, SubscriptionsAnswer, deadline)]);
    if (found !== undefined || stored?.fresh || this.#inFlight.has(read.key)) reservation?.cancel();
    if (found !== undefined) return { instead: found };
    if (stored?.fresh) {
      this.#seen.set(read.key, stored.fetchedAt);
      return { answer: stored.answer, fetchedAt: stored.fetchedAt, shared: true };
    }
    const running = this.#inFlight.get(read.key) as Promise<Served<Result<SubscriptionRecord[]>>> | undefined;
    if (running) return running;
    return this.#once(read.key, async () => {
      const fetchedAt = this.#now();
      const answer = await this.#payhere.listSubscriptions(deadline, reserved(reservation));
      this.#seen.set(read.key, fetchedAt);
      await this.#keep(read, answer, fetchedAt, deadline);
      return { answer, fetchedAt, shared: false };
    });
  }

  /** A subscription's payments, or PayHere's not-found (30 s). */
  async subscriptionPayments(id: string, deadline: number): Promise<Served<Result<PaymentRecord[]>>> {
    const served = await this.#shared<PaymentsOrMissing>(
      SHARED_READS.subscriptionPayments(id),
      PaymentsOrMissing,
      deadline,
      (reservation) =>
        this.#payhere.subscriptionPayments(id, deadline, reserved(reservation)).catch(missingOf),
    );
    return found<Result<PaymentRecord[]>>(served, NotFoundError);
  }

  /**
   * One subscription: its own item, else the shared list while fresh (it holds every subscription),
   * else PayHere's one-subscription endpoint; where that answers a bare 404, the list, and that is
   * remembered for an hour so that later calls spend one shared list instead of two calls each.
   * When the list was fetched in the last ten minutes, it is refreshed instead.
   */
  getSubscription(id: string, deadline: number): Promise<Served<Result<SubscriptionRecord>>> {
    const one = SHARED_READS.subscription(id);
    return this.#once(one.key, async () => {
      this.#payhere.prepare();
      const [stored, list] = await Promise.all([
        this.#lookup(one, SubscriptionAnswer, deadline),
        this.#lookup(SHARED_READS.subscriptions, SubscriptionsAnswer, deadline),
      ]);
      if (stored?.fresh) return { answer: stored.answer, fetchedAt: stored.fetchedAt, shared: true };
      const listed = list?.fresh && findSubscription(list.answer.data, id);
      if (list && listed) return fromList(list.fetchedAt, true, listed);
      // A list fetched lately says callers read it: one refresh of it serves every subscription
      // for 30 s, where the one-subscription endpoint serves one.
      const listRead = list !== undefined && this.#now() - list.fetchedAt < LIST_PREFERRED_MS;
      const missing = listRead
        ? undefined
        : await this.#lookup(SHARED_READS.oneSubscriptionMissing, Remembered, deadline);
      if (!listRead && !missing?.fresh) {
        const fetchedAt = this.#now();
        const found = await this.#payhere.oneSubscription(id, deadline);
        if (typeof found !== 'string') {
          this.#keepLater(one, found, fetchedAt, deadline);
          return { answer: found, fetchedAt, shared: false };
        }
        if (found === 'unsupported')
          this.#keepLater(SHARED_READS.oneSubscriptionMissing, true, fetchedAt, deadline);
      }
      // A subscription a fresh shared list lacks may be newer than it: that list is not asked again.
      const fresh = await this.listSubscriptions(deadline, list?.fresh === true);
      const record = findSubscription(fresh.answer.data, id);
      if (!record) throw new NotFoundError(`Subscription ${id} was not found.`);
      return fromList(fresh.fetchedAt, fresh.shared, record);
    });
  }

  /**
   * A subscription as the shared answers show it now, if one is fresh (its own, or the list's); no
   * PayHere call: a cancel asks this before it spends one.
   */
  async sharedSubscription(id: string, deadline: number): Promise<SubscriptionRecord | undefined> {
    const [stored, list] = await Promise.all([
      this.#lookup(SHARED_READS.subscription(id), SubscriptionAnswer, deadline),
      this.#lookup(SHARED_READS.subscriptions, SubscriptionsAnswer, deadline),
    ]);
    if (stored?.fresh) return stored.answer.data;
    return list?.fresh ? findSubscription(list.answer.data, id) : undefined;
  }

  /**
   * The stored answer of `read`, else PayHere's (kept when `storable`, after it is answered unless
   * `keepFirst`); `refresh` skips the stored one.
   */
  #shared<T>(
    read: SharedRead,
    schema: Schema<T>,
    deadline: number,
    fetch: (reservation: Reservation | undefined) => Promise<T>,
    options: {
      storable?: (answer: T) => boolean;
      refresh?: boolean;
      keepFirst?: boolean;
      fetched?: (answer: T, fetchedAt: number) => void;
    } = {},
  ): Promise<Served<T>> {
    const { storable = () => true, refresh = false, keepFirst = false, fetched } = options;
    return this.#once(read.key, async () => {
      // An answer this container has not seen within its window is probably missing: the call's
      // share and slot are taken beside the lookup (given back if it finds the answer after all).
      // Else only the shared token is read beside it, by a cold container.
      let reservation: Reservation | undefined;
      if (refresh || this.#likelyShared(read)) this.#payhere.prepare();
      else reservation = this.#payhere.reserve(deadline);
      const stored = refresh ? undefined : await this.#lookup(read, schema, deadline);
      if (stored?.fresh) {
        reservation?.cancel();
        this.#seen.set(read.key, stored.fetchedAt);
        return { answer: stored.answer, fetchedAt: stored.fetchedAt, shared: true };
      }
      const fetchedAt = this.#now();
      const answer = await fetch(reservation);
      fetched?.(answer, fetchedAt);
      if (storable(answer)) {
        this.#seen.set(read.key, fetchedAt);
        if (keepFirst) await this.#keep(read, answer, fetchedAt, deadline);
        else this.#keepLater(read, answer, fetchedAt, deadline);
      }
      return { answer, fetchedAt, shared: false };
    });
  }

  /**
   * PayHere's payments just read: the refunded ones' statuses kept on their refund items after the
   * answer (lib/reads/refund-statuses.ts), never holding it up. Only answers fetched now: a shared
   * one was seen when it was fetched.
   */
  #refundsRead(answer: PaymentsOrMissing, fetchedAt: number): void {
    const statuses = this.#refundStatuses;
    if (!statuses || 'missing' in answer) return;
    inBackground(() => statuses.seen(answer.data, fetchedAt));
  }

  /** This container saw `read`'s answer (stored, or fetched to be stored) within its window. */
  #likelyShared(read: SharedRead): boolean {
    const fetchedAt = this.#seen.get(read.key);
    return fetchedAt !== undefined && this.#now() - fetchedAt < read.windowMs;
  }

  /** Callers of one container asking for `key` at once share one lookup and one fetch. */
  #once<T>(key: string, work: () => Promise<Served<T>>): Promise<Served<T>> {
    const running = this.#inFlight.get(key) as Promise<Served<T>> | undefined;
    if (running) return running;
    const started = work().finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, started);
    return started;
  }

  /** What the table holds of `read`: its answer while fresh, else when it was fetched; undefined if nothing. */
  async #lookup<T>(read: SharedRead, schema: Schema<T>, deadline: number): Promise<Lookup<T> | undefined> {
    await this.#keeping.get(read.key);
    const ms = this.#tableTime(deadline);
    let stored: StoredAnswer | undefined;
    try {
      stored = await this.#store.get(read, ms);
      this.#tableFailing = false;
    } catch (error) {
      this.#tableFailed(error, ms);
      return undefined;
    }
    if (!stored) return undefined;
    const parsed = stored.answer === undefined ? undefined : schema.safeParse(stored.answer);
    return parsed?.success
      ? { fresh: true, answer: parsed.data, fetchedAt: stored.fetchedAt }
      : { fresh: false, fetchedAt: stored.fetchedAt };
  }

  /**
   * Keep an answer without holding up the caller it was fetched for: a write lost (a Lambda frozen
   * before its request left, a table down) only costs a later read a PayHere call, and the write's
   * conditions refuse it over anything newer or a drop, however late it lands. Until it is done,
   * this container's own lookups of it wait for it, so that they see it.
   */
  #keepLater(read: SharedRead, answer: unknown, fetchedAt: number, deadline: number): void {
    const kept = inBackground(() => this.#keep(read, answer, fetchedAt, deadline)).finally(() => {
      if (this.#keeping.get(read.key) === kept) this.#keeping.delete(read.key);
    });
    this.#keeping.set(read.key, kept);
  }

  async #keep(read: SharedRead, answer: unknown, fetchedAt: number, deadline: number): Promise<void> {
    const ms = this.#tableTime(deadline);
    try {
      await this.#store.put(read, answer, fetchedAt, ms);
    } catch (error) {
      this.#tableFailed(error, ms);
    }
  }

  /**
   * How long the table may take for a read due at `deadline`: the table's timeout, and never more
   * than a quarter of the time left, which a short read keeps for PayHere and its answer.
   */
  #tableTime(deadline: number): number {
    return Math.max(1, Math.min(this.#store.timeoutMs, Math.floor((deadline - Date.now()) / 4)));
  }

  /**
   * A table request that failed or was too slow costs that read only (it goes to PayHere as
   * without the table); the next read asks the table again. Logged once until the table answers
   * again; a request cut short by the read's own deadline says nothing about the table.
   */
  #tableFailed(error: unknown, ms: number): void {
    if (ms < this.#store.timeoutMs || this.#tableFailing) return;
    this.#tableFailing = true;
    log.warn('the shared state table did not answer: this read goes to the gateway', {
      error: describeError(error),
    });
  }
}

function fromList(
  fetchedAt: number,
  shared: boolean,
  record: SubscriptionRecord,
): Served<Result<SubscriptionRecord>> {
  return { answer: { msg: 'Found subscription', data: record }, fetchedAt, shared };
}
