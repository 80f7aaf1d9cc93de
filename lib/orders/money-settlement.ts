import type { APIGatewayProxyResult } from 'aws-lambda';
import { ok } from '../envelope/envelope.ts';
import { errorResponse } from '../envelope/error-response.ts';
import { ConflictError, GatewayRejectedError, OutcomeUndeterminableError } from '../envelope/errors.ts';
import { paymentOutcomeResponse } from '../envelope/payment-outcome.ts';
import { outcomeUnknown } from '../gateway/advice.ts';
import { NOTHING, type PayHere, type RefundBody } from '../gateway/payhere.ts';
import type { Reference } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import type { ReadInvalidation } from '../reads/invalidation.ts';
import type { ChargeRequest } from '../schemas/charge.ts';
import { type Actor, visibleTo } from './access.ts';
import {
  type ChargeEngine,
  chargeResponse,
  HOLD_LIFETIME_MS,
  MAX_UPSTREAM_MS,
  SETTLE_INTERVAL_MS,
} from './charge-engine.ts';
import type { Holds } from './holds.ts';
import { recordRefundOutcome, settleLostRefund } from './refund-slots.ts';
import { ENDED, keepSubscriptionEnd } from './subscription-ends.ts';

type Result = APIGatewayProxyResult;

/**
 * What settles a money request whose outcome is unknown without the request itself: kept on its
 * idempotency record (lib/idempotency/) for the settle job, and built from the request when its
 * key is repeated. `role` decides what of PayHere's records the answer shows (lib/orders/access.ts).
 */
export type MoneySubject =
  | { operation: 'charge'; role: Actor['role']; sub: string; owner: string; body: ChargeRequest }
  | {
      operation: 'capture';
      role: Actor['role'];
      body: { authorization_token: string; amount: number; deduction_details: string };
      orderId?: string;
    }
  | { operation: 'refund'; role: Actor['role']; body: RefundBody; orderId?: string }
  | { operation: 'retrySubscription'; role: Actor['role']; subscriptionId: string }
  | { operation: 'cancelSubscription'; role: Actor['role']; subscriptionId: string };

/** The record the subject was kept on: its key (a charge's slot on the order) and when its request started. */
export interface Held {
  key: string;
  startedAt: number;
}

export interface SettleDeps {
  payhere: PayHere;
  ledger: LedgerStore;
  holds: Holds;
  /** How long after a request's window closed nothing in PayHere's records means not done. */
  settleDelayMs: number;
  /** What a settled request changed at PayHere is dropped from the shared reads. */
  invalidation?: ReadInvalidation;
  /** Epoch ms: when "now" is, for the settle delay (tests move it). */
  now?: () => number;
}

const nowOf = (deps: SettleDeps) => (deps.now ?? Date.now)();

/**
 * When the settle job looks again at what it could not settle: at its next run (serverless.yml runs
 * it every two minutes). What it looked at goes behind what is due, so nothing starves; the run's
 * cap, not a pause, bounds what retrying costs PayHere.
 */
export const LOOK_AGAIN_MS = SETTLE_INTERVAL_MS;
/** A hold shows only in its notification, on the ledger: looked at hourly (no PayHere call) until its lifetime ends. */
const LOOK_AGAIN_HOLD_MS = 60 * 60_000;

const windowOf = (startedAt: number) => ({ sentAt: startedAt, until: startedAt + MAX_UPSTREAM_MS });

/**
 * Settle a capture from the hold's order's payments: captured if they show the captured payment in
 * the capture's window; not done once the settle delay passed without it (PayHere captures a hold
 * once: a capture repeated after a wrong "not done" is refused, never doubled).
 */
export async function settleCapture(
  deps: SettleDeps,
  subject: Extract<MoneySubject, { operation: 'capture' }>,
  held: Held,
  deadline: number,
): Promise<Result> {
  const { body } = subject;
  const orderId =
    subject.orderId ?? (await deps.ledger.lookup('authorization', body.authorization_token))?.orderId;
  const window = windowOf(held.startedAt);
  if (orderId) {
    const found = await deps.payhere.reconcileCapture(body, window, deadline, orderId);
    if (found !== NOTHING) {
      await Promise.all([
        deps.holds.proven(orderId, body.authorization_token, 'captured', body.amount),
        deps.invalidation?.forgetOrder(orderId),
      ]);
      return paymentOutcomeResponse(visibleTo(actorOf(subject), found.data), found.msg, [2]);
    }
  }
  if (nowOf(deps) < window.until + deps.settleDelayMs) throw outcomeUnknown.capture(orderId);
  const reason = orderId
    ? "PayHere's records show no captured payment, a settle delay after the capture could have been processed: it was not processed."
    : 'The hold’s order is not in the ledger, so PayHere’s records cannot show the capture: it is taken as not processed (PayHere refuses a second capture of a captured hold).';
  return paymentOutcomeResponse(
    { status_code: -2, status_message: reason, ...(orderId ? { order_id: orderId } : {}) },
    reason,
    [2],
  );
}

