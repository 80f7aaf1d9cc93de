// Refunds of payments: each request is a refund of its own (PayHere has no idempotency key, so a
// repeated one refunds again), moving REFUND REQUESTED → REFUND PROCESSING → REFUNDED as a test
// advances it; the payment's one status follows its refunds.
import { type Result, refused } from './control-requests.ts';
import { centsOf, isValidAmount } from './money.ts';
import { failed, ids, ok, type PaymentBook } from './payment-book.ts';
import type { Envelope, RefundStatus, StoredPayment, StoredRefund } from './records.ts';

/** A refund's steps, in order (docs/payhere.md "Refund"). */
export const REFUND_STEPS: readonly RefundStatus[] = ['REFUND REQUESTED', 'REFUND PROCESSING', 'REFUNDED'];

/** A payment's refunds as the control API shows them. */
export interface PaymentRefunds {
  payment_id: number;
  order_id: string;
  /** The payment record's status, as search shows it. */
  status: string;
  amount: number;
  /** The sum of every refund, whatever its step. */
  refunded_amount: number;
  /** Oldest first. */
  refunds: StoredRefund[];
}

function refundedCents(payment: StoredPayment): number {
  return payment.refunds.reduce((sum, refund) => sum + centsOf(refund.amount), 0);
}

/**
 * The record has one status for all its refunds: the least advanced of those not finished, or
 * REFUNDED once all are, partial ones included (PayHere documents no "partially refunded" status).
 */
function paymentStatus(payment: StoredPayment): string {
  if (payment.refunds.length === 0) return payment.record.status;
  const step = Math.min(...payment.refunds.map((refund) => REFUND_STEPS.indexOf(refund.status)));
  return REFUND_STEPS[step] ?? 'REFUNDED';
}

export class RefundBook {
  readonly #now: () => number;
  readonly #payments: PaymentBook;

  constructor(now: () => number, payments: PaymentBook) {
    this.#now = now;
    this.#payments = payments;
  }

  /** payment/refund of a payment: the whole remainder, or `amount` of it. */
  refund(paymentId: number | undefined, amount: number | undefined, description: string): Envelope {
    const payment = paymentId === undefined ? undefined : this.#payments.byPaymentId(paymentId);
    if (!payment) return failed('Error processing refund');
    const remainingCents = centsOf(payment.record.amount) - refundedCents(payment);
    const requestedCents = amount === undefined ? remainingCents : centsOf(amount);
    const validAmount = amount === undefined || isValidAmount(amount);
    if (remainingCents <= 0 || !validAmount || requestedCents > remainingCents) {
      return failed('Error processing refund');
    }

    const at = this.#now();
    const refund: StoredRefund = {
      refund_id: ids.nextRefundNumber++,
      amount: requestedCents / 100,
      description,
      at,
      date: this.#payments.date(at),
      status: 'REFUND REQUESTED',
    };
    payment.refunds.push(refund);
    payment.record.status = paymentStatus(payment);
    return ok('Successfully processed the refund', refund.refund_id);
  }

  refundsOf(paymentId: number): Result<PaymentRefunds> {
    const payment = this.#payments.byPaymentId(paymentId);
    if (!payment) return refused(`Payment ${paymentId} not found`, 404);
    return {
      ok: true,
      value: structuredClone({
        payment_id: paymentId,
        order_id: payment.record.order_id,
        status: payment.record.status,
        amount: payment.record.amount,
        refunded_amount: refundedCents(payment) / 100,
        refunds: payment.refunds,
      }),
    };
  }

  /**
   * PayHere moves the payment's refunds (or the one `refundId`) on to `step`; a refund already there
   * or beyond stays. The payment's status follows.
   */
  advance(paymentId: number, step: RefundStatus, refundId: number | undefined): Result<PaymentRefunds> {
    const payment = this.#payments.byPaymentId(paymentId);
    if (!payment) return refused(`Payment ${paymentId} not found`, 404);
    const chosen = payment.refunds.filter(
      (refund) => refundId === undefined || refund.refund_id === refundId,
    );
    if (chosen.length === 0) {
      const which = refundId === undefined ? 'no refunds' : `no refund ${refundId}`;
      return refused(`Payment ${paymentId} has ${which}`, 404);
    }
    const target = REFUND_STEPS.indexOf(step);
    for (const refund of chosen) {
      if (REFUND_STEPS.indexOf(refund.status) < target) refund.status = step;
    }
    payment.record.status = paymentStatus(payment);
    return this.refundsOf(paymentId);
  }
}
