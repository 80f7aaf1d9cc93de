import { settleHeld } from '../idempotency/idempotent.ts';
import type { IdempotencyStore } from '../idempotency/store.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import type { OrderReports } from '../orders/reports.ts';
import { LOOK_AGAIN_MS, type MoneySettlement, type MoneySubject } from './money.ts';
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
  /** More was due than the run's limits allowed: the next run goes on. */
  backlog: boolean;
}

const HOUR_MS = 3_600_000;
/** Time kept back from the run's deadline to record what it learned. */
const RESERVE_MS = 3_000;

/**
 * The settle job (docs/contract.md "Every unknown resolves"), run on a schedule: every money
 * request whose outcome is unknown (answered 202, or whose Lambda died in flight) and every success
 * a notification reported that PayHere's records did not show, once due (the settle delay after its
 * window), is settled from PayHere's records: done, or not done, or looked at again later. Bounded
 * per run in items and PayHere calls (drawn on the budget's reserved share); idempotent, since
 * every record is claimed before it is settled; resumes where it stopped, since what it could not
 * settle is postponed and the oldest due come first.
 */
export class SettleJob {
  readonly #store: IdempotencyStore;
  readonly #ledger: LedgerStore;
  readonly #money: MoneySettlement;
  readonly #reports: OrderReports;
  readonly #openCharges: OpenCharges | undefined;
  readonly #limits: SettleLimits;
  readonly #calls: () => number;
  readonly #now: () => number;

  constructor(options: {
    store: IdempotencyStore;
    ledger: LedgerStore;
    money: MoneySettlement;
    reports: OrderReports;
    /** The orders charges still hold open once no request can finish them (the backstop). */
    openCharges?: OpenCharges;
    limits: SettleLimits;
    /** PayHere calls made so far (the job's capped transport counts them). */
    calls: () => number;
    /** When "now" is for what is due (tests move it past the settle delay); deadlines are the Lambda's. */
    now?: () => number;
  }) {
    this.#store = options.store;
    this.#ledger = options.ledger;
    this.#money = options.money;
    this.#reports = options.reports;
    this.#openCharges = options.openCharges;
    this.#limits = options.limits;
    this.#calls = options.calls;
    this.#now = options.now ?? Date.now;
  }

  async run(deadline: number): Promise<SettleRun> {
    const run: SettleRun = { looked: 0, settled: 0, stillUnknown: 0, overAnHour: 0, backlog: false };
    const now = this.#now();
    const keys = await this.#store.due(now, this.#limits.items);
    for (const key of keys) {
      if (!this.#room(run, deadline)) break;
      await this.#settleRequest(key, run, deadline);
    }
    const open = this.#openCharges
      ? await this.#openCharges.due(now, Math.max(0, this.#limits.items - run.looked))
      : [];
    for (const orderId of open) {
      if (!this.#room(run, deadline)) break;
      await this.#settleOpenCharge(orderId, run, deadline);
    }
    const orders = await this.#ledger.reportedDue(now, Math.max(0, this.#limits.items - run.looked));
    for (const orderId of orders) {
      if (!this.#room(run, deadline)) break;
      await this.#settleReport(orderId, run, deadline);
    }
    // A full page of either may hide more.
    if (keys.length >= this.#limits.items || (orders.length > 0 && run.looked >= this.#limits.items))
      run.backlog = true;
    if (run.overAnHour > 0) countMetric('UnknownOverAnHour', run.overAnHour);
    if (run.backlog) countMetric('SettleBacklog');
    log.info('settle run', { ...run, calls: this.#calls() });
    return run;
  }

  /** Whether the run may look at one more item: its limits and its time (the Lambda's own clock). */
  #room(run: SettleRun, deadline: number): boolean {
    const room =
      run.looked < this.#limits.items &&
      this.#calls() < this.#limits.calls &&
      Date.now() < deadline - RESERVE_MS;
    if (!room) run.backlog = true;
    return room;
  }

  /** A money request's record: claimed (so a repeat of its key and another run do not race it), then settled. */
  async #settleRequest(key: string, run: SettleRun, deadline: number): Promise<void> {
    const record = await this.#store.get(key);
    const now = this.#now();
    // Gone, answered meanwhile, or still held by a live attempt (its lock is the Lambda's clock): nothing to settle.
    if (!record?.settle || record.state === 'complete') return;
    if (record.state === 'in_progress' && (record.lockedUntil ?? 0) > Date.now()) return;
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
    run.stillUnknown++;
    if (now - startedAt > HOUR_MS) run.overAnHour++;
  }

  /** An order a charge still holds open: settled from PayHere's records once no request can. */
  async #settleOpenCharge(orderId: string, run: SettleRun, deadline: number): Promise<void> {
    const outcome = await this.#openCharges!.settle(orderId, deadline - RESERVE_MS);
    if (outcome === 'settled') {
      run.looked++;
      run.settled++;
      countMetric('SettledOpenCharge');
    } else if (outcome === 'open') {
      run.looked++;
      run.stillUnknown++;
    }
  }

  /** An order whose success a notification reported: confirmed, refuted after the delay, or looked at later. */
  async #settleReport(orderId: string, run: SettleRun, deadline: number): Promise<void> {
    const order = await this.#ledger.getOrder(orderId);
    if (!order || order.reportedAt === null) return;
    run.looked++;
    const settled = await this.#reports.settle(order, deadline - RESERVE_MS);
    if (settled.reportedAt === null) {
      run.settled++;
      countMetric('SettledReport');
      return;
    }
    run.stillUnknown++;
    if (this.#now() - order.reportedAt > HOUR_MS) run.overAnHour++;
    await this.#ledger.postponeReport(orderId, this.#now() + LOOK_AGAIN_MS);
  }
}