/**
 * Settle a refund of a payment from what the ledger recorded of it and the payment's status
 * (lib/orders/refund-evidence.ts decides which status settles which refund): done only where
 * PayHere's records can show it; not done once the settle delay passed without a refund shown on a
 * payment refunded by nothing before; otherwise, after the delay, undeterminable (never a
 * success). The payment's refund slot is freed at the final answer. A hold's release has no record
 * at PayHere: it is settled as not done after the delay (PayHere refuses to release a released
 * hold, so a repeat cannot do harm).
 */
export async function settleRefund(
  deps: SettleDeps,
  subject: Extract<MoneySubject, { operation: 'refund' }>,
  held: Held,
  deadline: number,
): Promise<Result> {
  const { body } = subject;
  const final = nowOf(deps) >= windowOf(held.startedAt).until + deps.settleDelayMs;
  if ('authorization_token' in body) {
    const holdOrder =
      subject.orderId ?? (await deps.ledger.lookup('authorization', body.authorization_token))?.orderId;
    if (!final) throw outcomeUnknown.refund(holdOrder);
    return errorResponse(
      new GatewayRejectedError(
        'PayHere keeps no record of a hold’s release to check: it is taken as not processed. Release the hold again with a new Idempotency-Key if you still mean to (PayHere refuses a second release).',
      ),
    );
  }
  const paymentId = String(body.payment_id);
  const orderId = subject.orderId ?? (await deps.ledger.lookup('payment', paymentId))?.orderId;
  const hold = {
    paymentId,
    key: held.key,
    amountCents: body.amount === undefined ? null : Math.round(body.amount * 100),
  };
  const { evidence, status, refundId } = await settleLostRefund(deps, hold, orderId, final, deadline);
  if (evidence === 'refund_lost') throw outcomeUnknown.refund(orderId);
  await recordRefundOutcome(deps.ledger, hold, evidence, refundId);
  if (evidence === 'refund_accepted' || evidence === 'records_show_refund') {
    if (orderId) await deps.invalidation?.forgetOrder(orderId);
    return ok(
      evidence === 'refund_accepted'
        ? 'Successfully processed the refund'
        : `The gateway did not answer the refund, but its records show the payment ${status}.`,
      { refund_id: refundId },
    );
  }
  if (evidence === 'undeterminable') {
    const why = orderId
      ? `Payment ${paymentId} was refunded before, and PayHere's records show its status, not its refunds, so they cannot tell this refund from an earlier one`
      : `Payment ${paymentId} is not in the ledger, so PayHere's records of it cannot be read here`;
    log.warn('a lost refund cannot be determined', { paymentId, orderId, status });
    countMetric('RefundUndeterminable');
    return errorResponse(
      new OutcomeUndeterminableError(
        `${why}: whether this refund was made cannot be determined. Check the payment's refunds in PayHere's portal before refunding it again.`,
      ),
    );
  }
  return errorResponse(
    new GatewayRejectedError(
      `PayHere's records show no refund of payment ${paymentId}, a settle delay after it could have been processed: it was not processed. Refund it again with a new Idempotency-Key if you still mean to.`,
    ),
  );
}

/**
 * A retry PayHere charged: its subscription's order has the settle job read the subscription's
 * standing from PayHere's records at its next run (the installment it paid, COMPLETED if it was the
 * last), since PayHere sends no notification of a retry. Failures are logged: the charge stands,
 * and the next installment's notification reads the standing anyway.
 */
export async function afterRetryCharged(
  ledger: LedgerStore,
  subscriptionId: string,
  now: number,
  known?: Reference,
): Promise<void> {
  try {
    const reference = known ?? (await ledger.lookup('subscription', subscriptionId));
    if (reference) await ledger.checkStandingAt(reference.orderId, now);
  } catch (error) {
    log.warn('could not have a retried subscription’s standing read', { error: describeError(error) });
  }
}

