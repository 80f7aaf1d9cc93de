import { type IdleWork, idleWork } from '../budget/limiter.ts';
import { settleHeld } from '../idempotency/idempotent.ts';
import type { IdempotencyStore } from '../idempotency/store.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import { LOOK_AGAIN_MS, type MoneySettlement, type MoneySubject } from '../orders/money-settlement.ts';
import type { OrderReports } from '../orders/reports.ts';
import type { SubscriptionStandings } from '../orders/standings.ts';
import type { OpenCharges } from './open-charges.ts';

/** How much one run may do: records and reports looked at, and PayHere calls (lib/settle/capped-transport.ts). */
export interface SettleLimits {
  items: number;
  calls: number;
}

/** What a run did, for its log line, its metrics and the bench. */
export interface SettleRun {
  looked: number;
  settled: number;
  stillUnknown: number;
  /** Unknowns (requests or reports) more than an hour old that this run could not settle. */
  overAnHour: number;
  /**
   * Items the run's own bounds cut short (its end, its cap on PayHere calls, no slot the live
   * reserve could spare in time) before PayHere answered: back in their place for the next run.
   */
  interrupted: number;
  /** More was due than the run's limits allowed: the next run goes on. */
  backlog: boolean;
}

const HOUR_MS = 3_600_000;
/** Time kept back from the run's deadline to record what it learned. */
const RESERVE_MS = 3_000;
/**
 * Items settled at once: one at a time, PayHere's answer time and the tables' round trips, not
 * the budget, would bound a run. A few suffice, since the budget's slots free one by one.
 */
const IN_FLIGHT = 4;

type Item = { request: string } | { charge: string } | { report: string } | { standing: string };

/**
 * The settle job (docs/contract.md "Every unknown resolves"), run on a schedule: every money
 * request whose outcome is unknown (answered 202, or whose Lambda died in flight) and every success
 * a notification reported that PayHere's records did not show, once due (the settle delay after its
 * window), is settled from PayHere's records: done, or not done, or looked at again later; and every
 * running subscription whose status a notification told of when its order could not be checked has
 * its standing read from PayHere's records (lib/orders/standings.ts).
 *
 * Its PayHere calls are idle work (lib/budget/limiter.ts): each takes a slot of the shared budget
 * only while the live reserve stays free beside it (all of it but one slot while no live call took
 * one for a window), paced, and waits for one no later than the run's end, so a backlog goes as
 * fast as what live calls leave, and a live call waits for it only behind another, briefly. A run is
 * bounded by its deadline (the Lambda's) and its limits; idempotent, since every record is claimed
 * before it is settled; it resumes where it stopped, oldest first: an item the run's bounds cut
 * short keeps its place, and what PayHere could not settle is looked at again behind what is due.
 */
export class SettleJob {
  readonly #store: IdempotencyStore;
  readonly #ledger: LedgerStore;
  readonly #money: MoneySettlement;
  readonly #reports: OrderReports;
  readonly #openCharges: OpenCharges | undefined;
  readonly #standings: SubscriptionStandings | undefined;
  readonly #limits: SettleLimits;
  readonly #calls: () => number;
  readonly #now: () => number;
  readonly #clock: () => number;

  constructor(options: {
    store: IdempotencyStore;
    ledger: LedgerStore;
    money: MoneySettlement;
    reports: OrderReports;
    /** The orders charges still hold open once no request can finish them (the backstop). */
    openCharges?: OpenCharges;
    /** The subscriptions whose standing a notification could not have read. */
    standings?: SubscriptionStandings;
    limits: SettleLimits;
    /** PayHere calls made so far (the job's capped transport counts them). */
    calls: () => number;
    /** When "now" is for what is due (tests move it past the settle delay). */
    now?: () => number;
    /**
     * The Lambda's clock, for the run's deadline and the records' locks; the budget's limiter must
     * run on the same one (tests and the bench run both on a virtual clock).
     */
    clock?: () => number;
  }) {
    this.#store = options.store;
    this.#ledger = options.ledger;
    this.#money = options.money;
    this.#reports = options.reports;
    this.#openCharges = options.openCharges;
    this.#standings = options.standings;
    this.#limits = options.limits;
    this.#calls = options.calls;
    this.#now = options.now ?? Date.now;
    this.#clock = options.clock ?? Date.now;
  }

