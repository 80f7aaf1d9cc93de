// The gateway's bookkeeping: payments, authorizations and subscriptions, and the transitions the
// Merchant API, PayHere's checkout and its scheduler perform on them. Inputs are already checked
// (validate.ts, control-requests.ts); answers are PayHere's envelopes, so the HTTP layer only
// serialises them. What PayHere would report to a notify_url waits in an outbox for whoever drove the
// transition to deliver, after answering.
import { ChargeBook, type PendingChargeView } from './charge-book.ts';
import type { CheckoutKind, CheckoutOutcome, CheckoutRequest, Result } from './control-requests.ts';
import { addAmounts, centsOf, isValidAmount } from './money.ts';
import type { Notification } from './notifications.ts';
import { failed, ok, PaymentBook, type StateOptions } from './payment-book.ts';
import type { Envelope, RefundStatus } from './records.ts';
import { type PaymentRefunds, RefundBook } from './refunds.ts';
import { CHECKOUT_PAYER, type SeedData, seedData } from './seed.ts';
import { checkoutStatus } from './statuses.ts';
import { SubscriptionBook } from './subscription-book.ts';
import type { CaptureRequest, ChargeRequest, RefundRequest } from './validate.ts';

/** What a completed checkout created; null where its kind or outcome creates nothing. */
export interface CheckoutResult {
  order_id: string;
  kind: CheckoutKind;
  outcome: CheckoutOutcome;
  status_code: number;
  /** PayHere numbers every attempt; only a successful payment shows in search. */
  payment_id: number;
  customer_token: string | null;
  authorization_token: string | null;
  subscription_id: number | null;
}

export type { PendingChargeView, PendingDecision, PendingOutcome } from './charge-book.ts';
export type { StateOptions } from './payment-book.ts';
export type { PaymentRefunds } from './refunds.ts';
export type { SubscriptionEnd, SubscriptionEvent } from './subscription-book.ts';

export class GatewayState {
  readonly #data: SeedData;
  readonly #payments: PaymentBook;
  readonly #charges: ChargeBook;
  readonly #refunds: RefundBook;
  readonly #subscriptions: SubscriptionBook;
  #outbox: Notification[] = [];

  constructor(options: StateOptions) {
    this.#data = seedData();
    this.#payments = new PaymentBook(options, this.#data);
    const notify = (notification: Notification) => this.#outbox.push(notification);
    this.#charges = new ChargeBook(options.now, this.#data, this.#payments, notify);
    this.#refunds = new RefundBook(options.now, this.#payments);
    this.#subscriptions = new SubscriptionBook(this.#data.subscriptions, this.#payments, notify);
  }

  searchPayments(orderId: string): Envelope {
    const records = this.#payments.ofOrder(orderId).map((p) => p.record);
    if (records.length === 0) return failed('No payments found');
    return ok(`Payments with order_id:${orderId}`, records);
  }

  /** The notifications of the transitions since the last call, to be delivered by the caller. */
  takeNotifications(): Notification[] {
    const taken = this.#outbox;
    this.#outbox = [];
    return taken;
  }

  // Charges, late and pending ones included, are a book of their own (sandbox/charge-book.ts).

  charge(request: ChargeRequest): Envelope {
    return this.#charges.charge(request);
  }

  /** The processLate fault: checked now, made `ms` later by processDue(). */
  chargeLate(request: ChargeRequest, ms: number): Envelope {
    return this.#charges.chargeLate(request, ms);
  }

  /**
   * Finishes the late charges due by now; answers how many. Called lazily before requests and by a
   * timer (server.ts), so it works with an injected clock as with real time.
   */
  processDue(): number {
    return this.#charges.processDue();
  }

  nextDueAt(): number | undefined {
    return this.#charges.nextDueAt();
  }

  lateCharges(): number {
    return this.#charges.lateCharges();
  }

  pendingCharges(): PendingChargeView[] {
    return this.#charges.pendingCharges();
  }

  decidePending(...args: Parameters<ChargeBook['decidePending']>): ReturnType<ChargeBook['decidePending']> {
    return this.#charges.decidePending(...args);
  }

