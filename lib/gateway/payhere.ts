import {
  type ApiError,
  ConflictError,
  GatewayError,
  GatewayRejectedError,
  NotFoundError,
  OutcomeUnknownError,
  reached,
} from '../envelope/errors.ts';
import { log } from '../log/log.ts';
import type { ChargeRequest } from '../schemas/charge.ts';
import { outcomeUnknown } from './advice.ts';
import { type GatewayAnswer, type GatewayCall, type GatewayClient, LostAnswerError } from './client.ts';
import { type ChargeWindow, chargeCandidates, gatewayDateToEpoch } from './reconcile.ts';
import {
  type CaptureResult,
  ChargeResult,
  PaymentList,
  type PaymentRecord,
  RefundResult,
  SubscriptionList,
  SubscriptionRecord,
} from './schemas.ts';

const V1 = '/merchant/v1';

/** A refund as PayHere takes it: a payment (fully or partly) or a hold (released whole). */
export type RefundBody =
  | { payment_id: number; description: string; amount?: number }
  | { authorization_token: string; description: string };

/** Claims a payment found by reconciliation for the lost charge; false when another charge holds it. */
export type AdoptPayment = (payment: PaymentRecord) => Promise<boolean>;

export interface Result<T> {
  msg: string;
  data: T;
  /** The gateway's answer is not final yet (a search answering status 0: payment pending). */
  pending?: true;
}

/** PayHere's records answered, and show nothing of the money request (its settlement decides when that means not done). */
export const NOTHING = 'nothing';

/** Time kept back from a charge's own deadline so a lost answer can still be reconciled. */
const RECONCILE_RESERVE_MS = 4_000;

/** A refusal PayHere answered: the request reached it and was not processed. */
const refused = <E extends ApiError>(error: E): E => reached(error, 'answered');

/** PayHere's documented capture refusals that are about state (GATEWAY.md "Capture"). */
const ALREADY_SETTLED = /^Authorization is already (CAPTURED|REFUNDED)\.?$/i;

/**
 * The Merchant API operations. Each money operation maps PayHere's answers in one place: the
 * result, a refusal PayHere answered (`answered`), or, for an answer it cannot use, the route's
 * outcome_unknown advice (`lost`). Reads map theirs to a result or a typed error.
 */
export class PayHere {
  readonly #client: GatewayClient;

  constructor(client: GatewayClient) {
    this.#client = client;
  }

  /**
   * Send a charge. Its upstream deadline (`window.until`, by default chargeDeadline) leaves time to
   * reconcile a lost answer before `deadline`: a lost answer is settled from the order's payments;
   * `adopt` claims the payment found for this charge (the ledger's conditional write) and refuses
   * one another charge adopted.
   */
  async charge(
    request: ChargeRequest,
    deadline: number,
    options: { window?: ChargeWindow; adopt?: AdoptPayment } = {},
  ): Promise<Result<ChargeResult>> {
    const window = options.window ?? { sentAt: Date.now(), until: chargeDeadline(deadline) };
    const call = { method: 'POST', path: `${V1}/payment/charge`, body: request, money: true } as const;
    let answer: GatewayAnswer;
    try {
      answer = await this.#client.call({ ...call, deadline: window.until });
    } catch (error) {
      if (!(error instanceof LostAnswerError)) throw error;
      return this.#settledCharge(request, window, deadline, options.adopt, error);
    }
    const { envelope } = answer;
    const result = ChargeResult.safeParse(envelope.data);
    if (isRefusal(envelope, result.success))
      throw refused(new GatewayRejectedError(rejection(envelope.msg, 'charge')));
    if (envelope.status !== 1 || !result.success) {
      const unusable = new LostAnswerError(new Error(`unusable charge answer (status ${envelope.status})`));
      return this.#settledCharge(request, window, deadline, options.adopt, unusable);
    }
    return { msg: envelope.msg || 'Automatic payment charged successfully', data: result.data };
  }

