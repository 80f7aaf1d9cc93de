import { NotFoundError, OutcomeUnknownError, reached } from '../envelope/errors.ts';
import { log } from '../log/log.ts';
import type { ChargeRequest } from '../schemas/charge.ts';
import { outcomeUnknown } from './advice.ts';
import {
  type AdoptPayment,
  NOTHING,
  NoPaymentsError,
  type ReadOptions,
  type RefundBody,
  type Result,
} from './answers.ts';
import type { CaptureResult, ChargeResult, PaymentRecord, SubscriptionRecord } from './schemas.ts';

/** PayHere's dates are Sri Lanka time (UTC+05:30) without a zone. */
const SRI_LANKA_OFFSET = '+05:30';

export function gatewayDateToEpoch(date: unknown): number | undefined {
  if (typeof date !== 'string' || !/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(date)) return undefined;
  const epoch = Date.parse(`${date.replace(' ', 'T')}${SRI_LANKA_OFFSET}`);
  return Number.isNaN(epoch) ? undefined : epoch;
}

/** When a lost charge can have been processed: from when it was sent until its deadline (epoch ms). */
export interface ChargeWindow {
  sentAt: number;
  until: number;
}

/**
 * How far PayHere's dates may stray from the charge's window and still be this charge's payment:
 * PayHere's clock may run behind ours, and PayHere may finish a charge after the service stopped
 * waiting. Minutes, not a second: records decide, clocks only rank.
 */
export const CLOCK_TOLERANCE_MS = 15 * 60_000;

/**
 * The payments a lost charge may have produced: same order, amount and currency, dated no earlier
 * than the charge's window less the clock tolerance (PayHere allows reused order ids: a payment of
 * the order from before the charge was sent is not this charge). A late date never excludes one:
 * PayHere may have finished the charge late. Without a readable date a payment still counts (the
 * date only ranks). Ranked by distance from the window, then newest first.
 */
export function chargeCandidates(
  payments: readonly PaymentRecord[],
  request: Pick<ChargeRequest, 'order_id' | 'amount' | 'currency'>,
  window: ChargeWindow,
): PaymentRecord[] {
  const from = Math.floor(window.sentAt / 1000) * 1000;
  const until = Math.ceil(window.until / 1000) * 1000;
  const distance = (payment: PaymentRecord) => {
    const at = gatewayDateToEpoch(payment.date);
    if (at === undefined) return Number.POSITIVE_INFINITY;
    return at < from ? from - at : at > until ? at - until : 0;
  };
  return payments
    .filter((payment) => {
      if (payment.order_id !== request.order_id) return false;
      if (payment.currency !== request.currency) return false;
      if (Math.round(payment.amount * 100) !== Math.round(request.amount * 100)) return false;
      const at = gatewayDateToEpoch(payment.date);
      return at === undefined || at >= from - CLOCK_TOLERANCE_MS;
    })
    .sort((a, b) => distance(a) - distance(b) || Number(b.payment_id) - Number(a.payment_id));
}

/**
 * Whose a payment is in the ledger: this charge's (it adopted it before), another's (another
 * charge, or the order's own notification, linked it), or nobody's yet.
 */
export type PaymentOwner = 'this' | 'other' | 'none';

/** How a reconciliation of a lost charge learns and takes a payment's ownership (the ledger's). */
export interface ChargeAdoption {
  /** Claims a payment for the lost charge; false when another charge holds it. */
  adopt?: AdoptPayment;
  /** Whose the payment is (default: nobody's). */
  owner?: (payment: PaymentRecord) => Promise<PaymentOwner>;
  cause?: unknown;
  /** The charge is settled for good (its settle delay passed): a refunded payment is its outcome too. */
  final?: boolean;
}

/** A lost charge's payment as PayHere's records show it, and the others that could be it too. */
export type ReconciledCharge = Result<ChargeResult> & {
  /** Other payments of the order no one owns that match the charge: a possible duplicate charge. */
  possibleDuplicates?: string[];
};

/** Time kept back from a charge's own deadline so a lost answer can still be reconciled. */
const RECONCILE_RESERVE_MS = 4_000;

/** The upstream deadline of a charge: time is kept back to reconcile a lost answer by `deadline`. */
export function chargeDeadline(deadline: number): number {
  const now = Date.now();
  return Math.max(now + (deadline - now) / 2, deadline - RECONCILE_RESERVE_MS);
}