  capture(request: CaptureRequest): Envelope {
    const authorization = this.#data.authorizations.get(request.authorization_token);
    if (!authorization) return failed('Invalid token');
    if (authorization.state !== 'AUTHORIZED')
      return failed(`Authorization is already ${authorization.state}`, -2);
    if (!isValidAmount(request.amount)) return failed('Invalid amount');
    if (centsOf(request.amount) > centsOf(authorization.amount)) {
      return failed('Capture amount must be less than or equal to the authorized amount');
    }

    authorization.state = 'CAPTURED';
    this.#payments.addPayment({
      paymentId: authorization.paymentId,
      orderId: authorization.orderId,
      description: authorization.items,
      currency: authorization.currency,
      amount: request.amount,
      payer: authorization.payer,
      items: authorization.itemLines,
    });
    return ok('Successfully captured payment', {
      status_code: 2,
      status_message: `Successfully received the ${authorization.payer.paymentMethod.method} payment`,
      payment_id: authorization.paymentId,
      currency: authorization.currency,
      amount: authorization.amount,
      captured_amount: request.amount,
      items: authorization.items,
      order_id: authorization.orderId,
      md5sig: this.#payments.sign(authorization.orderId, request.amount, authorization.currency, 2),
      custom_1: authorization.custom1,
      custom_2: authorization.custom2,
    });
  }

  refund(request: RefundRequest): Envelope {
    if (request.authorization_token !== undefined) {
      return this.#payments.releaseAuthorization(request.authorization_token, request.amount);
    }
    return this.#refunds.refund(request.payment_id, request.amount, request.description);
  }

  /** A payment's refunds and status (a control; PayHere's API has no such call). */
  refundsOf(paymentId: number): Result<PaymentRefunds> {
    return this.#refunds.refundsOf(paymentId);
  }

  /** PayHere moves a payment's refunds (or one) on to `step`. */
  advanceRefunds(paymentId: number, step: RefundStatus, refundId?: number): Result<PaymentRefunds> {
    return this.#refunds.advance(paymentId, step, refundId);
  }

  /** The customer ends a checkout in PayHere's SDK with the outcome the test chose. */
  completeCheckout(checkout: CheckoutRequest): CheckoutResult {
    const payer = structuredClone(CHECKOUT_PAYER);
    const succeeded = checkout.outcome === 'success';
    const status = checkoutStatus(checkout.kind, checkout.outcome, payer);
    const paymentId = this.#payments.newPaymentId();
    const amount = checkout.amount ?? 0;
    const result: CheckoutResult = {
      order_id: checkout.order_id,
      kind: checkout.kind,
      outcome: checkout.outcome,
      status_code: status.code,
      payment_id: paymentId,
      customer_token: null,
      authorization_token: null,
      subscription_id: null,
    };
    const notification: Notification = {
      url: checkout.notify_url,
      orderId: checkout.order_id,
      paymentId,
      amount,
      currency: checkout.currency,
      statusCode: status.code,
      statusMessage: status.message,
      custom1: checkout.custom_1 ?? null,
      custom2: checkout.custom_2 ?? null,
      payer: checkout.outcome === 'cancel' ? null : payer,
    };

    if (checkout.kind === 'recurring') {
      // The first payment carries the startup fee; the installments after it do not.
      notification.amount = addAmounts(amount, checkout.startup_fee ?? 0);
      const subscription = succeeded ? this.#subscriptions.add(checkout, payer, paymentId) : undefined;
      result.subscription_id = subscription?.record.subscription_id ?? null;
      notification.subscription = subscription
        ? this.#subscriptions.notice(subscription, 'AUTHORIZATION_SUCCESS')
        : {
            id: null,
            messageType: 'AUTHORIZATION_FAILED',
            recurrence: checkout.recurrence ?? '',
            duration: checkout.duration ?? '',
            status: null,
            nextDate: null,
            installmentsPaid: 0,
          };
    } else if (succeeded && checkout.kind === 'payment') {
      this.#payments.addPayment({
        paymentId,
        orderId: checkout.order_id,
        description: checkout.items,
        currency: checkout.currency,
        amount,
        payer,
        items: null,
      });
    } else if (succeeded && checkout.kind === 'preapproval') {
      result.customer_token = this.#payments.addPayer(payer);
      notification.customerToken = result.customer_token;
    } else if (succeeded && checkout.kind === 'authorize') {
      result.authorization_token = this.#payments.addAuthorization({
        paymentId,
        orderId: checkout.order_id,
        items: checkout.items,
        currency: checkout.currency,
        amount,
        custom1: checkout.custom_1 ?? null,
        custom2: checkout.custom_2 ?? null,
        itemLines: null,
        payer,
      });
      notification.authorizationToken = result.authorization_token;
      notification.capturedAmount = 0;
    }
    this.#outbox.push(notification);
    return result;
  }

  // The subscriptions are a book of their own (sandbox/subscription-book.ts).

  listSubscriptions(): Envelope {
    return this.#subscriptions.list();
  }

  getSubscription(id: number): Envelope {
    return this.#subscriptions.get(id);
  }

  subscriptionPayments(id: number): Envelope {
    return this.#subscriptions.payments(id);
  }

  retry(id: number): Envelope {
    return this.#subscriptions.retry(id);
  }

  cancel(id: number): Envelope {
    return this.#subscriptions.cancel(id);
  }

  chargeInstallment(
    ...args: Parameters<SubscriptionBook['chargeInstallment']>
  ): ReturnType<SubscriptionBook['chargeInstallment']> {
    return this.#subscriptions.chargeInstallment(...args);
  }

  endSubscription(
    ...args: Parameters<SubscriptionBook['endSubscription']>
  ): ReturnType<SubscriptionBook['endSubscription']> {
    return this.#subscriptions.endSubscription(...args);
  }
}
