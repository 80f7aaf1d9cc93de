import { NOTHING, type PayHere } from '../gateway/payhere.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { lostRefundEvidence, type RefundEvidence, refundRecord } from './refund-evidence.ts';

/** The refund route's operation (functions/refund.ts): its idempotency record keys begin with it. */
export const REFUND_OPERATION = 'refund';

/** A refund of a payment as its slot holds it: the payment, the request's record key, its amount. */
export interface RefundHold {
  paymentId: string;
  key: string;
  /** In cents; null for a full refund. */
  amountCents: number | null;
}

/** What settling a lost refund found: the evidence, the payment's status (when read), the refund's number. */
export interface LostRefund {
  evidence: RefundEvidence;
  status: string | null | undefined;
  refundId: number | null;
}

/**
 * A lost refund of a payment (its key repeated, or the settle job), settled
 * from what the ledger recorded and PayHere's records of the payment (read only when the ledger
 * cannot answer); refund-evidence.ts decides. A failed search throws OutcomeUnknownError.
 */
export async function settleLostRefund(
  deps: { ledger: LedgerStore; payhere: PayHere },
  hold: RefundHold,
  orderId: string | undefined,
  final: boolean,
  deadline: number,
): Promise<LostRefund> {
  const refunds = await deps.ledger.paymentRefunds(hold.paymentId);
  const recorded = refunds.accepted.find((refund) => refund.key === hold.key);
  const earlier = refunds.accepted.filter((refund) => refund.key !== hold.key);
  let status: string | null | undefined;
  if (!recorded && orderId) {
    const body = { payment_id: Number(hold.paymentId), description: '' };
    const found = await deps.payhere.reconcileRefund(body, deadline, orderId);
    status = found === NOTHING ? null : found.status;
  }
  const evidence = lostRefundEvidence({
    recorded: recorded !== undefined,
    before: earlier.length + refunds.undetermined,
    fullBefore: earlier.some((refund) => refund.amountCents === null),
    full: hold.amountCents === null,
    status,
    final,
  });
  return { evidence, status, refundId: recorded?.refundId ?? null };
}

/**
 * Persist what `evidence` does to the refund's slot (refund-evidence.ts REFUND_TRANSITIONS): freed,
 * with what PayHere accepted or what may have been made; a lost one stays held. Never throws: the
 * refund's answer is not hidden by the ledger's bookkeeping.
 */
export async function recordRefundOutcome(
  ledger: LedgerStore,
  hold: RefundHold,
  evidence: RefundEvidence,
  refundId: number | null = null,
): Promise<void> {
  const record = refundRecord(evidence, { amountCents: hold.amountCents, refundId });
  if (record === undefined) return;
  try {
    await ledger.finishRefund(hold.paymentId, hold.key, record);
  } catch (error) {
    log.warn('could not free a refund slot', {
      paymentId: hold.paymentId,
      evidence,
      error: describeError(error),
    });
  }
}
