import {
  ConflictError,
  GatewayError,
  GatewayRejectedError,
  NotFoundError,
  type OutcomeUnknownError,
} from '../envelope/errors.ts';
import type { ChargeRequest } from '../schemas/charge.ts';
import { outcomeUnknown } from './advice.ts';
import {
  type AdoptPayment,
  ALREADY_SETTLED,
  CAPTURE_ANSWERS,
  expectData,
  findSubscription,
  isRefusal,
  NO_PAYMENTS_FOUND,
  NOTHING,
  NoPaymentsError,
  type ReadOptions,
  type RefundBody,
  type Result,
  read,
  refused,
  rejection,
  subscriptionRefusal,
  V1,
} from './answers.ts';
import { type GatewayAnswer, type GatewayCall, type GatewayClient, LostAnswerError } from './client.ts';
import {
  type ChargeAdoption,
  type ChargeWindow,
  chargeDeadline,
  type ReconciledCharge,
  Reconciliation,
} from './reconcile.ts';
import type { Reservation } from './reservation.ts';
import {
  type CaptureResult,
  ChargeResult,
  PaymentList,
  type PaymentRecord,
  RefundResult,
  SubscriptionList,
  SubscriptionRecord,
} from './schemas.ts';

export {
  type AdoptPayment,
  chargeDeadline,
  findSubscription,
  NOTHING,
  type ReadOptions,
  type RefundBody,
  type Result,
};

/**
 * The Merchant API operations. Each money operation maps PayHere's answers in one place: the
 * result, a refusal PayHere answered (`answered`), or, for an answer it cannot use, the route's
 * outcome_unknown advice (`lost`). Reads map theirs to a result or a typed error.
 */
export class PayHere {
  readonly #client: GatewayClient;
  readonly #records: Reconciliation;

  constructor(client: GatewayClient) {
    this.#client = client;
    this.#records = new Reconciliation(this);
  }

  /** Open PayHere's connection ahead of the calls to come: GatewayClient.connectEarly. */
  connectEarly(): void {
    this.#client.connectEarly();
  }

  /** A read may call PayHere once it has looked for a shared answer: GatewayClient.prepare. */
  prepare(): void {
    this.#client.prepare();
  }

  /** A read will probably call PayHere after its lookup: its share and slot now (GatewayClient.reserve). */
  reserve(deadline: number): Reservation | undefined {
    return this.#client.reserve(deadline);
  }

  /** A lost charge, from the order's payments (lib/gateway/reconcile.ts). */
  reconcileCharge(...args: Parameters<Reconciliation['charge']>) {
    return this.#records.charge(...args);
  }

  /** A lost capture, from the hold's order's payments. */
  reconcileCapture(...args: Parameters<Reconciliation['capture']>) {
    return this.#records.capture(...args);
  }

  /** A lost refund, from the payment's status. */
  reconcileRefund(...args: Parameters<Reconciliation['refund']>) {
    return this.#records.refund(...args);
  }

  /** A lost retry, from the subscription's payments. */
  reconcileRetry(...args: Parameters<Reconciliation['retry']>) {
    return this.#records.retry(...args);
  }

  /**
   * Send a charge. Its upstream deadline (`window.until`, by default chargeDeadline) leaves time to
   * reconcile a lost answer before `deadline`: a lost answer is settled from the order's payments
   * (`adoption`: whose a payment is in the ledger, and the conditional write that claims one for
   * this charge).
   */
  async charge(
    request: ChargeRequest,
    deadline: number,
    options: { window?: ChargeWindow } & Pick<ChargeAdoption, 'adopt' | 'owner'> = {},
  ): Promise<Result<ChargeResult> & { possibleDuplicates?: string[] }> {
    const { window = { sentAt: Date.now(), until: chargeDeadline(deadline) }, ...adoption } = options;
    const call = { method: 'POST', path: `${V1}/payment/charge`, body: request, money: true } as const;
    let answer: GatewayAnswer;
    try {
      answer = await this.#client.call({ ...call, deadline: window.until });
    } catch (error) {
      if (!(error instanceof LostAnswerError)) throw error;
      return this.#settledCharge(request, window, deadline, { ...adoption, cause: error });
    }
    const { envelope } = answer;
    const result = ChargeResult.safeParse(envelope.data);
    if (isRefusal(envelope, result.success))
      throw refused(new GatewayRejectedError(rejection(envelope.msg, 'charge')));
    if (envelope.status !== 1 || !result.success) {
      const unusable = new LostAnswerError(new Error(`unusable charge answer (status ${envelope.status})`));
      return this.#settledCharge(request, window, deadline, { ...adoption, cause: unusable });
    }
    return { msg: envelope.msg || 'Automatic payment charged successfully', data: result.data };
  }

  /** A lost charge within its own request: nothing in the records yet is an unknown outcome. */
  async #settledCharge(
    request: ChargeRequest,
    window: ChargeWindow,
    deadline: number,
    adoption: ChargeAdoption,
  ): Promise<ReconciledCharge> {
    const found = await this.reconcileCharge(request, window, deadline, adoption);
    if (found === NOTHING) throw outcomeUnknown.charge(request.order_id, adoption.cause);
    return found;
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
      // 0 (PayHere's "unknown") or a code it does not document is no outcome: the capture may
      // have been made, and is settled from the hold's order's payments like a lost answer.
      return status === 1 && result.success && CAPTURE_ANSWERS.includes(Number(result.data.status_code))
        ? { msg: msg || 'Successfully captured payment', data: result.data }
        : undefined;
    });
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

  async paymentsOfOrder(
    orderId: string,
    deadline: number,
    options: ReadOptions = {},
  ): Promise<Result<PaymentRecord[]>> {
    const path = `${V1}/payment/search?order_id=${encodeURIComponent(orderId)}`;
    const { envelope } = await this.#client.call(read(path, deadline, options));
    if (envelope.status === -1) {
      if (NO_PAYMENTS_FOUND.test(envelope.msg ?? ''))
        throw new NoPaymentsError(`No payments were found for order ${orderId}.`);
      // Another refusal of the search is no statement about the order's payments.
      throw new GatewayRejectedError(rejection(envelope.msg, 'payment search'));
    }
    if (envelope.status === 0) {
      // docs/payhere.md "Payments of an order": status 0 is a pending payment, its data undocumented.
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

  async cancelSubscription(id: string, deadline: number): Promise<Result<null>> {
    const body = { subscription_id: Number(id) };
    const call = { method: 'POST', path: `${V1}/subscription/cancel`, body, money: true, deadline } as const;
    let envelope: GatewayAnswer['envelope'];
    try {
      ({ envelope } = await this.#client.call(call));
    } catch (error) {
      if (!(error instanceof LostAnswerError)) throw error;
      return this.#records.cancel(id, deadline, error);
    }
    if (envelope.status === -1) throw refused(subscriptionRefusal(id, envelope.msg));
    if (isRefusal(envelope, false))
      throw refused(new GatewayRejectedError(rejection(envelope.msg, 'cancellation')));
    if (envelope.status !== 1) return this.#records.cancel(id, deadline, undefined);
    return { msg: envelope.msg || 'Successfully cancelled the subscription', data: null };
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
}