  /** A lost charge within its own request: nothing in the records yet is an unknown outcome. */
  async #settledCharge(
    request: ChargeRequest,
    window: ChargeWindow,
    deadline: number,
    adopt: AdoptPayment | undefined,
    cause: unknown,
  ): Promise<Result<ChargeResult>> {
    const found = await this.reconcileCharge(request, window, deadline, adopt, cause);
    if (found === NOTHING) throw outcomeUnknown.charge(request.order_id, cause);
    return found;
  }

  /**
   * A charge whose answer was lost may have happened: the order's payments are the only record.
   * Exactly one payment in the charge's window, received and adopted by no other charge, is its
   * outcome; NOTHING when PayHere's records answered and show none. Anything else stays unknown
   * (several candidates are logged as a possible duplicate; a search that fails says nothing). A
   * payment refunded or charged back since is not reported as paid until the charge is settled for
   * good (`final`, the settle delay passed): money moved, so it is the charge's outcome then.
   */
  async reconcileCharge(
    request: ChargeRequest,
    window: ChargeWindow,
    deadline: number,
    adopt: AdoptPayment = async () => true,
    cause?: unknown,
    final = false,
  ): Promise<Result<ChargeResult> | typeof NOTHING> {
    // A hold is no payment: the order search cannot show it; only PayHere's notification can.
    if (request.type === 'AUTHORIZE') throw outcomeUnknown.hold(request.order_id, cause);
    const payments = await this.#paymentsForReconciliation(request.order_id, deadline, () =>
      outcomeUnknown.charge(request.order_id, cause),
    );
    const candidates = chargeCandidates(payments, request, window);
    if (candidates.length > 1) {
      log.warn('possible duplicate charge: several payments match one lost charge', {
        orderId: request.order_id,
        paymentIds: candidates.map((payment) => payment.payment_id),
      });
      throw reached(
        new OutcomeUnknownError(
          `The gateway did not answer the charge, and order ${request.order_id} shows several payments that could be it. ` +
            "Do not charge again: the merchant must check the order's payments.",
          cause,
        ),
        'lost',
      );
    }
    const found = candidates[0];
    if (!found) return NOTHING;
    if (found.status !== 'RECEIVED' && !final) {
      throw reached(
        new OutcomeUnknownError(
          `The gateway did not answer the charge; order ${request.order_id} shows payment ${found.payment_id}, ` +
            `now ${found.status}, so the order is not paid. Do not charge again before checking it.`,
          cause,
        ),
        'lost',
      );
    }
    if (!(await adopt(found))) throw outcomeUnknown.charge(request.order_id, cause);
    return {
      msg:
        found.status === 'RECEIVED'
          ? 'The gateway did not answer the charge, but its records show the payment was received.'
          : `The gateway did not answer the charge, but its records show the payment, now ${found.status}.`,
      data: {
        order_id: found.order_id,
        items: request.items,
        currency: found.currency,
        amount: found.amount,
        custom_1: request.custom_1 ?? null,
        custom_2: request.custom_2 ?? null,
        payment_id: found.payment_id,
        status_code: 2,
        status_message: `Payment ${found.status} according to the gateway's records.`,
        md5sig: null,
        authorization_token: null,
      },
    };
  }

  /** Capture a hold; `orderId` (the hold's order, when the ledger knows it) names the read in advice. */
  async capture(
    body: { authorization_token: string; amount: number; deduction_details: string },
    deadline: number,
    orderId?: string,
  ): Promise<Result<CaptureResult>> {
    const call = { method: 'POST', path: `${V1}/payment/capture`, body, deadline } as const;
    return this.#money(call, outcomeUnknown.capture.bind(null, orderId), (envelope) => {
      const { status, msg, data } = envelope;
      if (status === -2 && ALREADY_SETTLED.test(msg ?? '')) throw refused(new ConflictError(msg!));
      const result = ChargeResult.safeParse(data);
      if (isRefusal(envelope, result.success))
        throw refused(new GatewayRejectedError(rejection(msg, 'capture')));
      return status === 1 && result.success
        ? { msg: msg || 'Successfully captured payment', data: result.data }
        : undefined;
    });
  }

  /**
   * A capture whose answer was lost, repeated: captured if the hold's order shows exactly one
   * payment of the captured amount made within the capture's window; NOTHING if it shows none.
   */
  async reconcileCapture(
    body: { amount: number },
    window: ChargeWindow,
    deadline: number,
    orderId: string | undefined,
  ): Promise<Result<CaptureResult> | typeof NOTHING> {
    if (!orderId) throw outcomeUnknown.capture(undefined);
    const payments = await this.#paymentsForReconciliation(orderId, deadline, () =>
      outcomeUnknown.capture(orderId),
    );
    const captured = payments.filter((payment) => {
      const at = gatewayDateToEpoch(payment.date);
      return (
        Math.round(payment.amount * 100) === Math.round(body.amount * 100) &&
        at !== undefined &&
        at >= Math.floor(window.sentAt / 1000) * 1000 &&
        at <= Math.ceil(window.until / 1000) * 1000
      );
    });
    const [payment] = captured;
    if (captured.length === 0) return NOTHING;
    if (captured.length !== 1 || !payment) throw outcomeUnknown.capture(orderId);
    return {
      msg: 'The gateway did not answer the capture, but its records show the payment was captured.',
      data: {
        status_code: 2,
        status_message: `Payment ${payment.status} according to the gateway's records.`,
        payment_id: payment.payment_id,
        order_id: payment.order_id,
        currency: payment.currency,
        captured_amount: payment.amount,
      },
    };
  }

  async refund(
    body: RefundBody,
    deadline: number,
    orderId?: string,
  ): Promise<Result<{ refund_id: number | null }>> {
    const call = { method: 'POST', path: `${V1}/payment/refund`, body, deadline } as const;
    return this.#money(call, outcomeUnknown.refund.bind(null, orderId), (envelope) => {
      const { status, msg, data } = envelope;
      // -1: not possible (unknown payment, already refunded, amount too high); 0: could not be initiated.
      if (status === 0 || isRefusal(envelope, false))
        throw refused(new GatewayRejectedError(rejection(msg, 'refund')));
      const refundId = status === 1 ? RefundResult.safeParse(data) : undefined;
      if (!refundId?.success) return undefined;
      const id = refundId.data;
      return {
        msg: msg || 'Successfully processed the refund',
        data: { refund_id: id === null || id === undefined ? null : Number(id) },
      };
    });
  }

  /**
   * A refund of a payment whose answer was lost, repeated: refunded if the payment now shows a
   * refund, NOTHING if it shows none. A partial refund of a payment refunded in part before cannot
   * be told apart from the earlier one: taken as done, the side that refunds nothing twice. A hold's
   * release has no record to read at all: advice.
   */
  async reconcileRefund(
    body: RefundBody,
    deadline: number,
    orderId: string | undefined,
  ): Promise<Result<{ refund_id: number | null }> | typeof NOTHING> {
    if (!orderId || !('payment_id' in body)) throw outcomeUnknown.refund(orderId);
    const paymentId = String(body.payment_id);
    const payments = await this.#paymentsForReconciliation(orderId, deadline, () =>
      outcomeUnknown.refund(orderId),
    );
    const payment = payments.find((record) => String(record.payment_id) === paymentId);
    if (!payment?.status.startsWith('REFUND')) return NOTHING;
    return {
      msg: `The gateway did not answer the refund, but its records show the payment ${payment.status}.`,
      data: { refund_id: null },
    };
  }

  async paymentsOfOrder(
    orderId: string,
    deadline: number,
    options: ReadOptions = {},
  ): Promise<Result<PaymentRecord[]>> {
    const path = `${V1}/payment/search?order_id=${encodeURIComponent(orderId)}`;
    const { envelope } = await this.#client.call(read(path, deadline, options));
    if (envelope.status === -1) throw new NotFoundError(`No payments were found for order ${orderId}.`);
    if (envelope.status === 0) {
      // GATEWAY.md: status 0 of a retrieval means the payment is pending; what data it carries is undocumented.
      const records = PaymentList.safeParse(envelope.data);
      return {
        msg: `The payment of order ${orderId} is pending at the gateway; check again later.`,
        data: records.success ? records.data : [],
        pending: true,
      };
    }
    return { msg: `Payments with order_id:${orderId}`, data: expectData(PaymentList, envelope) };
  }

  async listSubscriptions(
    deadline: number,
    options: ReadOptions = {},
  ): Promise<Result<SubscriptionRecord[]>> {
    const { envelope } = await this.#client.call(read(`${V1}/subscription`, deadline, options));
    const subscriptions = expectData(SubscriptionList, envelope);
    return { msg: `Found ${subscriptions.length} subscriptions`, data: subscriptions };
  }

  /** The one-subscription endpoint is newer than the list; where it does not answer, list and filter. */
  async getSubscription(
    id: string,
    deadline: number,
    options: ReadOptions = {},
  ): Promise<Result<SubscriptionRecord>> {
    const one = await this.oneSubscription(id, deadline, options);
    if (typeof one !== 'string') return one;
    const found = findSubscription((await this.listSubscriptions(deadline, options)).data, id);
    if (!found) throw new NotFoundError(`Subscription ${id} was not found.`);
    return { msg: 'Found subscription', data: found };
  }

  /**
   * The one-subscription endpoint alone: the record; `not_found` when PayHere's envelope says so (a
   * 404 or status -1: the list may still hold it); `unsupported` when a bare 404 says this PayHere
   * has no such endpoint at all.
   */
  async oneSubscription(
    id: string,
    deadline: number,
    options: ReadOptions = {},
  ): Promise<Result<SubscriptionRecord> | 'not_found' | 'unsupported'> {
    const path = `${V1}/subscription/${id}`;
    const { httpStatus, envelope, bare } = await this.#client.call({
      ...read(path, deadline, options),
      allowNotFound: true,
    });
    if (envelope.status === 1) {
      const record = SubscriptionRecord.safeParse(envelope.data);
      if (!record.success) throw new GatewayError();
      return { msg: envelope.msg || 'Found subscription', data: record.data };
    }
    if (bare) return 'unsupported';
    if (httpStatus !== 404 && envelope.status !== -1) throw new GatewayError();
    return 'not_found';
  }

  async subscriptionPayments(
    id: string,
    deadline: number,
    options: ReadOptions = {},
  ): Promise<Result<PaymentRecord[]>> {
    const path = `${V1}/subscription/${id}/payments`;
    const { envelope } = await this.#client.call(read(path, deadline, options));
    if (envelope.status === -1)
      throw new NotFoundError(`Subscription ${id} was not found or has no payments.`);
    const payments = expectData(PaymentList, envelope);
    return { msg: `Found ${payments.length} payments`, data: payments };
  }

  async retrySubscription(id: string, deadline: number): Promise<Result<null>> {
    const body = { subscription_id: Number(id) };
    const call = { method: 'POST', path: `${V1}/subscription/retry`, body, deadline } as const;
    return this.#money(call, outcomeUnknown.retry.bind(null, id), (envelope) => {
      const { status, msg } = envelope;
      if (status === -1) throw refused(subscriptionRefusal(id, msg));
      if (isRefusal(envelope, false)) throw refused(new GatewayRejectedError(rejection(msg, 'retry')));
      return status === 1 ? { msg: msg || 'Recurring payment charged successfully', data: null } : undefined;
    });
  }

  /**
   * A retry whose answer was lost, repeated: charged if the subscription shows a payment made within
   * its window, NOTHING if it shows none.
   */
  async reconcileRetry(
    id: string,
    window: ChargeWindow,
    deadline: number,
  ): Promise<Result<null> | typeof NOTHING> {
    let payments: PaymentRecord[];
    try {
      ({ data: payments } = await this.subscriptionPayments(id, deadline, { reconciliation: true }));
    } catch (error) {
      if (error instanceof NotFoundError) return NOTHING;
      throw outcomeUnknown.retry(id, error);
    }
    const charged = payments.some((payment) => {
      const at = gatewayDateToEpoch(payment.date);
      return (
        at !== undefined &&
        at >= Math.floor(window.sentAt / 1000) * 1000 &&
        at <= Math.ceil(window.until / 1000) * 1000
      );
    });
    if (!charged) return NOTHING;
    return {
      msg: 'The gateway did not answer the retry, but its records show the installment was charged.',
      data: null,
    };
  }

  async cancelSubscription(id: string, deadline: number): Promise<Result<null>> {
    const body = { subscription_id: Number(id) };
    const call = { method: 'POST', path: `${V1}/subscription/cancel`, body, money: true, deadline } as const;
    let envelope: GatewayAnswer['envelope'];
    try {
      ({ envelope } = await this.#client.call(call));
    } catch (error) {
      if (!(error instanceof LostAnswerError)) throw error;
      return this.#reconcileCancel(id, deadline, error);
    }
    if (envelope.status === -1) throw refused(subscriptionRefusal(id, envelope.msg));
    if (isRefusal(envelope, false))
      throw refused(new GatewayRejectedError(rejection(envelope.msg, 'cancellation')));
    if (envelope.status !== 1) return this.#reconcileCancel(id, deadline, undefined);
    return { msg: envelope.msg || 'Successfully cancelled the subscription', data: null };
  }

  /** A cancel whose answer was lost is settled by the subscription's state. */
  async #reconcileCancel(id: string, deadline: number, cause: unknown): Promise<Result<null>> {
    try {
      const { data } = await this.getSubscription(id, deadline);
      if (data.status === 'CANCELLED') return { msg: 'Successfully cancelled the subscription', data: null };
    } catch {
      // fall through: the state could not be read
    }
    throw outcomeUnknown.cancel(id, cause);
  }

  /**
   * Send a money call and map its answer with `interpret` (a result, a refusal thrown as
   * `answered`, or undefined for an answer it cannot use). An unusable or lost answer is `advice`.
   */
  async #money<T>(
    call: Omit<GatewayCall, 'money'>,
    advice: (cause?: unknown) => OutcomeUnknownError,
    interpret: (envelope: GatewayAnswer['envelope']) => T | undefined,
  ): Promise<T> {
    let envelope: GatewayAnswer['envelope'];
    try {
      ({ envelope } = await this.#client.call({ ...call, money: true }));
    } catch (error) {
      if (error instanceof LostAnswerError) throw advice(error);
      throw error;
    }
    const result = interpret(envelope);
    if (result === undefined) throw advice(new Error(`unusable answer (status ${envelope.status})`));
    return result;
  }

  /**
   * An order's payments for reconciliation: none is an answer; a failed search leaves the outcome
   * unknown. Always PayHere's own answer, never one shared between readers (lib/reads/): it settles
   * money.
   */
  async #paymentsForReconciliation(
    orderId: string,
    deadline: number,
    unknown: () => OutcomeUnknownError,
  ): Promise<PaymentRecord[]> {
    try {
      const found = await this.paymentsOfOrder(orderId, deadline, { reconciliation: true });
      // A pending search shows no received payment: the outcome is not final either.
      return found.pending ? [] : found.data;
    } catch (error) {
      if (error instanceof NotFoundError) return [];
      throw reached(unknown(), 'lost');
    }
  }
}

