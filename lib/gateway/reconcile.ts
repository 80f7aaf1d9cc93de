import { NotFoundError, OutcomeUnknownError, reached } from '../envelope/errors.ts';
import { log } from '../log/log.ts';
import type { ChargeRequest } from '../schemas/charge.ts';
import { outcomeUnknown } from './advice.ts';
import { type AdoptPayment, NOTHING, type ReadOptions, type RefundBody, type Result } from './answers.ts';
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
 * The payments a lost charge may have produced: same order, amount and currency, dated (readably)
 * within the charge's window, to the second as PayHere dates are. PayHere allows reused order ids,
 * so an older payment of the order is not this charge, nor is one made after the charge could no
 * longer be processed. Without a readable date a payment does not count: a gateway clock running
 * behind ours then gives an honest "unknown", never a false success. Newest first.
 */
export function chargeCandidates(
  payments: readonly PaymentRecord[],
  request: Pick<ChargeRequest, 'order_id' | 'amount' | 'currency'>,
  window: ChargeWindow,
): PaymentRecord[] {
  const from = Math.floor(window.sentAt / 1000) * 1000;
  const until = Math.ceil(window.until / 1000) * 1000;
  return payments
    .filter((payment) => {
      if (payment.order_id !== request.order_id) return false;
      if (payment.currency !== request.currency) return false;
      if (Math.round(payment.amount * 100) !== Math.round(request.amount * 100)) return false;
      const at = gatewayDateToEpoch(payment.date);
      return at !== undefined && at >= from && at <= until;
    })
    .sort((a, b) => Number(b.payment_id) - Number(a.payment_id));
}

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
   * A charge whose answer was lost may have happened: the order's payments are the only record.
   * Exactly one payment in the charge's window, received and adopted by no other charge, is its
   * outcome; NOTHING when PayHere's records answered and show none. Anything else stays unknown
   * (several candidates are logged as a possible duplicate; a search that fails says nothing). A
   * payment refunded or charged back since is not reported as paid until the charge is settled for
   * good (`final`, the settle delay passed): money moved, so it is the charge's outcome then.
   */
  async charge(
    request: ChargeRequest,
    window: ChargeWindow,
    deadline: number,
    adopt: AdoptPayment = async () => true,
    cause?: unknown,
    final = false,
  ): Promise<Result<ChargeResult> | typeof NOTHING> {
    // A hold is no payment: the order search cannot show it; only PayHere's notification can.
    if (request.type === 'AUTHORIZE') throw outcomeUnknown.hold(request.order_id, cause);
    const payments = await this.#paymentsOf(request.order_id, deadline, () =>
      outcomeUnknown.charge(request.order_id, cause),
    );
    const candidates = chargeCandidates(payments, request, window);
    if (candidates.length > 1) {
      log.warn('possible duplicate charge: several payments match one lost charge', {
        orderId: request.order_id,
        paymentIds: candidates.map((payment) => payment.payment_id),
      });
      throw reached(
        new OutcomeUnknownError(
          `The gateway did not answer the charge, and order ${request.order_id} shows several payments that could be it. ` +
            "Do not charge again: the merchant must check the order's payments.",
          cause,
        ),
        'lost',
      );
    }
    const found = candidates[0];
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
    if (!(await adopt(found))) throw outcomeUnknown.charge(request.order_id, cause);
    return {
      msg:
        found.status === 'RECEIVED'
          ? 'The gateway did not answer the charge, but its records show the payment was received.'
          : `The gateway did not answer the charge, but its records show the payment, now ${found.status}.`,
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
    };
  }

  /**
   * A capture whose answer was lost, repeated: captured if the hold's order shows exactly one
   * payment of the captured amount made within the capture's window; NOTHING if it shows none.
   */
  async capture(
    body: { amount: number },
    window: ChargeWindow,
    deadline: number,
    orderId: string | undefined,
  ): Promise<Result<CaptureResult> | typeof NOTHING> {
    if (!orderId) throw outcomeUnknown.capture(undefined);
    const payments = await this.#paymentsOf(orderId, deadline, () => outcomeUnknown.capture(orderId));
    const captured = payments.filter((payment) => {
      const at = gatewayDateToEpoch(payment.date);
      return (
        Math.round(payment.amount * 100) === Math.round(body.amount * 100) &&
        at !== undefined &&
        at >= Math.floor(window.sentAt / 1000) * 1000 &&
        at <= Math.ceil(window.until / 1000) * 1000
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
   * its window, NOTHING if it shows none.
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
        at >= Math.floor(window.sentAt / 1000) * 1000 &&
        at <= Math.ceil(window.until / 1000) * 1000
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
   * An order's payments for reconciliation: none is an answer; a failed search leaves the outcome
   * unknown. Always PayHere's own answer, never one shared between readers (lib/reads/): it settles
   * money.
   */
  async #paymentsOf(
    orderId: string,
    deadline: number,
    unknown: () => OutcomeUnknownError,
  ): Promise<PaymentRecord[]> {
    try {
      const found = await this.#reads.paymentsOfOrder(orderId, deadline, { reconciliation: true });
      // A pending search shows no received payment: the outcome is not final either.
      return found.pending ? [] : found.data;
    } catch (error) {
      if (error instanceof NotFoundError) return [];
      throw reached(unknown(), 'lost');
    }
  }
}
