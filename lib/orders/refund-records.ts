import { createHash } from 'node:crypto';
import { ConflictError, NotFoundError, notSent } from '../envelope/errors.ts';
import type { Order } from '../ledger/model.ts';
import type { LedgerStore, PaymentRefunds } from '../ledger/store.ts';
import { type Actor, type Ownership, readLedger } from './access.ts';
import { gatewayId } from './checkout.ts';

/** One refund of a payment the service sent, as GET /gateway/api/payments/{payment_id}/refunds shows it. */
export interface RefundRecordView {
  /** The record's own id: stable, and telling nothing of the request's Idempotency-Key. */
  id: string;
  payment_id: number | string;
  /** What was refunded; for a full refund, what was left of the payment then (null when not known). */
  amount: number | null;
  /** True for a full refund (the request named no amount). */
  full: boolean;
  /** When the service learned PayHere accepted it, or sent it (in flight). */
  at: string;
  /** Who sent it: the customer's own `sub`, or `merchant` (to a customer), or the caller's `sub` (to the merchant); null when not kept. */
  by: string | null;
  /** PayHere's refund number; null while in flight or when only PayHere's records showed the refund. */
  refund_id: number | null;
  /** `accepted`: PayHere accepted it; `in_flight`: sent or being sent, its outcome not known yet. */
  status: 'accepted' | 'in_flight';
}

export interface PaymentRefundsView {
  payment_id: number | string;
  order_id: string | null;
  currency: string | null;
  /** The payment's amount (its order's), null when the ledger does not know it. */
  amount: number | null;
  /** Refunded so far by refunds PayHere accepted through the service; null when not known. */
  refunded: number | null;
  /** What is left to refund; null when not known. */
  left: number | null;
  /** Refunds whose outcome could not be determined: they may have been made (check PayHere's portal). */
  undetermined: number;
  /**
   * The payment's status in PayHere's records (`REFUND REQUESTED`, `REFUND PROCESSING`, `REFUNDED`,
   * `CHARGEBACK`, ...) as the service last read it after a refund PayHere accepted: PayHere has no
   * refund lookup, and this is the only refund state it shows. Null until a read after a refund.
   */
  payhere_status: string | null;
  /** When the read that showed `payhere_status` was sent to PayHere; null with it. */
  payhere_status_at: string | null;
  refunds: RefundRecordView[];
}

/** What is known of a payment's refunds against its amount, in cents. */
export interface RefundBalance {
  /** The payment's amount; null when the ledger does not know the payment's order. */
  paymentCents: number | null;
  refundedCents: number | null;
  leftCents: number | null;
}

/**
 * The balance of a payment's refunds: a full refund accepted leaves nothing; partial ones leave the
 * payment's amount less their sum. Refunds not through the service are not known here.
 */
export function refundBalance(paymentCents: number | null, refunds: PaymentRefunds): RefundBalance {
  const full = refunds.accepted.some((refund) => refund.amountCents === null);
  if (paymentCents === null)
    return { paymentCents, refundedCents: full ? null : refunds.refundedCents, leftCents: full ? 0 : null };
  if (full) return { paymentCents, refundedCents: paymentCents, leftCents: 0 };
  return {
    paymentCents,
    refundedCents: refunds.refundedCents,
    leftCents: Math.max(0, paymentCents - refunds.refundedCents),
  };
}

/**
 * Whether a refund of `requestedCents` (null: the whole payment) may be sent: refused when it is
 * above what is left, as far as the service knows it: the payment's amount (its order's, when the
 * ledger links the two) less the refunds PayHere accepted through the service. What the service
 * cannot know (a payment it never linked, refunds that may have been made) is left to PayHere.
 */
export function refundRefusal(
  balance: RefundBalance,
  refunds: PaymentRefunds,
  requestedCents: number | null,
): { leftCents: number } | undefined {
  const { leftCents } = balance;
  if (balance.paymentCents === null || leftCents === null || refunds.undetermined > 0) return undefined;
  if (leftCents === 0 || (requestedCents !== null && requestedCents > leftCents)) return { leftCents };
  return undefined;
}

/** The order whose payment `paymentId` is, when the ledger links them and it is that order's payment. */
function paymentAmount(order: Order | undefined, paymentId: string): number | null {
  if (!order || order.paymentId !== paymentId) return null;
  return order.amountCents;
}

