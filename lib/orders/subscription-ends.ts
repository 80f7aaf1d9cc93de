import type { Reference } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { readLedger } from './access.ts';
import { applySubscriptionEvidence, type SubscriptionEvidence } from './subscription-evidence.ts';

/** The states a subscription cannot be cancelled from, with PayHere's own refusal of each. */
export const ENDED: Record<string, string> = {
  CANCELLED: 'Subscription is already cancelled.',
  COMPLETED: 'Subscription is already completed.',
};

/**
 * A subscription's end as PayHere showed it to a cancel: on its order with its event
 * (subscription.cancelled or .completed) as lib/orders/subscription-evidence.ts decides (once, and
 * never over an end the order shows), then on its reference, where the next cancel finds it and
 * answers 409 without PayHere. In that order: a reference that says ended vouches for the order,
 * so a failed order write leaves the next cancel to PayHere, which records it then.
 */
export async function keepSubscriptionEnd(
  ledger: LedgerStore,
  subscriptionId: string,
  status: string,
  reference: Reference | undefined,
  evidence: SubscriptionEvidence,
): Promise<void> {
  if (!reference) return;
  try {
    await readLedger(async () => {
      const order = await ledger.getOrder(reference.orderId);
      if (order) await applySubscriptionEvidence(ledger, order, subscriptionId, { evidence, status });
    });
    await readLedger(() => ledger.setSubscriptionStatus(subscriptionId, status));
  } catch (error) {
    log.warn('could not keep a subscription’s state on the ledger', { error: describeError(error) });
  }
}