  async run(deadline: number): Promise<SettleRun> {
    const run: SettleRun = {
      looked: 0,
      settled: 0,
      stillUnknown: 0,
      overAnHour: 0,
      interrupted: 0,
      backlog: false,
    };
    const now = this.#now();
    const { items } = this.#limits;
    const [keys, orders, open, standing] = await Promise.all([
      this.#store.due(now, items),
      this.#ledger.reportedDue(now, items),
      this.#openCharges ? this.#openCharges.due(now, items) : [],
      this.#standings ? this.#ledger.standingDue(now, items) : [],
    ]);
    // A full page of any may hide more.
    if ([keys, orders, open, standing].some((page) => page.length >= items)) run.backlog = true;
    // Requests, open charges, reports and standings in turn, each oldest first: a backlog of one
    // never starves another.
    const queue = alternate<Item>(
      alternate<Item>(
        keys.map((request) => ({ request })),
        open.map((charge) => ({ charge })),
      ),
      alternate<Item>(
        orders.map((report) => ({ report })),
        standing.map((order) => ({ standing: order })),
      ),
    );
    let next = 0;
    let started = 0;
    let inFlight = 0;
    let failed: { error: unknown } | undefined;
    // A call refused for the run's own bounds (no slot before its end, or its cap) means the next
    // item's would be too: claiming more would only put them back.
    let bounded = false;
    const worker = async () => {
      while (next < queue.length && !failed && !bounded) {
        if (!this.#room(started, inFlight, deadline)) {
          run.backlog = true;
          return;
        }
        const item = queue[next++]!;
        started++;
        inFlight++;
        const work: IdleWork = { until: deadline - RESERVE_MS, refused: false };
        try {
          await idleWork.run(work, () =>
            'request' in item
              ? this.#settleRequest(item.request, run, deadline, work)
              : 'charge' in item
                ? this.#settleOpenCharge(item.charge, run, deadline)
                : 'report' in item
                  ? this.#settleReport(item.report, run, deadline, work)
                  : this.#settleStanding(item.standing, run, deadline, work),
          );
        } catch (error) {
          failed ??= { error };
        } finally {
          inFlight--;
          if (work.refused) bounded = true;
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    if (failed) throw failed.error;
    if (bounded || run.interrupted > 0) run.backlog = true;
    if (run.overAnHour > 0) countMetric('UnknownOverAnHour', run.overAnHour);
    if (run.backlog) countMetric('SettleBacklog');
    log.info('settle run', { ...run, calls: this.#calls() });
    return run;
  }

  /**
   * Whether the run may start one more item: its limits and its time. Each item in flight will
   * probably make a PayHere call, so they count against the cap before they make it.
   */
  #room(started: number, inFlight: number, deadline: number): boolean {
    return (
      started < this.#limits.items &&
      this.#calls() + inFlight < this.#limits.calls &&
      this.#clock() < deadline - RESERVE_MS
    );
  }

  /** A money request's record: claimed (so a repeat of its key and another run do not race it), then settled. */
  async #settleRequest(key: string, run: SettleRun, deadline: number, work: IdleWork): Promise<void> {
    const record = await this.#store.get(key);
    const now = this.#now();
    // Gone, answered meanwhile, or still held by a live attempt (its lock is the Lambda's clock): nothing to settle.
    if (!record?.settle || record.state === 'complete') return;
    if (record.state === 'in_progress' && record.notSent) {
      // Its attempt provably sent nothing and could not delete it: there is nothing to settle (taken
      // for a lost request, a refund would be recorded as possibly made). Deleted, as its attempt
      // meant; a repeat of its key sends the request.
      await this.#store.release(record);
      return;
    }
    if (record.state === 'in_progress' && (record.lockedUntil ?? 0) > this.#clock()) return;
    run.looked++;
    let subject: MoneySubject;
    try {
      subject = JSON.parse(record.settle.subject) as MoneySubject;
    } catch (error) {
      log.error('a money request’s record holds no settlement subject', { error: describeError(error) });
      return;
    }
    const held = await this.#store.claim(record, deadline);
    if (!held) return;
    const operation = key.slice(0, key.indexOf('#'));
    const startedAt = record.startedAt;
    const { settled } = await settleHeld(
      this.#store,
      operation,
      held,
      record.state,
      () => this.#money.settle(subject, { key, startedAt }, deadline - RESERVE_MS),
      this.#money.nextLook(subject, { key, startedAt }, now),
    );
    if (settled) {
      run.settled++;
      countMetric('SettledRequest');
      return;
    }
    if (work.refused) {
      // PayHere was never asked: the record goes back to when it was due, ahead of what came later.
      run.interrupted++;
      await this.#store.postpone(held, record.settle.at);
      return;
    }
    run.stillUnknown++;
    if (now - startedAt > HOUR_MS) run.overAnHour++;
  }

  /** An order a charge still holds open: settled from PayHere's records once no request can. */
  async #settleOpenCharge(orderId: string, run: SettleRun, deadline: number): Promise<void> {
    const looked = await this.#openCharges!.settle(orderId, deadline - RESERVE_MS);
    if (looked.outcome === 'settled') {
      run.looked++;
      run.settled++;
      countMetric('SettledOpenCharge');
    } else if (looked.outcome === 'waiting' || looked.outcome === 'open') {
      run.looked++;
      run.stillUnknown++;
      // PayHere's records could not settle it (a search that keeps failing or answering pending).
      if (looked.outcome === 'open' && this.#now() - looked.sentAt > HOUR_MS) run.overAnHour++;
    }
  }

  /** An order whose success a notification reported: confirmed, refuted after the delay, or looked at later. */
  async #settleReport(orderId: string, run: SettleRun, deadline: number, work: IdleWork): Promise<void> {
    const order = await this.#ledger.getOrder(orderId);
    if (!order || order.reportedAt === null) return;
    run.looked++;
    const settled = await this.#reports.settle(order, deadline - RESERVE_MS);
    if (settled.reportedAt === null) {
      run.settled++;
      countMetric('SettledReport');
      return;
    }
    // Cut short by the run's bounds: left where it is in the queue.
    if (work.refused) {
      run.interrupted++;
      return;
    }
    run.stillUnknown++;
    if (this.#now() - order.reportedAt > HOUR_MS) run.overAnHour++;
    await this.#ledger.postponeReport(orderId, this.#now() + LOOK_AGAIN_MS);
  }

  /** A subscription whose standing a notification could not have read: read now, or looked at later. */
  async #settleStanding(orderId: string, run: SettleRun, deadline: number, work: IdleWork): Promise<void> {
    const order = await this.#ledger.getOrder(orderId);
    const at = order?.standingCheckAt ?? null;
    // Checked by another run meanwhile, or asked again for later.
    if (!order || at === null || at > this.#now()) return;
    run.looked++;
    if ((await this.#standings!.settle(order, at, deadline - RESERVE_MS, this.#now())) === 'settled') {
      run.settled++;
      return;
    }
    if (work.refused) {
      run.interrupted++;
      return;
    }
    run.stillUnknown++;
    if (this.#now() - (order.standingSince ?? at) > HOUR_MS) run.overAnHour++;
    await this.#ledger.postponeStanding(orderId, at, this.#now() + LOOK_AGAIN_MS);
  }
}

/** `a` and `b` taken in turn, each in its own order. */
function alternate<T>(a: readonly T[], b: readonly T[]): T[] {
  const merged: T[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (i < a.length) merged.push(a[i]!);
    if (i < b.length) merged.push(b[i]!);
  }
  return merged;
}
