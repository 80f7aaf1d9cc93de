import { ForbiddenError, InvalidRequestError, notSent } from '../envelope/errors.ts';
import { NoPaymentsError } from '../gateway/answers.ts';
import type { PayHere } from '../gateway/payhere.ts';
import type { PaymentRecord } from '../gateway/schemas.ts';
import type { OrderKind, OrderState } from '../ledger/model.ts';
import type { LedgerReconciliationReads } from '../ledger/reconciliation.ts';
import type { ListedOrder, PaymentRefunds } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { inBackground } from '../net/background.ts';
import type { RefundStatuses } from '../reads/refund-statuses.ts';
import type { CheckedPayment, PaymentSnapshot, PaymentSnapshots } from '../reads/snapshots.ts';
import { MAX_REPORT_DAYS, type ReconciliationQuery } from '../schemas/reports.ts';
import { type Actor, readLedger } from './access.ts';
import { gatewayId } from './checkout.ts';

/** The most orders one report covers: beyond it, the caller asks for fewer days. */
export const MAX_REPORT_ORDERS = 2_000;
const DAY_MS = 86_400_000;
/** Time kept back from the request's deadline to keep what PayHere answered and to answer. */
const ANSWER_RESERVE_MS = 2_000;
/**
 * The longest a request's searches wait for PayHere's budget and answer: a search the budget cannot
 * serve by then leaves its order for the next request rather than keeping the report waiting.
 */
export const CHECK_WAIT_MS = 8_000;
/** The most orders RECONCILIATION_CHECKS may let one request search. */
export const MAX_CHECKS = 20;

/** A difference between the ledger and PayHere's records (docs/contract.md "Reconciliation"). */
export type DifferenceKind = 'payment_not_in_ledger' | 'payment_not_at_payhere' | 'amount_differs';

/** Why an order of the report has no comparison yet. */
export type UncheckedReason = 'not_checked' | 'changed_since_check' | 'charge_in_flight';

export interface PaidOrderLine {
  order_id: string;
  kind: OrderKind;
  customer: string;
  /** The ledger's state: `succeeded`, or `chargedback` (paid, then charged back). */
  status: OrderState;
  currency: string;
  amount: number | null;
  payment_id: number | string | null;
}

export interface PaymentLine {
  order_id: string;
  payment_id: number | string;
  /** PayHere's status of the payment (RECEIVED, REFUNDED, CHARGEBACK, ...). */
  status: string;
  currency: string;
  amount: number;
  /** From PayHere's `amount_detail`: what was paid, PayHere's fee, and what the merchant gets. */
  gross: number | null;
  fee: number | null;
  net: number | null;
  /**
   * The currency gross, fee and net are in (`amount_detail`'s): for a payment in another currency,
   * the one PayHere settles it in; the payment's own when PayHere does not say.
   */
  settlement_currency: string;
  /** PayHere's date of the payment (its own clock, Sri Lanka time), as it wrote it. */
  date: string | null;
  /** The ledger records this payment as its order's. */
  in_ledger: boolean;
  /** When PayHere's records were read for this line. */
  checked_at: string;
}

export interface RefundLine {
  order_id: string;
  payment_id: number | string;
  /** What was refunded; for a full refund, what was left then (null when not known). */
  amount: number | null;
  full: boolean;
  at: string;
  refund_id: number | null;
  status: 'accepted' | 'in_flight';
}

export interface DifferenceLine {
  kind: DifferenceKind;
  order_id: string;
  payment_id: number | string | null;
  /** The ledger's state of the order. */
  ledger_status: OrderState;
  currency: string;
  /** The ledger's amount of the order, and PayHere's of the payment (null where either has none). */
  ledger_amount: number | null;
  payhere_amount: number | null;
  /** What to do about it. */
  action: string;
  checked_at: string;
}

export interface UncheckedLine {
  order_id: string;
  status: OrderState;
  reason: UncheckedReason;
  /** The last time PayHere's records were read for this order, if ever. */
  checked_at: string | null;
}

