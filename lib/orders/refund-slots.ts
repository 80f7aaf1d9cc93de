import { ConflictError, GatewayUnavailableError, notSent } from '../envelope/errors.ts';
import { NOTHING, type PayHere } from '../gateway/payhere.ts';
import { recordKey } from '../idempotency/idempotent.ts';
import type { IdempotencyRecord } from '../idempotency/store.ts';
import type { LedgerStore, RefundSlot } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { type Actor, readLedger } from './access.ts';
import { refundEvent } from './events.ts';
import {
  answeredEvidence,
  type HolderStanding,
  holderStanding,
  lostRefundEvidence,
  type RefundEvidence,
  refundRecord,
} from './refund-evidence.ts';

/** The refund route's operation (functions/refund.ts): its idempotency record keys begin with it. */
export const REFUND_OPERATION = 'refund';

/** A refund of a payment as its slot holds it: the payment, the request's record key, its amount. */
export interface RefundHold {
  paymentId: string;
  key: string;
  /** In cents; null for a full refund. */
  amountCents: number | null;
  /** Who sends it (a `sub`): kept for its refund record. */
  by?: string | null;
  /**
   * When the slot was taken, for a slot another refund frees as left behind: only that instance of
   * it is freed, never the slot its key took again since.
   */
  takenAt?: number;
}

/** What settling a lost refund found: the evidence, the payment's status (when read), the refund's number. */
export interface LostRefund {
  evidence: RefundEvidence;
  status: string | null | undefined;
  refundId: number | null;
}

/**
 * A lost refund of a payment (its key repeated, the settle job, or a slot left behind), settled
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
    status,
    final,
  });
  return { evidence, status, refundId: recorded?.refundId ?? null };
}

/**
 * Persist what `evidence` does to the refund's slot (refund-evidence.ts REFUND_TRANSITIONS): freed,
 * with what PayHere accepted or what may have been made; a lost one stays held. Never throws: a
 * slot that could not be freed is freed by the next refund of the payment (RefundSlots.take).
 */
export async function recordRefundOutcome(
  ledger: LedgerStore,
  hold: RefundHold,
  evidence: RefundEvidence,
  refundId: number | null = null,
): Promise<void> {
  const record = refundRecord(evidence, { amountCents: hold.amountCents, refundId });
  if (record === undefined) return;
  const type =
    record === null ? 'refund.refused' : 'accepted' in record ? 'refund.settled' : 'refund.undeterminable';
  const event = refundEvent(type, {
    paymentId: hold.paymentId,
    amountCents: hold.amountCents,
    ...(record !== null && 'accepted' in record ? { refundId: record.accepted.refundId } : {}),
    evidence,
  });
  try {
    // A slot taken before its time was kept (0) is freed by its key alone, as it was.
    await ledger.finishRefund(hold.paymentId, hold.key, record, [event], hold.takenAt || undefined);
  } catch (error) {
    log.warn('could not free a refund slot', {
      paymentId: hold.paymentId,
      evidence,
      error: describeError(error),
    });
  }
}

/** How often a refund races a slot that changes under it before answering 409 (in practice: never). */
const MAX_ROUNDS = 3;

/**
 * One refund of a payment in flight at a time: PayHere has no idempotency key, so a partial refund
 * sent again with a new key while the first one's outcome is unknown could be paid twice. A refund
 * takes its payment's slot in the ledger before it is sent, under its idempotency record key, and
 * frees it once its outcome is known.
 */
export class RefundSlots {
  readonly #ledger: LedgerStore;
  readonly #payhere: PayHere;
  /** The idempotency records (lib/idempotency/store.ts): whether a slot's holder can still be running. */
  readonly #records: { get(key: string): Promise<IdempotencyRecord | undefined> };

  constructor(options: {
    ledger: LedgerStore;
    payhere: PayHere;
    records: { get(key: string): Promise<IdempotencyRecord | undefined> };
  }) {
    this.#ledger = options.ledger;
    this.#payhere = options.payhere;
    this.#records = options.records;
  }

