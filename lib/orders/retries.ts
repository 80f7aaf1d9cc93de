import type { APIGatewayProxyResult } from 'aws-lambda';
import { ok } from '../envelope/envelope.ts';
import { NotFoundError } from '../envelope/errors.ts';
import type { PayHere } from '../gateway/payhere.ts';
import { type ReadInvalidation, thenForget } from '../reads/invalidation.ts';
import type { Actor, Ownership } from './access.ts';
import { afterRetryCharged, type MoneySubject, type SettleDeps, settleRetry } from './money-settlement.ts';

/** A retry as the route hands it over: the subscription's id as the path gives it. */
export interface RetryInput {
  caller: Actor;
  id: string;
  deadline: number;
}

type RetrySubject = Extract<MoneySubject, { operation: 'retrySubscription' }>;

/**
 * Charging a failed subscription's installment again, now (POST /gateway/api/subscriptions/{id}/retry):
 * the customer's own subscription only (else 404); a lost answer is settled from the subscription's
 * payments.
 */
export class SubscriptionRetries {
  readonly #payhere: PayHere;
  readonly #ownership: Ownership;
  readonly #invalidation: ReadInvalidation;
  readonly #settling: SettleDeps;

  constructor(options: {
    payhere: PayHere;
    ownership: Ownership;
    invalidation: ReadInvalidation;
    settling: SettleDeps;
  }) {
    this.#payhere = options.payhere;
    this.#ownership = options.ownership;
    this.#invalidation = options.invalidation;
    this.#settling = options.settling;
  }

  /** What the settle job settles an unknown retry with (as PayHere receives it: 0420075032251 is 420075032251). */
  subject({ caller, id }: RetryInput): RetrySubject {
    return { operation: 'retrySubscription', role: caller.role, subscriptionId: String(Number(id)) };
  }

  async retry({ caller, id, deadline }: RetryInput): Promise<APIGatewayProxyResult> {
    // Looked up once, for everyone: a customer's ownership, and the order whose standing follows.
    const subscriptionId = String(Number(id));
    const reference = await this.#ownership.reference(
      caller,
      'subscription',
      subscriptionId,
      () => new NotFoundError(`Subscription ${id} was not found.`),
      true,
    );
    const { msg, data } = await thenForget(
      () => this.#payhere.retrySubscription(id, deadline),
      () => this.#invalidation.forgetSubscription(id),
    );
    if (reference) await afterRetryCharged(this.#settling.ledger, subscriptionId, Date.now(), reference);
    return ok(msg, data);
  }

  /**
   * A lost answer, repeated: the subscription's payments show a new one if the card was charged.
   * Only for a caller that may act on it, as its first attempt (a customer, on its own).
   */
  async settle(request: RetryInput, startedAt: number): Promise<APIGatewayProxyResult> {
    await this.#ownership.requireSubscription(request.caller, request.id);
    return settleRetry(this.#settling, this.subject(request), { key: '', startedAt }, request.deadline);
  }
}
