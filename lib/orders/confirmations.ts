import { NotFoundError } from '../envelope/errors.ts';
import type { PayHere, ReadOptions } from '../gateway/payhere.ts';
import type { PaymentRecord, SubscriptionRecord } from '../gateway/schemas.ts';
import type { Order } from '../ledger/model.ts';
import { describeError, log } from '../log/log.ts';
import { sameTerms, termsOf, termsOfSentence } from './terms.ts';

/** What PayHere's records show of an order's payment. */
export type PaymentFinding = { payment: PaymentRecord } | 'none' | 'several';

/** What PayHere's records show of a subscription reported for an order. */
export type SubscriptionFinding = { subscription: SubscriptionRecord } | 'other_terms' | 'none';

const cents = (amount: number) => Math.round(amount * 100);

/**
 * A notification's report checked against PayHere's own records (the Merchant API is
 * authenticated; a notification's unsigned fields are not): an order's payment, a subscription on
 * the order's terms, the installments its payments show. Each answers undefined when PayHere
 * cannot be asked now: the report is then kept and checked again later.
 *
 * These ask PayHere itself, never the answers shared between readers (lib/reads/): what they
 * confirm becomes the ledger's record of money, so an answer up to 30 s old could confirm what
 * PayHere no longer says, or miss what it just recorded.
 */
export class Confirmations {
  readonly #payhere: PayHere;
  readonly #share: ReadOptions;

  constructor(options: {
    payhere: PayHere;
    /**
     * Draw on the budget's reserved share (the settle job, which settles money); otherwise on the
     * reads' share, so that what a notification makes the service ask never starves a money call.
     */
    reserved?: boolean;
  }) {
    this.#payhere = options.payhere;
    this.#share = options.reserved ? { reconciliation: true } : {};
  }

  /**
   * The order's payment (its order id, amount and currency, RECEIVED): the one `reportedId` names
   * if it is such, else the only such payment; `several` when more than one could be it and none
   * is the reported one (for the merchant to look at, not to pick from).
   */
  async paymentOfOrder(
    order: Order,
    reportedId: string | null | undefined,
    deadline: number,
  ): Promise<PaymentFinding | undefined> {
    const payments = await this.#ask<PaymentRecord[] | undefined>(
      'the order’s payment',
      order,
      [],
      async () => {
        const { data, pending } = await this.#payhere.paymentsOfOrder(order.orderId, deadline, this.#share);
        // A payment PayHere still shows pending is neither there nor absent: the report is kept and
        // asked about again (never refuted by it, which would free the order for another charge).
        return pending ? undefined : data;
      },
    );
    if (payments === undefined) return undefined;
    const matching = payments.filter(
      (payment) =>
        payment.order_id === order.orderId &&
        payment.status === 'RECEIVED' &&
        payment.currency === order.currency &&
        (order.amountCents === null || cents(payment.amount) === order.amountCents),
    );
    const reported = matching.find((payment) => String(payment.payment_id) === reportedId);
    if (reported) return { payment: reported };
    if (matching.length === 0) return 'none';
    return matching.length === 1 ? { payment: matching[0]! } : 'several';
  }

  /**
   * Whether `subscriptionId` is the subscription PayHere made for this order on the order's terms:
   * its order id, amount, currency, and the recurrence and duration its record states.
   */
  async subscriptionOfOrder(
    order: Order,
    subscriptionId: string,
    deadline: number,
  ): Promise<SubscriptionFinding | undefined> {
    if (!/^[0-9]{1,20}$/.test(subscriptionId)) return 'none';
    const found = await this.#ask('a subscription', order, null, async () => {
      const { data } = await this.#payhere.getSubscription(subscriptionId, deadline, this.#share);
      return data;
    });
    if (found === undefined) return undefined;
    if (found === null || found.order_id !== order.orderId) return 'none';
    const ordered = termsOf(order.recurrence ?? '', order.duration ?? '');
    const recorded = typeof found.recurring === 'string' ? termsOfSentence(found.recurring) : undefined;
    const onTerms =
      found.currency === order.currency &&
      (order.amountCents === null || cents(found.amount) === order.amountCents) &&
      ordered !== undefined &&
      recorded !== undefined &&
      sameTerms(ordered, recorded);
    if (!onTerms) {
      log.error('a subscription on other terms than its order’s', {
        orderId: order.orderId,
        subscriptionId,
        recorded: typeof found.recurring === 'string' ? found.recurring : null,
      });
      return 'other_terms';
    }
    return { subscription: found };
  }

  /** The ids of the payments PayHere's records show for the subscription (whatever their status). */
  async subscriptionPaymentIds(
    order: Order,
    subscriptionId: string,
    deadline: number,
  ): Promise<string[] | undefined> {
    return this.#ask('a subscription’s payments', order, [], async () => {
      const { data } = await this.#payhere.subscriptionPayments(subscriptionId, deadline, this.#share);
      return data.map((payment) => String(payment.payment_id));
    });
  }

  /**
   * How many installments PayHere's payments of the subscription show paid: received, refunded or
   * charged back since (each was an installment paid; not counting one charged back would number
   * the next failure as an installment already recorded).
   */
  async installmentsPaid(
    order: Order,
    subscriptionId: string,
    deadline: number,
  ): Promise<number | undefined> {
    return this.#ask('installments', order, 0, async () => {
      const { data } = await this.#payhere.subscriptionPayments(subscriptionId, deadline, this.#share);
      return data.filter(
        (payment) =>
          payment.status === 'RECEIVED' ||
          payment.status.startsWith('REFUND') ||
          payment.status === 'CHARGEBACKED',
      ).length;
    });
  }

  /**
   * The order's subscription as PayHere's records show it: its record's `status`, and the
   * installments its payments show paid, read first. In that order, a retry PayHere charged between
   * the two reads shows as the record `ACTIVE` again, never as a failure of the installment after
   * it. Undefined when PayHere cannot say now; `none` when its records have no such subscription
   * of the order (asking again would show nothing else).
   */
  async subscriptionStanding(
    order: Order,
    subscriptionId: string,
    deadline: number,
  ): Promise<{ status: string; installmentsPaid: number } | 'none' | undefined> {
    const installmentsPaid = await this.installmentsPaid(order, subscriptionId, deadline);
    if (installmentsPaid === undefined) return undefined;
    const found = await this.#ask('a subscription', order, null, async () => {
      const { data } = await this.#payhere.getSubscription(subscriptionId, deadline, this.#share);
      return data;
    });
    if (found === undefined) return undefined;
    if (found === null || found.order_id !== order.orderId) return 'none';
    return { status: found.status, installmentsPaid };
  }

  /** PayHere's answer to `question`; `notFound` when it says there is no such record; undefined when it cannot say. */
  async #ask<T>(what: string, order: Order, notFound: T, question: () => Promise<T>): Promise<T | undefined> {
    try {
      return await question();
    } catch (error) {
      if (error instanceof NotFoundError) return notFound;
      log.warn(`could not check ${what} with the gateway; kept for later`, {
        orderId: order.orderId,
        error: describeError(error),
      });
      return undefined;
    }
  }
}
