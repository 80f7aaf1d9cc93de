import { idOf, type PaymentRecord } from '../gateway/schemas.ts';
import type { PayHereStatus, PaymentRefunds } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';

/**
 * The statuses a payment shows in PayHere's records once it was refunded (or charged back after):
 * a read that does not know the payment's refunds keeps only these, so that a read of a payment
 * never refunded sends no write at all. PayHere has no refund lookup: this status is the only state
 * of a payment's refunds it shows (docs/payhere.md "Refund").
 */
const REFUNDED_STATUSES: ReadonlySet<string> = new Set([
  'REFUND REQUESTED',
  'REFUND PROCESSING',
  'REFUNDED',
  'CHARGEBACKED',
]);

export interface RefundStatusLedger {
  keepPayHereStatus(paymentId: string, seen: PayHereStatus): Promise<boolean>;
}

/**
 * PayHere's status of payments the service refunded, kept on each payment's refund item from reads
 * of PayHere's records the service makes anyway (retrievePayments, the reconciliation report): it
 * never calls PayHere itself. The ledger's conditional write decides what is kept (only after a
 * refund was accepted, never older over newer, nothing when unchanged); this decides which writes
 * are worth sending, and keeps a failed one from reaching the read that carried it.
 */
export class RefundStatuses {
  readonly #ledger: RefundStatusLedger;

  constructor(options: { ledger: RefundStatusLedger }) {
    this.#ledger = options.ledger;
  }

  /**
   * `records`, as a read sent to PayHere at `readAt` (epoch ms) answered them. With `refunds` (what
   * the ledger holds of the payments' refunds, read after the answer), only payments with an
   * accepted refund whose kept status this read would change are written; without, only payments
   * showing a refund: one conditional write each, which writes nothing when the ledger holds that
   * status already (a container's memory of what it kept could not say so: another container may
   * have kept another status since, and a second partial refund takes the payment back to
   * `REFUND REQUESTED`). Never throws: a status not kept is kept by a later read.
   */
  async seen(
    records: ReadonlyArray<Pick<PaymentRecord, 'payment_id' | 'status'>>,
    readAt: number,
    refunds?: ReadonlyMap<string, PaymentRefunds>,
  ): Promise<void> {
    await Promise.all(
      records.map(async (record) => {
        const paymentId = idOf(record.payment_id);
        if (paymentId === null) return;
        const seen: PayHereStatus = { status: record.status, at: readAt };
        const known = refunds?.get(paymentId);
        if (refunds ? !wouldChange(known, seen) : !REFUNDED_STATUSES.has(seen.status)) return;
        try {
          await this.#ledger.keepPayHereStatus(paymentId, seen);
        } catch (error) {
          log.warn('could not keep PayHere’s status of a refunded payment', {
            paymentId,
            error: describeError(error),
          });
        }
      }),
    );
  }
}

/** Whether the ledger's refund item would take `seen`: an accepted refund learned before it, and a kept status older and other. */
function wouldChange(refunds: PaymentRefunds | undefined, seen: PayHereStatus): boolean {
  const first = refunds?.accepted[0];
  if (!first || first.at > seen.at) return false;
  const kept = refunds.payhere;
  return kept === null || (kept.at < seen.at && kept.status !== seen.status);
}
