import type { Order } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { audit } from '../log/audit.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import { forgetChanged, type ReadInvalidation } from '../reads/invalidation.ts';
import type { Confirmations } from './confirmations.ts';
import { installmentPaid } from './events.ts';
import { applySubscriptionEvidence, type SubscriptionApplied } from './subscription-evidence.ts';

/** What PayHere's records showed of a running subscription, and what the ledger recorded of it. */
export interface Standing {
  /** PayHere's record's status, as it came. */
  status: string;
  /** The installments PayHere's payments of the subscription show paid. */
  installmentsPaid: number;
  /** Whether those installments were new to the ledger (confirmed, with their event). */
  confirmed: boolean;
  /** The status as lib/orders/subscription-evidence.ts decided it. */
  applied: SubscriptionApplied;
}

/**
 * A running subscription's standing as PayHere's records show it (docs/contract.md "Events"):
 * its payments, read first, then its record. The installments they show paid are confirmed with
 * their event first, then its status goes through lib/orders/subscription-evidence.ts (an
 * installment failed, stopped, completed: each once). Read after a notification that may ask
 * PayHere now, or by the settle job for one that could not: a notification of a stop, say, that
 * arrived while its order's right to ask was spent is checked later, never dropped.
 */
export class SubscriptionStandings {
  readonly #ledger: LedgerStore;
  readonly #confirmations: Confirmations;
  readonly #invalidation: ReadInvalidation | undefined;
  readonly #settleDelayMs: number;

  constructor(options: {
    ledger: LedgerStore;
    confirmations: Confirmations;
    /** Where the shared reads of what changed at PayHere are dropped. */
    invalidation?: ReadInvalidation;
    /** How long PayHere's record may lag behind a notification of an end or a failure (SETTLE_DELAY_SECONDS). */
    settleDelayMs: number;
  }) {
    this.#ledger = options.ledger;
    this.#confirmations = options.confirmations;
    this.#invalidation = options.invalidation;
    this.#settleDelayMs = options.settleDelayMs;
  }

  /**
   * Read the subscription's standing and record what it shows; undefined when PayHere cannot say
   * now, `none` when its records hold no such subscription of the order (nothing recorded either
   * way). `next`: the installment date a success notification gave, taken with the installments it
   * confirms (unsigned, so never on its own).
   */
  async record(
    order: Order,
    subscriptionId: string,
    deadline: number,
    next?: string | null,
  ): Promise<Standing | 'none' | undefined> {
    const standing = await this.#confirmations.subscriptionStanding(order, subscriptionId, deadline);
    if (standing === undefined || standing === 'none') return standing;
    let confirmed = false;
    const paid = standing.installmentsPaid;
    if (paid > 0 && (order.installmentsPaid === null || paid > order.installmentsPaid)) {
      // The next date goes with the installment that brought it: unknown without its notification's.
      const event = installmentPaid(order, paid, next ?? null);
      confirmed = await this.#ledger.confirmInstallments(order.orderId, paid, next ?? null, [event]);
    }
    const applied = await applySubscriptionEvidence(this.#ledger, order, subscriptionId, {
      evidence: 'records_show_status',
      status: standing.status,
      installmentsPaid: paid,
    });
    // Kept for the next cancel through the service, answered 409 without PayHere.
    if ('recorded' in applied && applied.recorded !== 'FAILED')
      await this.#ledger.setSubscriptionStatus(subscriptionId, applied.recorded).catch((error: unknown) => {
        log.warn('could not keep a subscription’s state on its reference', { error: describeError(error) });
      });
    if (confirmed || 'recorded' in applied)
      await forgetChanged(this.#invalidation, order.orderId, subscriptionId);
    return { status: standing.status, installmentsPaid: paid, confirmed, applied };
  }

  /**
   * The settle job's look at an order whose standing check, due `at`, has come (`order` as read
   * before the look, at `now`): recorded and the order taken off the queue, or `unknown` when
   * PayHere could not say, or its record changed under the write: the check stays, for the job to
   * look at again. A record still showing the subscription running, and no new installment, within
   * the settle delay of the check's first ask is looked at once more then (PayHere's record may show
   * an end or a failure later than its notification came), as a notification's own read is. A check asked for again
   * while it was read stays for another read. PayHere's records holding no such subscription of
   * the order end the check too (asking again would show nothing else), logged for the operator.
   */
  async settle(order: Order, at: number, deadline: number, now: number): Promise<'settled' | 'unknown'> {
    const subscriptionId = order.subscriptionId!;
    const standing = await this.record(order, subscriptionId, deadline);
    if (standing === undefined || (standing !== 'none' && unchanged(standing) === 'raced')) return 'unknown';
    const lookAgainAt = (order.standingSince ?? at) + this.#settleDelayMs;
    if (standing !== 'none' && !standing.confirmed && unchanged(standing) === 'running' && now < lookAgainAt)
      await this.#ledger.postponeStanding(order.orderId, at, lookAgainAt);
    else if (!(await this.#ledger.standingChecked(order.orderId, at, order.standingAsks)))
      await this.#ledger.postponeStanding(order.orderId, at, now);
    if (standing === 'none') {
      log.error('PayHere’s records hold no such subscription of the order: its standing check ends', {
        orderId: order.orderId,
        subscriptionId,
      });
      return 'settled';
    }
    if ('recorded' in standing.applied || standing.confirmed) {
      countMetric('SettledStanding');
      audit({
        route: 'settle',
        outcome: 'recorded',
        replayed: false,
        orderId: order.orderId,
        subscriptionId,
        subscriptionStatus: 'recorded' in standing.applied ? standing.applied.recorded : undefined,
        installmentsPaid: standing.installmentsPaid,
      });
    }
    return 'settled';
  }
}

/** Why the standing's status was not recorded, if it was not. */
export function unchanged(standing: Standing): string | undefined {
  return 'unchanged' in standing.applied ? standing.applied.unchanged : undefined;
}