export interface DayTotal {
  currency: string;
  /** The orders the ledger shows paid, and their amount. */
  orders_paid: number;
  ordered: number;
  /** PayHere's payments of the day's orders as checked: gross, fee, net (from `amount_detail`). */
  payments: number;
  gross: number;
  fee: number;
  net: number;
  /** Refunds PayHere accepted through the service, and their amount. */
  refunds: number;
  refunded: number;
}

export interface ReportDay {
  /** The UTC day the orders were created (the ledger's order list by creation time). */
  date: string;
  totals: DayTotal[];
  orders_paid: PaidOrderLine[];
  payments: PaymentLine[];
  refunds: RefundLine[];
  differences: DifferenceLine[];
  unchecked: UncheckedLine[];
}

export interface ReconciliationReport {
  from: string;
  to: string;
  time_zone: 'UTC';
  generated_at: string;
  /** Every order of the range has been compared with PayHere's records (no unchecked lines). */
  complete: boolean;
  /** Orders created in the range, those compared with PayHere (every kind but pre-approvals), and those not yet. */
  orders: number;
  checked: number;
  unchecked: number;
  /** Orders this request read from PayHere (at most RECONCILIATION_CHECKS). */
  checked_now: number;
  /** The oldest comparison the report uses; null when none. */
  oldest_check: string | null;
  days: ReportDay[];
}

export interface ReconciliationOptions {
  ledger: LedgerReconciliationReads;
  snapshots: PaymentSnapshots;
  payhere: PayHere;
  /** Orders one request may read from PayHere (RECONCILIATION_CHECKS); 0: never. */
  checks: number;
  /** A comparison older than this is read again when a request has calls to spare (RECONCILIATION_MAX_AGE_SECONDS). */
  maxAgeMs: number;
  /** Where PayHere's status of the refunded payments its searches read is kept (none: not kept). */
  refundStatuses?: RefundStatuses;
  now?: () => number;
}

const PAID: ReadonlySet<OrderState> = new Set(['succeeded', 'chargedback']);
/** Kinds whose ledger keeps the order's one payment id: a payment or a charge of a saved card. */
const ONE_PAYMENT: ReadonlySet<OrderKind> = new Set(['payment', 'charge']);

/**
 * The reconciliation report (GET /gateway/api/reports/reconciliation, the merchant's only): per UTC
 * day of the orders' creation, the orders the ledger shows paid, PayHere's payments of those orders
 * with gross, fee and net, the refunds sent through the service, and every difference between the
 * ledger and PayHere's records, with what to do about it.
 *
 * PayHere can only be searched by order id, so comparing a range costs a search per order. The
 * report therefore compares the ledger with snapshots of PayHere's records (lib/reads/snapshots.ts),
 * and each request reads at most `checks` orders from PayHere, within the merchant's share of the
 * budget, those never compared or changed since first: a report over hundreds of orders is filled
 * in over as many requests as it needs, each line saying when PayHere was read for it, and no
 * request waits on hundreds of calls. The range's orders come from the ledger's order list by
 * creation time, never a scan.
 */
export class ReconciliationReports {
  readonly #ledger: LedgerReconciliationReads;
  readonly #snapshots: PaymentSnapshots;
  readonly #payhere: PayHere;
  readonly #checks: number;
  readonly #maxAgeMs: number;
  readonly #refundStatuses: RefundStatuses | undefined;
  readonly #now: () => number;

  constructor(options: ReconciliationOptions) {
    this.#ledger = options.ledger;
    this.#snapshots = options.snapshots;
    this.#payhere = options.payhere;
    this.#checks = options.checks;
    this.#maxAgeMs = options.maxAgeMs;
    this.#refundStatuses = options.refundStatuses;
    this.#now = options.now ?? Date.now;
  }