/**
 * Refund records (GET /gateway/api/payments/{payment_id}/refunds) and the check that keeps a refund
 * from asking for more than is left. Read from the ledger's refund item and the payment's order:
 * never PayHere. A customer sees only its own payments' (else 404, as for a payment that does not
 * exist); the merchant any payment's, a payment the service never refunded or linked with none.
 */
export class RefundRecords {
  readonly #ledger: LedgerStore;
  readonly #ownership: Ownership;

  constructor(options: { ledger: LedgerStore; ownership: Ownership }) {
    this.#ledger = options.ledger;
    this.#ownership = options.ownership;
  }

  async view(actor: Actor, paymentId: string): Promise<PaymentRefundsView> {
    const notFound = () => new NotFoundError(`Payment ${paymentId} was not found.`);
    const [reference, refunds] = await Promise.all([
      this.#ownership.reference(actor, 'payment', paymentId, notFound, true),
      readLedger(() => this.#ledger.paymentRefunds(paymentId)),
    ]);
    const order = reference ? await readLedger(() => this.#ledger.getOrder(reference.orderId)) : undefined;
    const amount = paymentAmount(order, paymentId);
    const balance = refundBalance(amount, refunds);
    const cents = (value: number | null) => (value === null ? null : value / 100);
    const byOf = (by: string | null | undefined) =>
      by === null || by === undefined
        ? null
        : actor.role === 'customer' && by !== actor.sub
          ? 'merchant'
          : by;
    // A full refund took what partial ones before it had left.
    let partialsBefore = 0;
    const accepted = refunds.accepted.map((refund): RefundRecordView => {
      const refunded = refund.amountCents ?? (amount === null ? null : Math.max(0, amount - partialsBefore));
      if (refund.amountCents !== null) partialsBefore += refund.amountCents;
      return {
        id: recordId(paymentId, refund.key),
        payment_id: gatewayId(paymentId)!,
        amount: cents(refunded),
        full: refund.amountCents === null,
        at: new Date(refund.at).toISOString(),
        by: byOf(refund.by),
        refund_id: refund.refundId,
        status: 'accepted',
      };
    });
    const inflight = refunds.inflight;
    return {
      payment_id: gatewayId(paymentId)!,
      order_id: reference?.orderId ?? null,
      currency: order && amount !== null ? order.currency : null,
      amount: cents(amount),
      refunded: cents(balance.refundedCents),
      left: cents(balance.leftCents),
      undetermined: refunds.undetermined,
      payhere_status: refunds.payhere?.status ?? null,
      payhere_status_at: refunds.payhere ? new Date(refunds.payhere.at).toISOString() : null,
      refunds: [
        ...accepted,
        ...(inflight
          ? [
              {
                id: recordId(paymentId, inflight.key),
                payment_id: gatewayId(paymentId)!,
                amount: cents(inflight.amountCents),
                full: inflight.amountCents === null,
                at: new Date(inflight.takenAt).toISOString(),
                by: byOf(inflight.by),
                refund_id: null,
                status: 'in_flight' as const,
              },
            ]
          : []),
      ],
    };
  }

  /**
   * Refuse (409, nothing sent) a refund above what is left of the payment, as far as the ledger
   * knows it; `orderId` is the payment's order when the caller already looked it up.
   */
  async requireLeft(paymentId: string, requestedCents: number | null, orderId?: string): Promise<void> {
    const [order, refunds] = await readLedger(async () => {
      const id = orderId ?? (await this.#ledger.lookup('payment', paymentId))?.orderId;
      return Promise.all([
        id === undefined ? undefined : this.#ledger.getOrder(id),
        this.#ledger.paymentRefunds(paymentId),
      ]);
    });
    const balance = refundBalance(paymentAmount(order, paymentId), refunds);
    const refusal = refundRefusal(balance, refunds, requestedCents);
    if (!refusal) return;
    const amount = (value: number) => `${(value / 100).toFixed(2)} ${order?.currency ?? ''}`.trim();
    throw notSent(
      new ConflictError(
        refusal.leftCents === 0 || requestedCents === null
          ? `Payment ${paymentId} is refunded in full already: nothing was sent.`
          : `Payment ${paymentId} has ${amount(refusal.leftCents)} left to refund, less than ${amount(requestedCents)}: nothing was sent.`,
      ),
    );
  }
}

function recordId(paymentId: string, key: string): string {
  return createHash('sha256').update(`${paymentId}\n${key}`).digest('base64url').slice(0, 22);
}
