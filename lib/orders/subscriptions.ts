import { ConflictError, NotFoundError, notSent } from '../envelope/errors.ts';
import type { PayHere, Result } from '../gateway/payhere.ts';
import type { Reference } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { type ReadInvalidation, thenForget } from '../reads/invalidation.ts';
import type { SharedReads } from '../reads/shared-reads.ts';
import { type Actor, Ownership, readLedger } from './access.ts';
import { applySubscriptionEvidence, type SubscriptionEvidence } from './subscription-evidence.ts';

/** The states a subscription cannot be cancelled from, with PayHere's own refusal of each. */
const ENDED: Record<string, string> = {
  CANCELLED: 'Subscription is already cancelled.',
  COMPLETED: 'Subscription is already completed.',
};

/**
 * Cancelling a subscription (docs/contract.md "Each caller has a share": work that cannot change anything
 * costs PayHere nothing): a subscription the ledger or a fresh shared answer shows cancelled or
 * completed is answered 409 as PayHere would, without asking it; what PayHere answers is kept on
 * the ledger, so that the next cancel of it needs no call either.
 */
export class SubscriptionCancels {
  readonly #payhere: PayHere;
  readonly #ledger: LedgerStore;
  readonly #ownership: Ownership;
  readonly #reads: SharedReads;
  readonly #invalidation: ReadInvalidation;

  constructor(options: {
    payhere: PayHere;
    ledger: LedgerStore;
    reads: SharedReads;
    invalidation: ReadInvalidation;
  }) {
    this.#payhere = options.payhere;
    this.#ledger = options.ledger;
    this.#ownership = new Ownership(options.ledger);
    this.#reads = options.reads;
    this.#invalidation = options.invalidation;
  }

  async cancel(actor: Actor, id: string, deadline: number): Promise<Result<null>> {
    // PayHere's ids are numbers: 0420075032251 is 420075032251, in the ledger as at the gateway.
    const subscriptionId = String(Number(id));
    // Who owns it and what the shared answers show, read at once (one round trip): nothing of the
    // shared answer is told before ownership is settled.
    const [reference, shared] = await Promise.all([
      this.#ownership.reference(
        actor,
        'subscription',
        subscriptionId,
        () => new NotFoundError(`Subscription ${id} was not found.`),
        true,
      ),
      this.#reads.sharedSubscription(subscriptionId, deadline).catch(() => undefined),
    ]);
    const known = reference?.status ?? shared?.status;
    if (known && ENDED[known]) throw notSent(new ConflictError(ENDED[known]));
    try {
      const answer = await thenForget(
        () => this.#payhere.cancelSubscription(id, deadline),
        () => this.#invalidation.forgetSubscription(id),
      );
      await this.#remember(subscriptionId, 'CANCELLED', reference, 'cancel_accepted');
      return answer;
    } catch (error) {
      const ended = Object.entries(ENDED).find(
        ([, refusal]) => error instanceof ConflictError && error.message === refusal,
      );
      if (ended) await this.#remember(subscriptionId, ended[0], reference, 'cancel_refused');
      throw error;
    }
  }

  /**
   * Kept for the next cancel (a write that fails costs that cancel one PayHere call, nothing more),
   * and on its order with its event (subscription.cancelled or .completed) as
   * lib/orders/subscription-evidence.ts decides: once, and never over an end the order shows.
   */
  async #remember(
    subscriptionId: string,
    status: string,
    reference: Reference | undefined,
    evidence: SubscriptionEvidence,
  ): Promise<void> {
    if (!reference) return;
    const ledger = this.#ledger;
    try {
      await Promise.all([
        readLedger(() => ledger.setSubscriptionStatus(subscriptionId, status)),
        readLedger(async () => {
          const order = await ledger.getOrder(reference.orderId);
          if (order) await applySubscriptionEvidence(ledger, order, subscriptionId, { evidence, status });
        }),
      ]);
    } catch (error) {
      log.warn('could not keep a subscription’s state on the ledger', { error: describeError(error) });
    }
  }
}