  async report(actor: Actor, query: ReconciliationQuery, deadline: number): Promise<ReconciliationReport> {
    if (actor.role !== 'merchant')
      throw notSent(new ForbiddenError('Only the merchant reads reconciliation reports.'));
    const from = Date.parse(`${query.from}T00:00:00Z`);
    const before = Date.parse(`${query.to}T00:00:00Z`) + DAY_MS;
    if (before <= from) throw invalidRange('query.to', 'must be the same day as from or later');
    if (before - from > MAX_REPORT_DAYS * DAY_MS)
      throw invalidRange('query.to', `must be at most ${MAX_REPORT_DAYS - 1} days after from`);
    const range = await readLedger(() => this.#ledger.ordersCreated(from, before, MAX_REPORT_ORDERS));
    if (range.more)
      throw invalidRange(
        'query.from',
        `the range holds more than ${MAX_REPORT_ORDERS} orders: ask for fewer days at a time`,
      );
    // Pre-approvals never have a payment: nothing of theirs to compare.
    const compared = range.orders.filter((order) => order.kind !== 'preapproval');
    const snapshots = await readLedger(() => this.#snapshots.get(compared.map((order) => order.orderId)));
    const readNow = await this.#check(this.#due(compared, snapshots), snapshots, deadline);
    const paidPayments = compared.flatMap((order) =>
      PAID.has(order.state) && order.paymentId !== null ? [order.paymentId] : [],
    );
    const refunds = await readLedger(() => this.#ledger.refundsOf(paidPayments));
    this.#refundsRead(readNow, refunds);
    return this.#build(query, range.orders, compared, snapshots, refunds, readNow.length);
  }

  /**
   * PayHere's status of the refunded payments this request's searches read, kept on their refund
   * items after the answer (lib/reads/refund-statuses.ts): the ledger's refund items were read
   * after the searches, so only a status that changes what is kept is written.
   */
  #refundsRead(readNow: readonly PaymentSnapshot[], refunds: ReadonlyMap<string, PaymentRefunds>): void {
    const statuses = this.#refundStatuses;
    if (!statuses || readNow.length === 0) return;
    inBackground(() =>
      Promise.all(readNow.map((snapshot) => statuses.seen(snapshot.payments, snapshot.checkedAt, refunds))),
    );
  }

  /** The orders to read from PayHere now, most needed first: never compared, changed since, then the oldest. */
  #due(orders: readonly ListedOrder[], snapshots: ReadonlyMap<string, PaymentSnapshot>): ListedOrder[] {
    const now = this.#now();
    const rank = (order: ListedOrder): number | undefined => {
      if (order.chargeInFlight) return undefined;
      const snapshot = snapshots.get(order.orderId);
      if (!snapshot) return 0;
      if (!usable(order, snapshot)) return 1;
      return now - snapshot.checkedAt >= this.#maxAgeMs ? 2 : undefined;
    };
    return orders
      .flatMap((order) => {
        const r = rank(order);
        return r === undefined ? [] : [{ order, r, at: snapshots.get(order.orderId)?.checkedAt ?? 0 }];
      })
      .sort((a, b) => a.r - b.r || a.at - b.at || a.order.createdAt - b.order.createdAt)
      .slice(0, this.#checks)
      .map(({ order }) => order);
  }

  /**
   * Read `due` from PayHere, all at once (at most `checks` of them), as the merchant's calls: each
   * answer kept as the order's snapshot. An order PayHere could not answer for now (its budget, a
   * pending answer, a failure) stays as it was, for a later request. Returns the snapshots read.
   */
  async #check(
    due: readonly ListedOrder[],
    snapshots: Map<string, PaymentSnapshot>,
    deadline: number,
  ): Promise<PaymentSnapshot[]> {
    const until = Math.min(deadline - ANSWER_RESERVE_MS, this.#now() + CHECK_WAIT_MS);
    const read: PaymentSnapshot[] = [];
    await Promise.all(
      due.map(async (order) => {
        const checkedAt = this.#now();
        if (checkedAt >= until) return;
        let payments: CheckedPayment[];
        try {
          const answer = await this.#payhere.paymentsOfOrder(order.orderId, until);
          if (answer.pending) return;
          payments = answer.data.map(checked);
        } catch (error) {
          if (!(error instanceof NoPaymentsError)) {
            log.info('reconciliation: PayHere did not answer for an order', {
              orderId: order.orderId,
              error: describeError(error),
            });
            return;
          }
          payments = [];
        }
        const snapshot: PaymentSnapshot = {
          orderId: order.orderId,
          checkedAt,
          ledgerVersion: versionOf(order),
          payments,
        };
        snapshots.set(order.orderId, snapshot);
        read.push(snapshot);
        try {
          await this.#snapshots.put(snapshot);
        } catch (error) {
          // This answer still counts; the next request reads the order again.
          log.warn('reconciliation: a snapshot could not be kept', { error: describeError(error) });
        }
      }),
    );
    return read;
  }

  #build(
    query: ReconciliationQuery,
    all: readonly ListedOrder[],
    compared: readonly ListedOrder[],
    snapshots: ReadonlyMap<string, PaymentSnapshot>,
    refunds: ReadonlyMap<string, PaymentRefunds>,
    checkedNow: number,
  ): ReconciliationReport {
    const days = new Map<string, ReportDay>();
    const dayOf = (order: ListedOrder): ReportDay => {
      const date = new Date(order.createdAt).toISOString().slice(0, 10);
      let day = days.get(date);
      if (!day) {
        day = {
          date,
          totals: [],
          orders_paid: [],
          payments: [],
          refunds: [],
          differences: [],
          unchecked: [],
        };
        days.set(date, day);
      }
      return day;
    };
    let checked = 0;
    let oldest: number | undefined;
    for (const order of compared) {
      const day = dayOf(order);
      if (PAID.has(order.state)) day.orders_paid.push(paidLine(order));
      const paymentRefunds = order.paymentId === null ? undefined : refunds.get(order.paymentId);
      if (PAID.has(order.state) && paymentRefunds) day.refunds.push(...refundLines(order, paymentRefunds));
      const snapshot = snapshots.get(order.orderId);
      if (order.chargeInFlight || !snapshot || !usable(order, snapshot)) {
        day.unchecked.push({
          order_id: order.orderId,
          status: order.state,
          reason: order.chargeInFlight
            ? 'charge_in_flight'
            : snapshot
              ? 'changed_since_check'
              : 'not_checked',
          checked_at: snapshot ? iso(snapshot.checkedAt) : null,
        });
        continue;
      }
      checked++;
      oldest = Math.min(oldest ?? snapshot.checkedAt, snapshot.checkedAt);
      const at = iso(snapshot.checkedAt);
      for (const payment of snapshot.payments) {
        day.payments.push({
          order_id: order.orderId,
          payment_id: gatewayId(payment.payment_id)!,
          status: payment.status,
          currency: payment.currency,
          amount: payment.amount,
          gross: payment.gross,
          fee: payment.fee,
          net: payment.net,
          settlement_currency: payment.settlement_currency ?? payment.currency,
          date: payment.date,
          in_ledger: payment.payment_id === order.paymentId,
          checked_at: at,
        });
      }
      day.differences.push(...differences(order, snapshot));
    }
    for (const day of days.values()) day.totals = totals(day);
    const unchecked = compared.length - checked;
    return {
      from: query.from,
      to: query.to,
      time_zone: 'UTC',
      generated_at: iso(this.#now()),
      complete: unchecked === 0,
      orders: all.length,
      checked,
      unchecked,
      checked_now: checkedNow,
      oldest_check: oldest === undefined ? null : iso(oldest),
      days: [...days.values()].sort((a, b) => a.date.localeCompare(b.date)),
    };
  }
}

/**
 * The order as the ledger had it, in what a comparison reads: its last change, state, payment and
 * price. A snapshot is taken against the version read before its search was sent.
 */
function versionOf(order: ListedOrder): string {
  return [order.updatedAt, order.state, order.paymentId ?? '', order.amountCents ?? '', order.currency].join(
    '|',
  );
}

/**
 * A snapshot compares with the order only while the ledger still has the version of it that the
 * search was sent against: the ledger did not change the order while or since PayHere was read.
 * No clocks are compared (the containers' may differ), only what the ledger wrote.
 */
function usable(order: ListedOrder, snapshot: PaymentSnapshot): boolean {
  return snapshot.ledgerVersion === versionOf(order);
}

function invalidRange(path: string, message: string): InvalidRequestError {
  return notSent(new InvalidRequestError([{ path, message }]));
}

const iso = (at: number) => new Date(at).toISOString();
const cents = (amount: number) => Math.round(amount * 100);
const fromCents = (value: number | null) => (value === null ? null : value / 100);

/** A payment record as a snapshot keeps it: what the report shows, `amount_detail` read if it is there. */
function checked(record: PaymentRecord): CheckedPayment {
  const detail = (record as { amount_detail?: unknown }).amount_detail;
  const field = (name: string): number | null => {
    const value = (detail as Record<string, unknown> | null | undefined)?.[name];
    return typeof value === 'number' && Number.isFinite(value) ? value : null;
  };
  const date = (record as { date?: unknown }).date;
  const settlement = (detail as { currency?: unknown } | null | undefined)?.currency;
  return {
    payment_id: String(record.payment_id),
    status: record.status,
    currency: record.currency,
    amount: record.amount,
    gross: field('gross'),
    fee: field('fee'),
    net: field('net'),
    settlement_currency: typeof settlement === 'string' && /^[A-Z]{3}$/.test(settlement) ? settlement : null,
    date: typeof date === 'string' ? date : null,
  };
}

function paidLine(order: ListedOrder): PaidOrderLine {
  return {
    order_id: order.orderId,
    kind: order.kind,
    customer: order.owner,
    status: order.state,
    currency: order.currency,
    amount: fromCents(order.amountCents),
    payment_id: gatewayId(order.paymentId),
  };
}

function refundLines(order: ListedOrder, refunds: PaymentRefunds): RefundLine[] {
  const payment = gatewayId(refunds.paymentId)!;
  let partialsBefore = 0;
  const lines: RefundLine[] = refunds.accepted.map((refund) => {
    const amount =
      refund.amountCents ??
      (order.amountCents === null ? null : Math.max(0, order.amountCents - partialsBefore));
    if (refund.amountCents !== null) partialsBefore += refund.amountCents;
    return {
      order_id: order.orderId,
      payment_id: payment,
      amount: fromCents(amount),
      full: refund.amountCents === null,
      at: iso(refund.at),
      refund_id: refund.refundId,
      status: 'accepted',
    };
  });
  if (refunds.inflight)
    lines.push({
      order_id: order.orderId,
      payment_id: payment,
      amount: fromCents(refunds.inflight.amountCents),
      full: refunds.inflight.amountCents === null,
      at: iso(refunds.inflight.takenAt),
      refund_id: null,
      status: 'in_flight',
    });
  return lines;
}

const money = (amount: number | null, currency: string) =>
  amount === null ? 'no amount' : `${amount.toFixed(2)} ${currency}`;

/**
 * The differences between the order as the ledger has it and PayHere's payments of it, each with
 * what to do. PayHere's search shows an order's successful payments. A subscription's order shows
 * its installments and a hold's the payment of its capture, which the ledger does not keep as the
 * order's payment id: for those, a payment of an order the ledger has unpaid differs, and for a
 * subscription no payment at all of one it has paid (a hold shows none until it is captured).
 */
export function differences(order: ListedOrder, snapshot: PaymentSnapshot): DifferenceLine[] {
  const found: DifferenceLine[] = [];
  const paid = PAID.has(order.state);
  const ledgerAmount = fromCents(order.amountCents);
  const line = (
    kind: DifferenceKind,
    payment: CheckedPayment | undefined,
    action: string,
  ): DifferenceLine => ({
    kind,
    order_id: order.orderId,
    payment_id: gatewayId(payment?.payment_id ?? order.paymentId),
    ledger_status: order.state,
    currency: payment?.currency ?? order.currency,
    ledger_amount: ledgerAmount,
    payhere_amount: payment ? payment.amount : null,
    action,
    checked_at: iso(snapshot.checkedAt),
  });
  const id = order.orderId;
  const oneId = ONE_PAYMENT.has(order.kind);
  const others = snapshot.payments.filter((payment) =>
    oneId ? payment.payment_id !== order.paymentId : !paid,
  );
  for (const payment of others) {
    const what = `payment ${payment.payment_id} of ${money(payment.amount, payment.currency)}`;
    found.push(
      line(
        'payment_not_in_ledger',
        payment,
        paid
          ? `PayHere holds ${what} for order ${id} besides the ledger's payment ${order.paymentId ?? ''}`.trimEnd() +
              ': the customer paid twice. Unless that was meant, refund it (POST /gateway/api/payments/refund).'
          : order.state === 'unknown' || order.state === 'pending'
            ? `PayHere holds ${what} for order ${id}, which the ledger has ${order.state}: the settle job settles it from PayHere's records within minutes (GET /gateway/api/checkouts/${id} shows it). Do not charge the order again; run the report again then.`
            : order.state === 'created'
              ? `PayHere holds ${what} for order ${id}, whose notification never reached the service: GET /gateway/api/checkouts/${id} looks it up and records it. Fulfil the order once it shows succeeded.`
              : `PayHere holds ${what} for order ${id}, which the ledger has ${order.state} (not paid): check it in PayHere's portal, then fulfil the order or refund the payment (POST /gateway/api/payments/refund).`,
      ),
    );
  }
  // A hold PayHere authorized shows no payment until it is captured.
  if (!paid || order.kind === 'authorize') return found;
  const own = snapshot.payments.find((payment) => payment.payment_id === order.paymentId);
  const shown = oneId ? own : snapshot.payments[0];
  if (!shown) {
    found.push(
      line(
        'payment_not_at_payhere',
        undefined,
        `The ledger has order ${id} paid${order.paymentId ? ` by payment ${order.paymentId}` : ''}, but PayHere's records of the order show ${oneId && snapshot.payments.length > 0 ? 'other payments only' : 'no payment'}: do not ship it until PayHere's portal shows the payment; if it never does, the order is not paid.`,
      ),
    );
    return found;
  }
  if (
    oneId &&
    (shown.currency !== order.currency ||
      order.amountCents === null ||
      cents(shown.amount) !== order.amountCents)
  ) {
    const more =
      order.amountCents !== null &&
      shown.currency === order.currency &&
      cents(shown.amount) > order.amountCents;
    found.push(
      line(
        'amount_differs',
        shown,
        `PayHere took ${money(shown.amount, shown.currency)} for payment ${shown.payment_id}; the ledger's price of order ${id} is ${money(ledgerAmount, order.currency)}: ${
          more
            ? 'refund the difference (POST /gateway/api/payments/refund with its amount).'
            : 'collect the rest from the customer, or accept what was paid.'
        }`,
      ),
    );
  }
  return found;
}

/** A day's totals, one per currency. */
function totals(day: ReportDay): DayTotal[] {
  const byCurrency = new Map<string, DayTotal>();
  const of = (currency: string) => {
    let total = byCurrency.get(currency);
    if (!total) {
      total = {
        currency,
        orders_paid: 0,
        ordered: 0,
        payments: 0,
        gross: 0,
        fee: 0,
        net: 0,
        refunds: 0,
        refunded: 0,
      };
      byCurrency.set(currency, total);
    }
    return total;
  };
  const add = (a: number, b: number | null) =>
    b === null ? a : (Math.round(a * 100) + Math.round(b * 100)) / 100;
  for (const order of day.orders_paid) {
    const total = of(order.currency);
    total.orders_paid++;
    total.ordered = add(total.ordered, order.amount);
  }
  for (const payment of day.payments) {
    of(payment.currency).payments++;
    // PayHere's amounts are added in the currency they are in, not the payment's.
    const settled = of(payment.settlement_currency);
    settled.gross = add(settled.gross, payment.gross);
    settled.fee = add(settled.fee, payment.fee);
    settled.net = add(settled.net, payment.net);
  }
  const currencyOf = new Map(day.orders_paid.map((order) => [order.order_id, order.currency]));
  for (const refund of day.refunds) {
    if (refund.status !== 'accepted') continue;
    const total = of(currencyOf.get(refund.order_id) ?? '');
    total.refunds++;
    total.refunded = add(total.refunded, refund.amount);
  }
  return [...byCurrency.values()].sort((a, b) => a.currency.localeCompare(b.currency));
}
