import type { APIGatewayProxyResult } from 'aws-lambda';
import { ConflictError, NotFoundError, notSent } from '../envelope/errors.ts';
import type { PayHere, Result } from '../gateway/payhere.ts';
import type { Reference } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { type ReadInvalidation, thenForget } from '../reads/invalidation.ts';
import type { SharedReads } from '../reads/shared-reads.ts';
import { type Actor, Ownership } from './access.ts';
import { type MoneySubject, type SettleDeps, settleCancel } from './money-settlement.ts';
import { ENDED, keepSubscriptionEnd } from './subscription-ends.ts';

type CancelSubject = Extract<MoneySubject, { operation: 'cancelSubscription' }>;

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

  readonly #settling: SettleDeps;

  constructor(options: {
    payhere: PayHere;
    ledger: LedgerStore;
    reads: SharedReads;
    invalidation: ReadInvalidation;
    settling: SettleDeps;
  }) {
    this.#payhere = options.payhere;
    this.#ledger = options.ledger;
    this.#ownership = new Ownership(options.ledger);
    this.#reads = options.reads;
    this.#invalidation = options.invalidation;
    this.#settling = options.settling;
  }

  /** What the settle job settles an unknown cancel with (as PayHere receives it: 0420075032251 is 420075032251). */
  subject(caller: Actor, id: string): CancelSubject {
    return { operation: 'cancelSubscription', role: caller.role, subscriptionId: String(Number(id)) };
  }

  /**
   * A cancel whose outcome is unknown, repeated with its key: settled from the subscription's
   * state (settleCancel), the customer's own subscription only.
   */
  async settle(
    caller: Actor,
    id: string,
    startedAt: number,
    deadline: number,
  ): Promise<APIGatewayProxyResult> {
    await this.#ownership.requireSubscription(caller, id);
    return settleCancel(this.#settling, this.subject(caller, id), { key: '', startedAt }, deadline);
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
    if (known && ENDED[known]) {
      // Only PayHere's shared answer shows the end: the order may not (a cancel whose order write
      // failed, a stop PayHere made), and this cancel is the one that meets it.
      if (!reference?.status)
        await keepSubscriptionEnd(this.#ledger, subscriptionId, known, reference, 'cancel_refused');
      throw notSent(new ConflictError(ENDED[known]));
    }
    try {
      const answer = await thenForget(
        () => this.#payhere.cancelSubscription(id, deadline),
        () => this.#invalidation.forgetSubscription(id),
      );
      await keepSubscriptionEnd(this.#ledger, subscriptionId, 'CANCELLED', reference, 'cancel_accepted');
      return answer;
    } catch (error) {
      const ended = Object.entries(ENDED).find(
        ([, refusal]) => error instanceof ConflictError && error.message === refusal,
      );
      if (ended)
        await keepSubscriptionEnd(this.#ledger, subscriptionId, ended[0], reference, 'cancel_refused');
      throw error;
    }
  }
}
