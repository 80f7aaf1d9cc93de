import type { Order } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { audit } from '../log/audit.ts';
import { log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import type { Confirmations } from './confirmations.ts';
import { installmentPaid } from './events.ts';
import { type Applied, applyEvidence, type Evidence, type Recorded } from './evidence.ts';

/**
 * docs/contract.md "PayHere's budget": an order's payments are fresh for 10 s; an order is
 * checked at most that often.
 */
export const REFRESH_INTERVAL_MS = 10_000;

/**
 * An order checked against PayHere's own records: a success a notification reported (the order is
 * `pending` until the records show it, or, once the settle delay has passed, settled as not done),
 * installments reported, and a payment order that is not final. What PayHere cannot answer now
 * stays as it is.
 */
export class OrderReports {
  readonly #ledger: LedgerStore;
  readonly #confirmations: Confirmations;
  readonly #keepSeconds: number;
  readonly #now: () => number;

  constructor(options: {
    ledger: LedgerStore;
    confirmations: Confirmations;
    /** How long a subscription on other terms is kept apart for the operator. */
    keepDays: number;
    now?: () => number;
  }) {
    this.#ledger = options.ledger;
    this.#confirmations = options.confirmations;
    this.#keepSeconds = options.keepDays * 86_400;
    this.#now = options.now ?? Date.now;
  }

  /**
   * getCheckout's read: the order as PayHere's records show it now, asking PayHere at most every
   * REFRESH_INTERVAL_MS per order for all readers together (each call counts against the merchant's
   * 20 per 10 s, and a viewer must not be able to spend them at will).
   */
  async refresh(order: Order, deadline: number): Promise<Order> {
    const reported = order.reportedAt !== null || order.reported.installmentsPaid !== null;
    const notFinal = order.state === 'created' || order.state === 'pending' || order.state === 'unknown';
    const paid = order.kind === 'payment' || order.kind === 'charge';
    if (!reported && !(paid && notFinal && !order.charge?.inflight)) return order;
    if (!(await this.#ledger.claimCheck(order.orderId, REFRESH_INTERVAL_MS))) return order;
    let current = order;
    if (order.reportedAt !== null) {
      current = await this.settle(order, deadline);
    } else if (paid && notFinal && !order.charge?.inflight) {
      const found = await this.#confirmations.paymentOfOrder(order, null, deadline);
      if (typeof found === 'object') current = await this.#paid(order, String(found.payment.payment_id));
    }
    if (current.reported.installmentsPaid !== null && current.subscriptionId) {
      const paidInstallments = await this.#confirmations.installmentsPaid(
        current,
        current.subscriptionId,
        deadline,
      );
      if (paidInstallments === undefined) return current;
      if (
        await this.#ledger.confirmInstallments(current.orderId, paidInstallments, undefined, [
          installmentPaid(current, paidInstallments, current.nextInstallment),
        ])
      )
        return (await this.#ledger.getOrder(current.orderId)) ?? current;
      // PayHere's records show nothing the ledger does not have: the report goes, or every view
      // would ask PayHere again for it (a variant notification's count, say), for good once the
      // subscription has ended.
      if ((current.installmentsPaid ?? 0) >= paidInstallments)
        await this.#ledger.dropInstallmentsReport(current.orderId, current.reported.installmentsPaid);
    }
    return current;
  }

  /**
   * A reported success checked with PayHere's records: confirmed if they show it; once the settle
   * delay has passed (the report's `settleAt`), settled as not done if they do not. The order as it
   * now is (unchanged when PayHere could not be asked).
   */
  async settle(order: Order, deadline: number): Promise<Order> {
    const final = (order.settleAt ?? Number.POSITIVE_INFINITY) <= this.#now();
    if (order.kind === 'recurring') {
      const subscriptionId = order.reported.subscriptionId;
      const found = subscriptionId
        ? await this.#confirmations.subscriptionOfOrder(order, subscriptionId, deadline)
        : 'none';
      if (found === undefined) return order;
      if (typeof found === 'object' && subscriptionId) {
        const reference = { orderId: order.orderId, owner: order.owner };
        if (await this.#ledger.link('subscription', subscriptionId, reference)) {
          await this.#ledger.addSubscription(order.owner, subscriptionId);
          // The reported notification's next installment date, now that PayHere's records confirm it.
          const next = order.reported.nextInstallment;
          return this.#apply(order, 'records_show_subscription', {
            subscriptionId,
            ...(next ? { nextInstallment: next } : {}),
          });
        }
      }
      if (found === 'other_terms') {
        await this.#ledger.recordUnmatched(
          {
            reason: 'terms_mismatch',
            orderId: order.orderId,
            statusCode: '2',
            amount: ((order.amountCents ?? 0) / 100).toFixed(2),
            currency: order.currency,
            fields: { subscription_id: subscriptionId ?? '' },
          },
          Math.ceil(this.#now() / 1000) + this.#keepSeconds,
        );
        countMetric('NotificationTermsMismatch');
        return this.#apply(order, 'report_unconfirmed');
      }
      return final ? this.#apply(order, 'report_unconfirmed') : order;
    }
    const found = await this.#confirmations.paymentOfOrder(order, order.reported.paymentId, deadline);
    if (found === undefined) return order;
    if (typeof found === 'object') return this.#paid(order, String(found.payment.payment_id));
    // Several received payments of the order's amount: it is paid; which one is for the merchant.
    if (found === 'several') {
      log.warn('several payments could be the reported one: the order is paid', { orderId: order.orderId });
      return this.#apply(order, 'records_show_payment');
    }
    return final ? this.#apply(order, 'report_unconfirmed') : order;
  }

  /** PayHere's records show `paymentId` as the order's payment: indexed (to its charge, if any), then applied. */
  async #paid(order: Order, paymentId: string): Promise<Order> {
    const reference = { orderId: order.orderId, owner: order.owner };
    const linked =
      (await this.#ledger.link('payment', paymentId, reference, order.charge?.key)) ||
      (await this.#ledger.lookup('payment', paymentId))?.orderId === order.orderId;
    if (!linked) return order;
    return this.#apply(order, 'records_show_payment', { paymentId });
  }

  async #apply(order: Order, evidence: Evidence, recorded: Recorded = {}): Promise<Order> {
    const applied: Applied = await applyEvidence(this.#ledger, order, evidence, recorded);
    if (!('moved' in applied)) return order;
    countMetric(evidence === 'report_unconfirmed' ? 'ReportUnconfirmed' : 'ReportConfirmed');
    audit({
      route: 'settle',
      caller: 'service',
      role: 'settlement',
      outcome: 'recorded',
      replayed: false,
      orderId: order.orderId,
      owner: order.owner,
      kind: order.kind,
      from: order.state,
      to: applied.moved,
      evidence,
      paymentId: recorded.paymentId,
      subscriptionId: recorded.subscriptionId,
    });
    return (await this.#ledger.getOrder(order.orderId)) ?? order;
  }
}
