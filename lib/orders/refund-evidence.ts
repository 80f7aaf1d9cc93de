import type { Reach } from '../envelope/errors.ts';
import type { RefundRecord } from '../ledger/refunds.ts';

/**
 * Which evidence settles a refund of a payment how (docs/app.md "Every unknown resolves"): the one
 * place that decides for refunds, as lib/orders/evidence.ts does for orders. The ledger's refund
 * item (lib/ledger/refunds.ts) persists a decision with a write conditional on the slot's holder;
 * it never decides.
 *
 * - `refund_accepted`, `refund_refused`: PayHere's own answer to the refund holding the slot (or
 *   that answer as its idempotency record kept it, or as the ledger recorded it);
 * - `refund_not_sent`: it provably never reached PayHere;
 * - `refund_lost`: it may have reached PayHere without a usable answer: unknown;
 * - `records_show_refund`, `settled_nothing`, `undeterminable`: its settlement from PayHere's
 *   records (lostRefundEvidence below).
 */
export type RefundEvidence =
  | 'refund_accepted'
  | 'refund_refused'
  | 'refund_not_sent'
  | 'refund_lost'
  | 'records_show_refund'
  | 'settled_nothing'
  | 'undeterminable';

export interface RefundRule {
  /** The refund's outcome is known: its slot is freed, so another refund of the payment may start. */
  frees: boolean;
  /** What the ledger keeps of it: a refund PayHere made, one that may have been made, or nothing. */
  records: 'accepted' | 'undetermined' | null;
}

export const REFUND_TRANSITIONS: Readonly<Record<RefundEvidence, RefundRule>> = {
  refund_accepted: { frees: true, records: 'accepted' },
  records_show_refund: { frees: true, records: 'accepted' },
  refund_refused: { frees: true, records: null },
  refund_not_sent: { frees: true, records: null },
  settled_nothing: { frees: true, records: null },
  // Kept as possibly made: a later lost refund of the payment can then never be told from it.
  undeterminable: { frees: true, records: 'undetermined' },
  // Unknown: no other refund may start until it is settled (a partial refund repeated is paid twice).
  refund_lost: { frees: false, records: null },
};

/** The ledger's record of `evidence` (undefined: the slot stays held, nothing is written). */
export function refundRecord(
  evidence: RefundEvidence,
  refund: { amountCents: number | null; refundId: number | null },
): RefundRecord | undefined {
  const rule = REFUND_TRANSITIONS[evidence];
  if (!rule.frees) return undefined;
  if (rule.records === 'accepted') return { accepted: refund };
  return rule.records === 'undetermined' ? { undetermined: true } : null;
}

/** The evidence of a refund's own failure, by where it got to (lib/envelope/errors.ts `reach`). */
export function failedRefundEvidence(reach: Reach | undefined): RefundEvidence {
  if (reach === 'not_sent') return 'refund_not_sent';
  if (reach === 'answered') return 'refund_refused';
  return 'refund_lost';
}

/**
 * Whether the refund holding a payment's slot can still be running, from its idempotency record:
 * `running` (its Lambda holds the key), `unknown` (its outcome is unknown: it died in flight or was
 * answered 202; its key's repeat or the settle job settles it), or `over` (its record is complete or
 * gone: it ran to its end, and only the slot was left behind).
 */
export type HolderStanding = 'running' | 'unknown' | 'over';

export function holderStanding(
  record: { state: 'in_progress' | 'complete' | 'outcome_unknown'; lockedUntil?: number } | undefined,
  now: number,
): HolderStanding {
  if (!record || record.state === 'complete') return 'over';
  if (record.state === 'in_progress' && (record.lockedUntil ?? 0) > now) return 'running';
  return 'unknown';
}

/** A finished holder's outcome from the answer its record kept (HTTP status and `data.code`). */
export function answeredEvidence(httpStatus: number, code: string | undefined): RefundEvidence {
  if (httpStatus === 200) return 'refund_accepted';
  return code === 'outcome_undeterminable' ? 'undeterminable' : 'refund_refused';
}

/** The statuses a payment shows once a refund of it was made (PayHere refunds asynchronously). */
export const REFUND_STATUSES: readonly string[] = ['REFUND REQUESTED', 'REFUND PROCESSING', 'REFUNDED'];

/** What a lost refund's settlement knows. */
export interface LostRefundFacts {
  /** The ledger recorded this very refund as accepted (its answer was lost after the ledger's write). */
  recorded: boolean;
  /** Refunds of the payment through the service before this one: accepted, or possibly made. */
  before: number;
  /**
   * The payment's status in PayHere's records; null when they do not show the payment; undefined
   * when they cannot be read (the ledger does not know the payment's order).
   */
  status: string | null | undefined;
  /** The settle delay has passed: nothing shown now means nothing will be. */
  final: boolean;
}

/**
 * A lost refund, settled only where PayHere's records can show it. The records show a payment's
 * status, not its refunds: a refund status is this refund's only if no refund came before it.
 * Not even `REFUNDED` after partial ones: PayHere shows it for a payment refunded in part, once that
 * refund is done, so a full refund that never reached PayHere reads the same as one it finished.
 * Anything else (a payment refunded before, or whose records cannot be read) is never settled as
 * done: after the delay it is `undeterminable`, for someone to check in PayHere's portal.
 */
export function lostRefundEvidence(facts: LostRefundFacts): RefundEvidence {
  if (facts.recorded) return 'refund_accepted';
  const wait = (settled: RefundEvidence) => (facts.final ? settled : 'refund_lost');
  if (facts.status === undefined) return wait('undeterminable');
  const shows = facts.status !== null && REFUND_STATUSES.includes(facts.status);
  if (facts.before === 0) return shows ? 'records_show_refund' : wait('settled_nothing');
  return wait('undeterminable');
}