/** Settle a retry from the subscription's payments: charged if one is in the retry's window. */
export async function settleRetry(
  deps: SettleDeps,
  subject: Extract<MoneySubject, { operation: 'retrySubscription' }>,
  held: Held,
  deadline: number,
): Promise<Result> {
  const window = windowOf(held.startedAt);
  const found = await deps.payhere.reconcileRetry(subject.subscriptionId, window, deadline);
  if (found !== NOTHING) {
    await deps.invalidation?.forgetSubscription(subject.subscriptionId);
    await afterRetryCharged(deps.ledger, subject.subscriptionId, nowOf(deps));
    return ok(found.msg, found.data);
  }
  if (nowOf(deps) < window.until + deps.settleDelayMs) throw outcomeUnknown.retry(subject.subscriptionId);
  return errorResponse(
    new GatewayRejectedError(
      `The subscription's payments show no new payment, a settle delay after the retry could have been processed: it was not processed. Retry again with a new Idempotency-Key if you still mean to.`,
    ),
  );
}

/**
 * Settle a cancel from the subscription's state as PayHere shows it now: CANCELLED is done (and
 * kept on its order, with its event, as the cancel's own answer would have been), COMPLETED is
 * PayHere's refusal; any other state, a settle delay after the cancel could have been processed,
 * is a cancel not processed. Never sent again.
 */
export async function settleCancel(
  deps: SettleDeps,
  subject: Extract<MoneySubject, { operation: 'cancelSubscription' }>,
  held: Held,
  deadline: number,
): Promise<Result> {
  const id = subject.subscriptionId;
  let status: string;
  try {
    ({ status } = (await deps.payhere.getSubscription(id, deadline, { reconciliation: true })).data);
  } catch (error) {
    throw outcomeUnknown.cancel(id, error);
  }
  const ended = status === 'CANCELLED' || status === 'COMPLETED';
  if (ended) {
    const reference = await deps.ledger.lookup('subscription', id);
    await keepSubscriptionEnd(
      deps.ledger,
      id,
      status,
      reference,
      status === 'CANCELLED' ? 'cancel_accepted' : 'cancel_refused',
    );
    await deps.invalidation?.forgetSubscription(id);
    if (status === 'CANCELLED') return ok('Successfully cancelled the subscription', null);
    return errorResponse(new ConflictError(ENDED.COMPLETED!));
  }
  if (nowOf(deps) < windowOf(held.startedAt).until + deps.settleDelayMs) throw outcomeUnknown.cancel(id);
  return errorResponse(
    new GatewayRejectedError(
      `The subscription is ${status}, a settle delay after the cancellation could have been processed: it was not processed. Send it again with a new Idempotency-Key if you still mean to.`,
    ),
  );
}

/**
 * Every money route's settlement, for the settle job (lib/settle/job.ts), which holds only what
 * the records kept: a charge is settled on its order (lib/orders/charge-engine.ts), the others above.
 */
export class MoneySettlement {
  readonly #deps: SettleDeps;
  readonly #chargeEngine: ChargeEngine;

  constructor(deps: SettleDeps & { chargeEngine: ChargeEngine }) {
    this.#deps = deps;
    this.#chargeEngine = deps.chargeEngine;
  }

  /** The answer the record's key gives from now on; OutcomeUnknownError while PayHere cannot tell. */
  async settle(subject: MoneySubject, held: Held, deadline: number): Promise<Result> {
    switch (subject.operation) {
      case 'charge': {
        const input = {
          actor: actorOf(subject),
          owner: subject.owner,
          body: subject.body,
          deadline,
          chargeKey: held.key,
        };
        const answer = await this.#chargeEngine.settle(
          input,
          held.startedAt,
          this.#deps.settleDelayMs,
          this.#deps.now,
        );
        return chargeResponse(input.actor, subject.body.type, answer);
      }
      case 'capture':
        return settleCapture(this.#deps, subject, held, deadline);
      case 'refund':
        return settleRefund(this.#deps, subject, held, deadline);
      case 'retrySubscription':
        return settleRetry(this.#deps, subject, held, deadline);
      case 'cancelSubscription':
        return settleCancel(this.#deps, subject, held, deadline);
    }
  }

  /** When the job looks again at a request `settle` could not settle yet. */
  nextLook(subject: MoneySubject, held: Held, now: number): number {
    if (subject.operation === 'charge' && subject.body.type === 'AUTHORIZE') {
      const expires = windowOf(held.startedAt).until + HOLD_LIFETIME_MS;
      return Math.max(now + LOOK_AGAIN_MS, Math.min(now + LOOK_AGAIN_HOLD_MS, expires));
    }
    return now + LOOK_AGAIN_MS;
  }
}

function actorOf(subject: MoneySubject): Actor {
  return { sub: subject.operation === 'charge' ? subject.sub : 'settle', role: subject.role };
}
