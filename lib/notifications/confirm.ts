import { NotFoundError } from '../envelope/errors.ts';
import type { PayHere } from '../gateway/payhere.ts';
import type { Order } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';

/** SPEC.md "PayHere's budget": an order's payments are fresh for 10 s. */
export const REFRESH_INTERVAL_MS = 10_000;

/**
 * A notification's unsigned fields checked against PayHere's own records (the Merchant API is
 * authenticated; a notification's payment or subscription id is not): a payment id counts only if
 * the order's payments show it, a subscription id only if that subscription is this order's, an
 * installment only once the subscription's payments show it. What cannot be checked now (the
 * gateway slow or refusing) is kept as reported and checked on the next read of the order.
 *
 * These ask PayHere itself, never the answers shared between readers (lib/reads/): what they
 * confirm becomes the ledger's record of money (a payment id, an order's success, installments
 * paid), so an answer up to 30 s old could confirm what PayHere no longer says, or miss what it
 * just recorded.
 */
export class Confirmations {
  readonly #payhere: PayHere;
  readonly #ledger: LedgerStore;

  constructor(options: { payhere: PayHere; ledger: LedgerStore }) {
    this.#payhere = options.payhere;
    this.#ledger = options.ledger;
  }

  /** Whether `paymentId` is a payment of the order at the order's amount: true, false, or undefined (could not tell). */
  async paymentOfOrder(order: Order, paymentId: string, deadline: number): Promise<boolean | undefined> {
    return this.#ask('a payment id', order, false, async () => {
      const { data } = await this.#payhere.paymentsOfOrder(order.orderId, deadline);
      return data.some(
        (payment) =>
          String(payment.payment_id) === paymentId &&
          payment.currency === order.currency &&
          (order.amountCents === null || Math.round(payment.amount * 100) === order.amountCents),
      );
    });
  }

  /** Whether `subscriptionId` is the subscription PayHere made for this order. */
  async subscriptionOfOrder(
    order: Order,
    subscriptionId: string,
    deadline: number,
  ): Promise<boolean | undefined> {
    if (!/^[0-9]{1,20}$/.test(subscriptionId)) return false;
    return this.#ask('a subscription id', order, false, async () => {
      const { data } = await this.#payhere.getSubscription(subscriptionId, deadline);
      return data.order_id === order.orderId;
    });
  }

  /** How many installments PayHere's payments of the subscription show as received. */
  async installmentsPaid(
    order: Order,
    subscriptionId: string,
    deadline: number,
  ): Promise<number | undefined> {
    return this.#ask('installments', order, 0, async () => {
      const { data } = await this.#payhere.subscriptionPayments(subscriptionId, deadline);
      return data.filter((payment) => payment.status === 'RECEIVED' || payment.status.startsWith('REFUND'))
        .length;
    });
  }

  /**
   * The order as PayHere's records show it now (getCheckout's read): what notifications reported
   * and PayHere had not confirmed is checked again, and a payment order not final yet is looked up
   * in the order's payments (at most every REFRESH_INTERVAL_MS for all readers together).
   */
  async refresh(order: Order, deadline: number): Promise<Order> {
    const settled = await this.settleReported(order, deadline);
    const notFinal =
      settled.state === 'created' || settled.state === 'pending' || settled.state === 'unknown';
    const paid = settled.kind === 'payment' || settled.kind === 'charge';
    if (!paid || !notFinal || settled.charge?.inflight) return settled;
    if (!(await this.#ledger.claimCheck(settled.orderId, REFRESH_INTERVAL_MS))) return settled;
    const payments = await this.#ask('the order’s payments', settled, [], async () => {
      const { data, pending } = await this.#payhere.paymentsOfOrder(settled.orderId, deadline);
      return pending ? [] : data;
    });
    const matching = (payments ?? []).filter(
      (payment) =>
        payment.status === 'RECEIVED' &&
        payment.currency === settled.currency &&
        Math.round(payment.amount * 100) === settled.amountCents,
    );
    // One payment is the order's; several are for the merchant to look at, not to pick from.
    const [payment] = matching;
    if (matching.length !== 1 || !payment) return settled;
    const paymentId = String(payment.payment_id);
    const reference = { orderId: settled.orderId, owner: settled.owner };
    if (!(await this.#ledger.link('payment', paymentId, reference))) return settled;
    await this.#ledger.moveOrder(settled.orderId, { from: settled.state, to: 'succeeded', paymentId });
    return (await this.#ledger.getOrder(settled.orderId)) ?? settled;
  }

  /**
   * The order with what was reported and not yet confirmed checked again: confirmed values are
   * recorded; what PayHere refutes is dropped; what it cannot answer now stays.
   */
  async settleReported(order: Order, deadline: number): Promise<Order> {
    const { reported } = order;
    const confirmed: { paymentId?: string; subscriptionId?: string; installmentsPaid?: number } = {};
    if (reported.paymentId && (await this.paymentOfOrder(order, reported.paymentId, deadline)) === true) {
      confirmed.paymentId = reported.paymentId;
    }
    if (
      reported.subscriptionId &&
      (await this.subscriptionOfOrder(order, reported.subscriptionId, deadline)) === true
    ) {
      confirmed.subscriptionId = reported.subscriptionId;
      await this.#ledger.link('subscription', reported.subscriptionId, {
        orderId: order.orderId,
        owner: order.owner,
      });
      await this.#ledger.addSubscription(order.owner, reported.subscriptionId);
    }
    const subscriptionId = order.subscriptionId ?? confirmed.subscriptionId;
    if (reported.installmentsPaid !== null && subscriptionId) {
      const paid = await this.installmentsPaid(order, subscriptionId, deadline);
      if (paid !== undefined) confirmed.installmentsPaid = paid;
    }
    if (Object.keys(confirmed).length === 0) return order;
    await this.#ledger.confirm(order.orderId, confirmed);
    return (await this.#ledger.getOrder(order.orderId)) ?? order;
  }

  /** PayHere's answer to `question`; `notFound` when it says there is no such record; undefined when it cannot say. */
  async #ask<T>(what: string, order: Order, notFound: T, question: () => Promise<T>): Promise<T | undefined> {
    try {
      return await question();
    } catch (error) {
      if (error instanceof NotFoundError) return notFound;
      log.warn(`could not confirm ${what} with the gateway; kept for the next read`, {
        orderId: order.orderId,
        error: describeError(error),
      });
      return undefined;
    }
  }
}