  /**
   * Take the payment's slot for `hold` before sending it. Held by a refund that may still be
   * running or whose outcome is unknown: 409 `conflict`, naming that request's Idempotency-Key to
   * its own caller only, and nothing sent. Held by one that is over (its record complete or gone):
   * freed from what it came to, then taken.
   */
  async take(caller: Actor, hold: RefundHold, deadline: number): Promise<void> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const slot: RefundSlot = {
        key: hold.key,
        takenAt: Date.now(),
        amountCents: hold.amountCents,
        ...(hold.by ? { by: hold.by } : {}),
      };
      const requested = refundEvent('refund.requested', hold);
      if (await readLedger(() => this.#ledger.takeRefundSlot(hold.paymentId, slot, [requested]))) return;
      const { inflight: holder } = await readLedger(() => this.#ledger.paymentRefunds(hold.paymentId));
      if (!holder || holder.key === hold.key) continue; // freed meanwhile
      const record = await readLedger(() => this.#records.get(holder.key));
      const standing = holderStanding(record, Date.now());
      if (standing !== 'over') throw notSent(inFlight(caller, hold.paymentId, holder.key, standing));
      await this.#freeLeftBehind({ ...holder, paymentId: hold.paymentId }, record, deadline);
    }
    throw notSent(
      new ConflictError(`Another refund of payment ${hold.paymentId} is in flight; try again in a moment.`),
    );
  }

  /**
   * A slot whose refund is over but was not freed (the ledger's write failed): what it came to is
   * its record's answer, or, when the record is gone, what PayHere's records show. Freed before this
   * refund is sent, or this refund is not sent (503).
   */
  async #freeLeftBehind(
    holder: RefundHold,
    record: IdempotencyRecord | undefined,
    deadline: number,
  ): Promise<void> {
    try {
      let settled: Pick<LostRefund, 'evidence' | 'refundId'>;
      if (record?.response) {
        const answer = parsed(record.response.body);
        settled = {
          evidence: answeredEvidence(record.response.statusCode, answer?.data?.code),
          refundId: typeof answer?.data?.refund_id === 'number' ? answer.data.refund_id : null,
        };
      } else {
        const orderId = (await this.#ledger.lookup('payment', holder.paymentId))?.orderId;
        const deps = { ledger: this.#ledger, payhere: this.#payhere };
        settled = await settleLostRefund(deps, holder, orderId, true, deadline);
      }
      log.warn('a refund slot left behind is freed', {
        paymentId: holder.paymentId,
        evidence: settled.evidence,
      });
      await recordRefundOutcome(this.#ledger, holder, settled.evidence, settled.refundId);
    } catch (error) {
      throw notSent(
        new GatewayUnavailableError(
          `The last refund of payment ${holder.paymentId} cannot be checked right now, so nothing was sent to the gateway; retry later.`,
          error,
        ),
      );
    }
  }
}

/** The 409 for a slot another refund holds: its Idempotency-Key only to the caller who can repeat it. */
function inFlight(
  caller: Actor,
  paymentId: string,
  holderKey: string,
  standing: HolderStanding,
): ConflictError {
  const own = recordKey(REFUND_OPERATION, caller.sub, '');
  if (!holderKey.startsWith(own)) {
    return new ConflictError(
      `Another refund of payment ${paymentId} is in flight and its outcome is not known yet: nothing was sent. ` +
        'Try again once it is settled (within minutes).',
    );
  }
  const key = holderKey.slice(own.length);
  return new ConflictError(
    standing === 'running'
      ? `Your refund of payment ${paymentId} with Idempotency-Key ${key} is still being processed: nothing was sent. ` +
          'Repeat that request with the same Idempotency-Key for its answer before refunding again.'
      : `Your refund of payment ${paymentId} with Idempotency-Key ${key} has no known outcome yet: PayHere may have made it, and nothing was sent now. ` +
          'Repeat that request with the same Idempotency-Key to settle it before refunding again.',
    key,
  );
}

function parsed(body: string): { data?: { code?: string; refund_id?: unknown } } | undefined {
  try {
    return JSON.parse(body) as { data?: { code?: string; refund_id?: unknown } };
  } catch {
    return undefined;
  }
}