/** The reads a reconciliation asks PayHere's records with (lib/gateway/payhere.ts's). */
export interface RecordReads {
  paymentsOfOrder(orderId: string, deadline: number, options?: ReadOptions): Promise<Result<PaymentRecord[]>>;
  subscriptionPayments(id: string, deadline: number, options?: ReadOptions): Promise<Result<PaymentRecord[]>>;
  getSubscription(id: string, deadline: number, options?: ReadOptions): Promise<Result<SubscriptionRecord>>;
}

/**
 * What PayHere's own records say of a money request whose answer was lost: each route's
 * reconciliation, always from PayHere's answer, never one shared between readers (lib/reads/): it
 * settles money.
 */
export class Reconciliation {
  readonly #reads: RecordReads;

  constructor(reads: RecordReads) {
    this.#reads = reads;
  }

  /**
   * A charge whose answer was lost may have happened: the order's payments are the only record. A
   * payment of the order with the charge's amount and currency that no other charge (nor the
   * order's own notification) owns is this charge's outcome: one is adopted; several mean the order
   * is paid and possibly twice (`possibleDuplicates`, for the caller to flag). NOTHING only when
   * PayHere's records answered and show no such payment; a search that is pending or fails says
   * nothing (unknown). A payment refunded or charged back since is not reported as paid until the
   * charge is settled for good (`final`): money moved, so it is the charge's outcome then.
   */
  async charge(
    request: ChargeRequest,
    window: ChargeWindow,
    deadline: number,
    options: ChargeAdoption = {},
  ): Promise<ReconciledCharge | typeof NOTHING> {
    const { cause, final = false } = options;
    const adopt = options.adopt ?? (async () => true);
    const owner = options.owner ?? (async () => 'none' as const);
    // A hold is no payment: the order search cannot show it; only PayHere's notification can.
    if (request.type === 'AUTHORIZE') throw outcomeUnknown.hold(request.order_id, cause);
    const payments = await this.#paymentsOf(request.order_id, deadline, () =>
      outcomeUnknown.charge(request.order_id, cause),
    );
    let mine: PaymentRecord | undefined;
    const free: PaymentRecord[] = [];
    for (const payment of chargeCandidates(payments, request, window)) {
      const whose = await owner(payment);
      if (whose === 'this') mine ??= payment;
      else if (whose === 'none') free.push(payment);
    }
    const found = mine ?? free[0];
    if (!found) return NOTHING;
    if (found.status !== 'RECEIVED' && !final) {
      throw reached(
        new OutcomeUnknownError(
          `The gateway did not answer the charge; order ${request.order_id} shows payment ${found.payment_id}, ` +
            `now ${found.status}, so the order is not paid. Do not charge again before checking it.`,
          cause,
        ),
        'lost',
      );
    }
    if (found !== mine && !(await adopt(found))) throw outcomeUnknown.charge(request.order_id, cause);
    const possibleDuplicates = free.filter((payment) => payment !== found).map((p) => String(p.payment_id));
    if (possibleDuplicates.length > 0) {
      log.warn('possible duplicate charge: several payments match one lost charge', {
        orderId: request.order_id,
        paymentId: String(found.payment_id),
        possibleDuplicates,
      });
    }
    const received =
      found.status === 'RECEIVED'
        ? 'The gateway did not answer the charge, but its records show the payment was received.'
        : `The gateway did not answer the charge, but its records show the payment, now ${found.status}.`;
    return {
      msg:
        possibleDuplicates.length > 0
          ? `${received} Payments ${possibleDuplicates.join(', ')} of the order match this charge too: a possible duplicate. ` +
            "Do not charge again: the merchant must check the order's payments and refund what was paid twice."
          : received,
      data: {
        order_id: found.order_id,
        items: request.items,
        currency: found.currency,
        amount: found.amount,
        custom_1: request.custom_1 ?? null,
        custom_2: request.custom_2 ?? null,
        payment_id: found.payment_id,
        status_code: 2,
        status_message: `Payment ${found.status} according to the gateway's records.`,
        md5sig: null,
        authorization_token: null,
      },
      possibleDuplicates,
    };
  }

  /**
   * A capture whose answer was lost, repeated: captured if the hold's order shows exactly one
   * payment of the captured amount made since the capture was sent (the clock tolerance allowed);
   * NOTHING if it shows none.
   */
  async capture(
    body: { amount: number },
    window: ChargeWindow,
    deadline: number,
    orderId: string | undefined,
  ): Promise<Result<CaptureResult> | typeof NOTHING> {
    if (!orderId) throw outcomeUnknown.capture(undefined);
    const payments = await this.#paymentsOf(orderId, deadline, () => outcomeUnknown.capture(orderId));
    // A hold is no payment until captured, so a payment of the captured amount made since the
    // capture was sent is the capture's, however PayHere's clock or lateness dated it (as a charge's).
    const captured = payments.filter((payment) => {
      const at = gatewayDateToEpoch(payment.date);
      return (
        Math.round(payment.amount * 100) === Math.round(body.amount * 100) &&
        (at === undefined || at >= Math.floor(window.sentAt / 1000) * 1000 - CLOCK_TOLERANCE_MS)
      );
    });
    const [payment] = captured;
    if (captured.length === 0) return NOTHING;
    if (captured.length !== 1 || !payment) throw outcomeUnknown.capture(orderId);
    return {
      msg: 'The gateway did not answer the capture, but its records show the payment was captured.',
      data: {
        status_code: 2,
        status_message: `Payment ${payment.status} according to the gateway's records.`,
        payment_id: payment.payment_id,
        order_id: payment.order_id,
        currency: payment.currency,
        captured_amount: payment.amount,
      },
    };
  }

  /**
   * A refund of a payment whose answer was lost: the payment as PayHere's records show it now (its
   * status), NOTHING if the order's payments do not show it. The records keep no list of refunds,
   * so which status settles which refund is lib/orders/refund-evidence.ts's to decide. A hold's
   * release has no record to read at all: advice.
   */
  async refund(
    body: RefundBody,
    deadline: number,
    orderId: string | undefined,
  ): Promise<PaymentRecord | typeof NOTHING> {
    if (!orderId || !('payment_id' in body)) throw outcomeUnknown.refund(orderId);
    const paymentId = String(body.payment_id);
    const payments = await this.#paymentsOf(orderId, deadline, () => outcomeUnknown.refund(orderId));
    return payments.find((record) => String(record.payment_id) === paymentId) ?? NOTHING;
  }

  /**
   * A retry whose answer was lost, repeated: charged if the subscription shows a payment made within
   * its window, as far as PayHere's clock may stray from ours (CLOCK_TOLERANCE_MS either way: its
   * earlier installments are a recurrence apart), NOTHING if it shows none.
   */
  async retry(id: string, window: ChargeWindow, deadline: number): Promise<Result<null> | typeof NOTHING> {
    let payments: PaymentRecord[];
    try {
      ({ data: payments } = await this.#reads.subscriptionPayments(id, deadline, { reconciliation: true }));
    } catch (error) {
      if (error instanceof NotFoundError) return NOTHING;
      throw outcomeUnknown.retry(id, error);
    }
    const charged = payments.some((payment) => {
      const at = gatewayDateToEpoch(payment.date);
      return (
        at !== undefined &&
        at >= Math.floor(window.sentAt / 1000) * 1000 - CLOCK_TOLERANCE_MS &&
        at <= Math.ceil(window.until / 1000) * 1000 + CLOCK_TOLERANCE_MS
      );
    });
    if (!charged) return NOTHING;
    return {
      msg: 'The gateway did not answer the retry, but its records show the installment was charged.',
      data: null,
    };
  }

  /** A cancel whose answer was lost is settled by the subscription's state. */
  async cancel(id: string, deadline: number, cause: unknown): Promise<Result<null>> {
    try {
      const { data } = await this.#reads.getSubscription(id, deadline);
      if (data.status === 'CANCELLED') return { msg: 'Successfully cancelled the subscription', data: null };
    } catch {
      // fall through: the state could not be read
    }
    throw outcomeUnknown.cancel(id, cause);
  }

  /**
   * An order's payments for reconciliation: PayHere's "No payments found" is an answer (none); a
   * search still pending, any other refusal or a failed search leaves the outcome unknown. Always
   * PayHere's own answer, never one shared between readers (lib/reads/): it settles money.
   */
  async #paymentsOf(
    orderId: string,
    deadline: number,
    unknown: () => OutcomeUnknownError,
  ): Promise<PaymentRecord[]> {
    let found: Result<PaymentRecord[]>;
    try {
      found = await this.#reads.paymentsOfOrder(orderId, deadline, { reconciliation: true });
    } catch (error) {
      if (error instanceof NoPaymentsError) return [];
      throw reached(unknown(), 'lost');
    }
    // A pending payment may still become this order's: not "no payment".
    if (found.pending) throw reached(unknown(), 'lost');
    return found.data;
  }
}
