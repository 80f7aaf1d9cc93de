import type { Order, SubscriptionChange, SubscriptionStatus } from '../ledger/model.ts';
import { subscriptionChanged } from './events.ts';

/**
 * Which evidence changes what the ledger records of an order's subscription, from which status to
 * which (docs/contract.md "Events", "notify"): the one place that decides for subscriptions, as
 * lib/orders/evidence.ts does for an order's state. The ledger persists a decision with a write
 * conditional on the facts it was made from (LedgerStore.recordSubscription); it never decides.
 *
 * Evidence is what PayHere itself said:
 * - `cancel_accepted`: PayHere accepted the service's own cancel of the subscription: `CANCELLED`;
 * - `cancel_refused`: PayHere refused the service's cancel as already cancelled or completed: that
 *   status;
 * - `records_show_status`: PayHere's subscription record, read by the service (after a
 *   notification: never the notification's word, whose `message_type` is unsigned), with the
 *   installments its payments showed paid, read just before the record: `FAILED` with n paid is
 *   installment n + 1 failed; `CANCELLED` is stopped (by PayHere, the customer, or a cancel the
 *   service did not record); `COMPLETED`; `ACTIVE` records nothing (installments paid are
 *   LedgerStore.confirmInstallments' own).
 *
 * `CANCELLED` and `COMPLETED` are final: nothing records another status over them, so a late or
 * replayed notification of a failure never reopens an ended subscription. A failure is recorded
 * once per installment: the records show a subscription `FAILED`, not each declined attempt, so
 * PayHere's retries of one installment, declined again, are one failure, and a failure PayHere's
 * records no longer show (retried and paid before its notification was confirmed) is never
 * recorded: its installment's payment is.
 */
export type SubscriptionEvidence = 'cancel_accepted' | 'cancel_refused' | 'records_show_status';

/** What PayHere said of the subscription: its status, and (from the records) the installments paid. */
export interface SubscriptionSeen {
  evidence: SubscriptionEvidence;
  /** PayHere's status string, as it came (an unknown one records nothing). */
  status: string;
  /** `records_show_status`: the installments PayHere's payments of the subscription showed paid. */
  installmentsPaid?: number;
}

/** Why PayHere's word recorded nothing. */
export type SubscriptionRefusal =
  /** The order has no subscription, or another than the one PayHere spoke of. */
  | 'subscription'
  /** The ledger recorded this already (this installment's failure, or this end). */
  | 'same'
  /** The subscription ended (CANCELLED or COMPLETED) and nothing moves it from there. */
  | 'ended'
  /** The ledger recorded a later installment's failure than this one. */
  | 'older'
  /** ACTIVE, or a status the service does not know: nothing to record. */
  | 'running'
  /** Evidence that cannot show this status (a cancel's answer never shows a failure). */
  | 'evidence';

/** What a decision needs to know of the order. */
export type SubscriptionFacts = Pick<Order, 'subscriptionId' | 'subscriptionStatus' | 'failedInstallment'>;

export type SubscriptionDecision =
  | {
      to: SubscriptionStatus;
      /** The facts the decision read, for the write's condition. */
      from: Pick<Order, 'subscriptionStatus' | 'failedInstallment'>;
      /** `FAILED`: the installment that failed. */
      failedInstallment?: number;
    }
  | { refused: SubscriptionRefusal };

const ENDED: readonly SubscriptionStatus[] = ['CANCELLED', 'COMPLETED'];

/** Which statuses each evidence can show. */
const SHOWS: Readonly<Record<SubscriptionEvidence, readonly SubscriptionStatus[]>> = {
  cancel_accepted: ['CANCELLED'],
  cancel_refused: ['CANCELLED', 'COMPLETED'],
  records_show_status: ['FAILED', 'CANCELLED', 'COMPLETED'],
};

/**
 * What PayHere's word about subscription `subscriptionId` does to the order: the status to record,
 * from the facts read (a write conditional on them persists it), or why it records nothing.
 */
export function decideSubscription(
  order: SubscriptionFacts,
  subscriptionId: string,
  seen: SubscriptionSeen,
): SubscriptionDecision {
  if (order.subscriptionId === null || order.subscriptionId !== subscriptionId)
    return { refused: 'subscription' };
  const to = seen.status as SubscriptionStatus;
  if (to !== 'FAILED' && !ENDED.includes(to)) return { refused: 'running' };
  if (!SHOWS[seen.evidence].includes(to)) return { refused: 'evidence' };
  const from = { subscriptionStatus: order.subscriptionStatus, failedInstallment: order.failedInstallment };
  if (order.subscriptionStatus === to && to !== 'FAILED') return { refused: 'same' };
  if (order.subscriptionStatus !== null && ENDED.includes(order.subscriptionStatus))
    return { refused: 'ended' };
  if (to !== 'FAILED') return { to, from };
  const paid = seen.installmentsPaid;
  if (paid === undefined || !Number.isSafeInteger(paid) || paid < 0) return { refused: 'evidence' };
  const installment = paid + 1;
  if (order.failedInstallment !== null && order.failedInstallment === installment) return { refused: 'same' };
  if (order.failedInstallment !== null && order.failedInstallment > installment) return { refused: 'older' };
  return { to, from, failedInstallment: installment };
}

/** The order's subscription change a decision allows, with its event; undefined when refused. */
export function subscriptionChange(
  order: Pick<Order, 'orderId' | 'subscriptionId' | 'subscriptionStatus' | 'failedInstallment'>,
  subscriptionId: string,
  seen: SubscriptionSeen,
): { change: SubscriptionChange } | { refused: SubscriptionRefusal } {
  const decision = decideSubscription(order, subscriptionId, seen);
  if ('refused' in decision) return decision;
  const event = subscriptionChanged(order.orderId, subscriptionId, {
    to: decision.to,
    evidence: seen.evidence,
    ...(decision.failedInstallment === undefined ? {} : { installment: decision.failedInstallment }),
  });
  return {
    change: {
      subscriptionId,
      to: decision.to,
      from: decision.from,
      ...(decision.failedInstallment === undefined ? {} : { failedInstallment: decision.failedInstallment }),
      events: [event],
    },
  };
}

/** What applying PayHere's word did: the status recorded, or why nothing was. */
export type SubscriptionApplied =
  | { recorded: SubscriptionStatus }
  | { unchanged: SubscriptionRefusal | 'raced' };

/**
 * Decide what PayHere's word does to `order` as read, and persist it with a write conditional on
 * the facts read. When they changed meanwhile (another notification, a cancel, or this very write
 * applied and its answer lost: its retry finds them changed), the order is read once more and the
 * same word decided again: recorded by then, it is `same`, and nothing is written twice.
 */
export async function applySubscriptionEvidence(
  ledger: {
    getOrder(orderId: string): Promise<Order | undefined>;
    recordSubscription(orderId: string, change: SubscriptionChange): Promise<boolean>;
  },
  order: Order,
  subscriptionId: string,
  seen: SubscriptionSeen,
): Promise<SubscriptionApplied> {
  let current: Order | undefined = order;
  for (let round = 0; round < 2 && current; round++) {
    const decided = subscriptionChange(current, subscriptionId, seen);
    if ('refused' in decided) return { unchanged: decided.refused };
    if (await ledger.recordSubscription(current.orderId, decided.change))
      return { recorded: decided.change.to };
    current = await ledger.getOrder(order.orderId);
  }
  return { unchanged: 'raced' };
}
