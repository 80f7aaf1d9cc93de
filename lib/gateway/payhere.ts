import {
  ConflictError,
  GatewayError,
  GatewayRejectedError,
  NotFoundError,
  OutcomeUnknownError,
} from '../envelope/errors.ts';
import { log } from '../log/log.ts';
import type { ChargeRequest } from '../schemas/charge.ts';
import { type GatewayAnswer, type GatewayCall, type GatewayClient, LostAnswerError } from './client.ts';
import { type ChargeWindow, chargeCandidates } from './reconcile.ts';
import {
  CaptureResult,
  ChargeResult,
  PaymentList,
  type PaymentRecord,
  RefundResult,
  SubscriptionList,
  SubscriptionRecord,
} from './schemas.ts';

const V1 = '/merchant/v1';

/** Claims a payment found by reconciliation for the lost charge; false when another charge holds it. */
export type AdoptPayment = (payment: PaymentRecord) => Promise<boolean>;

export interface Result<T> {
  msg: string;
  data: T;
  /** The gateway's answer is not final yet (a search answering status 0: payment pending). */
  pending?: true;
}

/** Time kept back from a charge's own deadline so a lost answer can still be reconciled. */
const RECONCILE_RESERVE_MS = 4_000;

/** The Merchant API operations, each turning PayHere's answer into a result or a typed error. */
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
    try {
      const { envelope } = await this.#client.call({ ...call, deadline: window.until });
      if (envelope.status === -1) throw new GatewayRejectedError(rejection(envelope.msg, 'charge'));
      const result = envelope.status === 1 ? ChargeResult.safeParse(envelope.data) : undefined;
      if (!result?.success)
        throw new LostAnswerError(new Error(`unusable charge answer (status ${envelope.status})`));
      return { msg: envelope.msg || 'Automatic payment charged successfully', data: result.data };
    } catch (error) {
      if (!(error instanceof LostAnswerError)) throw error;
      return this.reconcileCharge(request, window, deadline, options.adopt, error);
    }
  }

  /**
   * A charge whose answer was lost may have happened: the order's payments are the only record.
   * Exactly one payment in the charge's window, received and adopted by no other charge, is its
   * outcome; anything else stays unknown (several candidates are logged as a possible duplicate).
   */
  async reconcileCharge(
    request: ChargeRequest,
    window: ChargeWindow,
    deadline: number,
    adopt: AdoptPayment = async () => true,
    cause?: unknown,
  ): Promise<Result<ChargeResult>> {
    // A hold is no payment: the order search cannot show it, so its outcome stays unknown.
    if (request.type === 'AUTHORIZE') throw moneyOutcomeUnknown('authorization', cause);
    let payments: PaymentRecord[];
    try {
      const found = await this.paymentsOfOrder(request.order_id, deadline);
      // A pending search shows no received payment: the charge's outcome is not final either.
      payments = found.pending ? [] : found.data;
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw chargeOutcomeUnknown(request.order_id, error);
      payments = [];
    }
    const candidates = chargeCandidates(payments, request, window);
    if (candidates.length > 1) {
      log.warn('possible duplicate charge: several payments match one lost charge', {
        orderId: request.order_id,
        paymentIds: candidates.map((payment) => payment.payment_id),
      });
      throw new OutcomeUnknownError(
        `The gateway did not answer the charge, and order ${request.order_id} shows several payments that could be it. ` +
          "Do not charge again: the merchant must check the order's payments.",
        cause,
      );
    }
    const found = candidates[0];
    if (!found) throw chargeOutcomeUnknown(request.order_id, cause);
    if (found.status !== 'RECEIVED') {
      throw new OutcomeUnknownError(
        `The gateway did not answer the charge; order ${request.order_id} shows payment ${found.payment_id}, ` +
          `now ${found.status}, so the order is not paid. Do not charge again before checking it.`,
        cause,
      );
    }
    if (!(await adopt(found))) throw chargeOutcomeUnknown(request.order_id, cause);
    return {
      msg: 'The gateway did not answer the charge, but its records show the payment was received.',
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

  async capture(
    body: { authorization_token: string; amount: number; deduction_details: string },
    deadline: number,
  ): Promise<Result<CaptureResult>> {
    const envelope = await this.#money('capture', {
      method: 'POST',
      path: `${V1}/payment/capture`,
      body,
      deadline,
    });
    if (envelope.status === -2 && /already/i.test(envelope.msg ?? '')) throw new ConflictError(envelope.msg!);
    if (envelope.status === -1) throw new GatewayRejectedError(rejection(envelope.msg, 'capture'));
    const result = envelope.status === 1 ? CaptureResult.safeParse(envelope.data) : undefined;
    if (!result?.success) throw moneyOutcomeUnknown('capture');
    return { msg: envelope.msg || 'Successfully captured payment', data: result.data };
  }

  async refund(
    body: Record<string, unknown>,
    deadline: number,
  ): Promise<Result<{ refund_id: number | null }>> {
    const envelope = await this.#money('refund', {
      method: 'POST',
      path: `${V1}/payment/refund`,
      body,
      deadline,
    });
    // -1: not possible (unknown payment, already refunded, amount too high); 0: could not be initiated.
    if (envelope.status === -1 || envelope.status === 0) {
      throw new GatewayRejectedError(rejection(envelope.msg, 'refund'));
    }
    const refundId = envelope.status === 1 ? RefundResult.safeParse(envelope.data) : undefined;
    if (!refundId?.success) throw moneyOutcomeUnknown('refund');
    const id = refundId.data;
    return {
      msg: envelope.msg || 'Successfully processed the refund',
      data: { refund_id: id === null || id === undefined ? null : Number(id) },
    };
  }

  async paymentsOfOrder(orderId: string, deadline: number): Promise<Result<PaymentRecord[]>> {
    const path = `${V1}/payment/search?order_id=${encodeURIComponent(orderId)}`;
    const { envelope } = await this.#client.call({ method: 'GET', path, money: false, deadline });
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

  async listSubscriptions(deadline: number): Promise<Result<SubscriptionRecord[]>> {
    const { envelope } = await this.#client.call({
      method: 'GET',
      path: `${V1}/subscription`,
      money: false,
      deadline,
    });
    const subscriptions = expectData(SubscriptionList, envelope);
    return { msg: `Found ${subscriptions.length} subscriptions`, data: subscriptions };
  }

  /** The one-subscription endpoint is newer than the list; where it does not answer, list and filter. */
  async getSubscription(id: string, deadline: number): Promise<Result<SubscriptionRecord>> {
    const path = `${V1}/subscription/${id}`;
    const { httpStatus, envelope } = await this.#client.call({
      method: 'GET',
      path,
      money: false,
      deadline,
      allowNotFound: true,
    });
    if (envelope.status === 1) {
      const record = SubscriptionRecord.safeParse(envelope.data);
      if (!record.success) throw new GatewayError();
      return { msg: envelope.msg || 'Found subscription', data: record.data };
    }
    if (httpStatus !== 404 && envelope.status !== -1) throw new GatewayError();
    const { data } = await this.listSubscriptions(deadline);
    const found = data.find((subscription) => String(subscription.subscription_id) === id);
    if (!found) throw new NotFoundError(`Subscription ${id} was not found.`);
    return { msg: 'Found subscription', data: found };
  }

  async subscriptionPayments(id: string, deadline: number): Promise<Result<PaymentRecord[]>> {
    const path = `${V1}/subscription/${id}/payments`;
    const { envelope } = await this.#client.call({ method: 'GET', path, money: false, deadline });
    if (envelope.status === -1)
      throw new NotFoundError(`Subscription ${id} was not found or has no payments.`);
    const payments = expectData(PaymentList, envelope);
    return { msg: `Found ${payments.length} payments`, data: payments };
  }

  async retrySubscription(id: string, deadline: number): Promise<Result<null>> {
    const body = { subscription_id: Number(id) };
    const call = { method: 'POST', path: `${V1}/subscription/retry`, body, deadline } as const;
    const envelope = await this.#money('subscription retry', call);
    if (envelope.status === -1) throw subscriptionRefusal(id, envelope.msg);
    if (envelope.status !== 1) throw moneyOutcomeUnknown('subscription retry');
    return { msg: envelope.msg || 'Recurring payment charged successfully', data: null };
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
    if (envelope.status === -1) throw subscriptionRefusal(id, envelope.msg);
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
    throw new OutcomeUnknownError(
      'The gateway did not confirm the cancellation; it may have been processed. Send the DELETE again: ' +
        '"already cancelled" then means it was done.',
      cause,
    );
  }

  /** A money call: a lost answer becomes outcome_unknown (the caller must not blindly resend). */
  async #money(operation: string, call: Omit<GatewayCall, 'money'>) {
    try {
      return (await this.#client.call({ ...call, money: true })).envelope;
    } catch (error) {
      if (error instanceof LostAnswerError) throw moneyOutcomeUnknown(operation, error);
      throw error;
    }
  }
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

function rejection(msg: string | null | undefined, operation: string): string {
  return msg ? `The gateway refused the ${operation}: ${msg}` : `The gateway refused the ${operation}.`;
}

function subscriptionRefusal(id: string, msg: string | null | undefined) {
  if (/not found/i.test(msg ?? '')) return new NotFoundError(`Subscription ${id} was not found.`);
  return new ConflictError(msg || `Subscription ${id} is not in a state that allows this.`);
}

function chargeOutcomeUnknown(orderId: string, cause: unknown): OutcomeUnknownError {
  return new OutcomeUnknownError(
    `The gateway did not answer the charge and no payment for order ${orderId} is visible yet. ` +
      'Do not charge again: retry this request with the same Idempotency-Key later to check its outcome.',
    cause,
  );
}

function moneyOutcomeUnknown(operation: string, cause?: unknown): OutcomeUnknownError {
  return new OutcomeUnknownError(
    `The gateway did not confirm the ${operation}; it may have been processed. ` +
      'Do not send it again with a new key: check its outcome before acting, or retry with the same Idempotency-Key.',
    cause,
  );
}