/**
 * `reconciliation`: the read settles money (a lost money request, a report the settle job checks),
 * and draws on the budget's reserved share, which other reads cannot take.
 */
export interface ReadOptions {
  reconciliation?: boolean;
}

function read(path: string, deadline: number, options: ReadOptions): GatewayCall {
  return {
    method: 'GET',
    path,
    money: false,
    deadline,
    ...(options.reconciliation ? { reconciliation: true } : {}),
  };
}

/** Subscription `id` (digits, leading zeros allowed) in a list of PayHere's subscriptions. */
export function findSubscription(
  subscriptions: readonly SubscriptionRecord[],
  id: string,
): SubscriptionRecord | undefined {
  return subscriptions.find((subscription) => String(subscription.subscription_id) === String(Number(id)));
}

/** The upstream deadline of a charge: time is kept back to reconcile a lost answer by `deadline`. */
export function chargeDeadline(deadline: number): number {
  const now = Date.now();
  return Math.max(now + (deadline - now) / 2, deadline - RECONCILE_RESERVE_MS);
}

function expectData<T>(
  schema: { safeParse(input: unknown): { success: true; data: T } | { success: false } },
  envelope: GatewayAnswer['envelope'],
): T {
  if (envelope.status !== 1) throw new GatewayError();
  const parsed = schema.safeParse(envelope.data);
  if (!parsed.success) throw new GatewayError();
  return parsed.data;
}

/**
 * PayHere's documented refusal envelopes (GATEWAY.md "Envelope and generic errors"): top-level
 * `status` -1, or -2 without a usable result ("Customer authentication failed", and whatever else
 * PayHere words its refusals with). The request was refused, not processed: an answer, never an
 * unknown outcome. (The exact "Authentication error" never gets here: the client reads it as a
 * refused access token.)
 */
function isRefusal(envelope: GatewayAnswer['envelope'], usableData: boolean): boolean {
  return envelope.status === -1 || (envelope.status === -2 && !usableData);
}

function rejection(msg: string | null | undefined, operation: string): string {
  return msg ? `The gateway refused the ${operation}: ${msg}` : `The gateway refused the ${operation}.`;
}

function subscriptionRefusal(id: string, msg: string | null | undefined) {
  if (/not found/i.test(msg ?? '')) return new NotFoundError(`Subscription ${id} was not found.`);
  return new ConflictError(msg || `Subscription ${id} is not in a state that allows this.`);
}
