// The gateway's bookkeeping: payments, authorizations and subscriptions, and the transitions the
// Merchant API, PayHere's checkout and its scheduler perform on them. Inputs are already checked
// (validate.ts, control-requests.ts); answers are PayHere's envelopes, so the HTTP layer only
// serialises them. What PayHere would report to a notify_url waits in an outbox for whoever drove the
// transition to deliver, after answering.
import { randomBytes, randomUUID } from 'node:crypto';
import {
  type CheckoutKind,
  type CheckoutOutcome,
  type CheckoutRequest,
  type Result,
  refused,
} from './control-requests.ts';
import { ACCEPTED_CURRENCIES, amountDetail, centsOf, formatAmount, isValidAmount } from './money.ts';
import {
  type MessageType,
  type Notification,
  type SubscriptionNotice,
  subscriptionNotice,
} from './notifications.ts';
import type {
  Authorization,
  Envelope,
  ItemLine,
  Payer,
  StoredPayment,
  StoredSubscription,
} from './records.ts';
import { installmentCount, recurringSentence } from './recurrence.ts';
import { CHECKOUT_PAYER, SEED, type SeedData, seedData } from './seed.ts';
import { md5sig } from './signature.ts';
import {
  CHARGE_AUTHORIZED,
  CHARGE_STATUS,
  checkoutStatus,
  installmentStatus,
  type Status,
  SUBSCRIPTION_COMPLETED,
  SUBSCRIPTION_STOPPED,
} from './statuses.ts';
import type { CaptureRequest, ChargeRequest, RefundRequest } from './validate.ts';

// Generated ids start far from the seeded ones so they can never collide.
const FIRST_PAYMENT_ID = 320040000001;
const FIRST_REFUND_NUMBER = 560034010257;
const FIRST_SUBSCRIPTION_ID = 420080000001;
const SRI_LANKA_OFFSET_MS = 5.5 * 60 * 60 * 1000;

// How PayHere ends a subscription, and the state that already rules the end out.
const SUBSCRIPTION_ENDS = {
  complete: {
    status: 'COMPLETED',
    messageType: 'RECURRING_COMPLETE',
    notice: SUBSCRIPTION_COMPLETED,
    refusedWhen: 'CANCELLED',
  },
  stop: {
    status: 'CANCELLED',
    messageType: 'RECURRING_STOPPED',
    notice: SUBSCRIPTION_STOPPED,
    refusedWhen: 'COMPLETED',
  },
} as const;

export type SubscriptionEnd = keyof typeof SUBSCRIPTION_ENDS;

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

/** What an installment or the end of a subscription did. */
export interface SubscriptionEvent {
  subscription_id: number;
  message_type: MessageType;
  /** The installment's payment id (also a declined one's); null when a subscription ends. */
  payment_id: number | null;
  status: string;
  installments_paid: number;
}

function ok(msg: string, data: unknown = null): Envelope {
  return { status: 1, msg, data };
}

function failed(msg: string, status = -1): Envelope {
  return { status, msg, data: null };
}

function append<Key, Value>(map: Map<Key, Value[]>, key: Key, value: Value): void {
  const values = map.get(key);
  if (values) values.push(value);
  else map.set(key, [value]);
}

export interface StateOptions {
  now: () => number;
  merchantId: string;
  merchantSecret: string;
}

/**
 * PayHere never hands out an id twice: the counters outlive a reset of the seeded data (and are
 * shared by every sandbox in a process), so a client's records of earlier ids stay unambiguous.
 */
const ids = {
  nextPaymentId: FIRST_PAYMENT_ID,
  nextRefundNumber: FIRST_REFUND_NUMBER,
  nextSubscriptionId: FIRST_SUBSCRIPTION_ID,
};

export class GatewayState {
  readonly #options: StateOptions;
  readonly #data: SeedData;
  // Lookups by key, in the order payments were made: a long run (the bench makes tens of
  // thousands) must not turn every search into a scan.
  readonly #byPaymentId = new Map<number, StoredPayment>();
  readonly #byOrderId = new Map<string, StoredPayment[]>();
  readonly #bySubscriptionId = new Map<number, StoredPayment[]>();
  #outbox: Notification[] = [];

  constructor(options: StateOptions) {
    this.#options = options;
    this.#data = seedData();
    for (const payment of this.#data.payments) this.#index(payment);
  }

  searchPayments(orderId: string): Envelope {
    const records = (this.#byOrderId.get(orderId) ?? []).map((p) => p.record);
    if (records.length === 0) return failed('No payments found');
    return ok(`Payments with order_id:${orderId}`, records);
  }

  /** The notifications of the transitions since the last call, to be delivered by the caller. */
  takeNotifications(): Notification[] {
    const taken = this.#outbox;
    this.#outbox = [];
    return taken;
  }

  charge(request: ChargeRequest): Envelope {
    // A refusal PayHere words its own way (top-level -2, no data): nothing is processed.
    if (request.customer_token === SEED.customerTokens.authenticationFails)
      return failed('Customer authentication failed', -2);
    const payer = this.#data.payers.get(request.customer_token);
    if (!payer) return failed('Invalid token');
    if (!ACCEPTED_CURRENCIES.has(request.currency)) return failed('Invalid currency');
    if (!isValidAmount(request.amount)) return failed('Invalid amount');

    const paymentId = this.#newPaymentId();
    const itemLines = request.itemList?.map(
      (item): ItemLine => ({
        name: item.name,
        quantity: item.quantity,
        currency: request.currency,
        unit_price: item.unit_amount,
        total_price: centsOf(item.quantity * item.unit_amount) / 100,
      }),
    );
    const authorize = request.type === 'AUTHORIZE' && payer.outcome === 'success';
    const status = authorize ? CHARGE_AUTHORIZED : CHARGE_STATUS[payer.outcome];
    let authorizationToken: string | null = null;

    if (authorize) {
      authorizationToken = this.#addAuthorization({
        paymentId,
        orderId: request.order_id,
        items: request.items,
        currency: request.currency,
        amount: request.amount,
        custom1: request.custom_1 ?? null,
        custom2: request.custom_2 ?? null,
        itemLines: itemLines ?? null,
        payer,
      });
    } else if (payer.outcome === 'success') {
      this.#addPayment({
        paymentId,
        orderId: request.order_id,
        description: request.items,
        currency: request.currency,
        amount: request.amount,
        payer,
        items: itemLines ?? null,
      });
    }

    if (request.notify_url) {
      this.#outbox.push({
        url: request.notify_url,
        orderId: request.order_id,
        paymentId,
        amount: request.amount,
        currency: request.currency,
        statusCode: status.code,
        statusMessage: status.message,
        custom1: request.custom_1 ?? null,
        custom2: request.custom_2 ?? null,
        payer,
        ...(authorizationToken === null ? {} : { authorizationToken, capturedAmount: 0 }),
      });
    }
    return ok('Automatic payment charged successfully', {
      order_id: request.order_id,
      items: request.items,
      currency: request.currency,
      amount: request.amount,
      custom_1: request.custom_1 ?? null,
      custom_2: request.custom_2 ?? null,
      payment_id: paymentId,
      status_code: status.code,
      status_message: status.message,
      md5sig: this.#sign(request.order_id, request.amount, request.currency, status.code),
      authorization_token: authorizationToken,
    });
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
    this.#addPayment({
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
      md5sig: this.#sign(authorization.orderId, request.amount, authorization.currency, 2),
      custom_1: authorization.custom1,
      custom_2: authorization.custom2,
    });
  }

  refund(request: RefundRequest): Envelope {
    if (request.authorization_token !== undefined) {
      return this.#releaseAuthorization(request.authorization_token, request.amount);
    }
    const payment = request.payment_id === undefined ? undefined : this.#byPaymentId.get(request.payment_id);
    if (!payment) return failed('Error processing refund');
    const remainingCents = centsOf(payment.record.amount) - payment.refundedCents;
    const requestedCents = request.amount === undefined ? remainingCents : centsOf(request.amount);
    const validAmount = request.amount === undefined || isValidAmount(request.amount);
    if (remainingCents <= 0 || !validAmount || requestedCents > remainingCents) {
      return failed('Error processing refund');
    }

    payment.refundedCents += requestedCents;
    // PayHere refunds asynchronously; the sandbox stays at the first step.
    payment.record.status = 'REFUND REQUESTED';
    return ok('Successfully processed the refund', ids.nextRefundNumber++);
  }

  listSubscriptions(): Envelope {
    const records = [...this.#data.subscriptions.values()].map((subscription) => subscription.record);
    return ok(`Found ${records.length} subscriptions`, records);
  }

  getSubscription(id: number): Envelope {
    const subscription = this.#data.subscriptions.get(id);
    return subscription ? ok('Found subscription', subscription.record) : failed('Subscription not found');
  }

  subscriptionPayments(id: number): Envelope {
    if (!this.#data.subscriptions.has(id)) return failed('Subscription not found');
    const records = (this.#bySubscriptionId.get(id) ?? []).map((p) => p.record);
    return ok(`Found ${records.length} payments`, records);
  }

  retry(id: number): Envelope {
    const subscription = this.#data.subscriptions.get(id);
    if (!subscription) return failed('Subscription not found');
    if (subscription.record.status !== 'FAILED') return failed('Subscription is not eligible for retrying');

    // The seeded card always accepts the retry: the point is to exercise the FAILED → ACTIVE path.
    subscription.record.status = 'ACTIVE';
    this.#payInstallment(subscription, this.#newPaymentId());
    return ok('Recurring payment charged successfully');
  }

  cancel(id: number): Envelope {
    const subscription = this.#data.subscriptions.get(id);
    if (!subscription) return failed('Subscription not found');
    const { record } = subscription;
    if (record.status === 'CANCELLED') return failed('Subscription is already cancelled.');
    if (record.status === 'COMPLETED') return failed('Subscription is already completed.');
    record.status = 'CANCELLED';
    return ok('Successfully cancelled the subscription');
  }

  /** The customer ends a checkout in PayHere's SDK with the outcome the test chose. */
  completeCheckout(checkout: CheckoutRequest): CheckoutResult {
    const payer = structuredClone(CHECKOUT_PAYER);
    const succeeded = checkout.outcome === 'success';
    const status = checkoutStatus(checkout.kind, checkout.outcome, payer);
    const paymentId = this.#newPaymentId();
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
      const subscription = succeeded ? this.#addSubscription(checkout, payer, paymentId) : undefined;
      result.subscription_id = subscription?.record.subscription_id ?? null;
      notification.subscription = subscription
        ? this.#subscriptionNotice(subscription, 'AUTHORIZATION_SUCCESS')
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
      this.#addPayment({
        paymentId,
        orderId: checkout.order_id,
        description: checkout.items,
        currency: checkout.currency,
        amount,
        payer,
        items: null,
      });
    } else if (succeeded && checkout.kind === 'preapproval') {
      result.customer_token = this.#addPayer(payer);
      notification.customerToken = result.customer_token;
    } else if (succeeded && checkout.kind === 'authorize') {
      result.authorization_token = this.#addAuthorization({
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

  /**
   * PayHere's scheduler charges the next installment of an ACTIVE (or FAILED: PayHere retries)
   * subscription: paid, it is one more payment and perhaps the last; declined, the subscription FAILED.
   */
  chargeInstallment(
    id: number,
    outcome: 'success' | 'decline',
    notifyUrl: string | undefined,
  ): Result<SubscriptionEvent> {
    const found = this.#notifiable(id, notifyUrl);
    if (!found.ok) return found;
    const { subscription, url } = found.value;
    const { record } = subscription;
    if (record.status === 'COMPLETED' || record.status === 'CANCELLED') {
      return refused(`Subscription is already ${record.status.toLowerCase()}.`);
    }

    const paymentId = this.#newPaymentId();
    if (outcome === 'success') {
      record.status = 'ACTIVE';
      this.#payInstallment(subscription, paymentId);
    } else {
      record.status = 'FAILED';
    }
    const messageType =
      outcome === 'success' ? 'RECURRING_INSTALLMENT_SUCCESS' : 'RECURRING_INSTALLMENT_FAILED';
    const status = installmentStatus(outcome, subscription.payer);
    this.#notifySubscription(subscription, url, paymentId, status, messageType);
    return { ok: true, value: this.#subscriptionEvent(subscription, messageType, paymentId) };
  }

  /** PayHere reports a subscription COMPLETED (`complete`) or stopped, i.e. CANCELLED (`stop`). */
  endSubscription(
    id: number,
    end: SubscriptionEnd,
    notifyUrl: string | undefined,
  ): Result<SubscriptionEvent> {
    const found = this.#notifiable(id, notifyUrl);
    if (!found.ok) return found;
    const { subscription, url } = found.value;
    const { record } = subscription;
    const how = SUBSCRIPTION_ENDS[end];
    if (record.status === how.refusedWhen) {
      return refused(`Subscription is already ${record.status.toLowerCase()}.`);
    }

    record.status = how.status;
    const lastPayment = (this.#bySubscriptionId.get(id) ?? []).at(-1)?.record.payment_id ?? null;
    this.#notifySubscription(subscription, url, lastPayment, how.notice, how.messageType);
    return { ok: true, value: this.#subscriptionEvent(subscription, how.messageType, null) };
  }

  #notifiable(
    id: number,
    notifyUrl: string | undefined,
  ): Result<{ subscription: StoredSubscription; url: string }> {
    const subscription = this.#data.subscriptions.get(id);
    if (!subscription) return refused('Subscription not found', 404);
    const url = notifyUrl ?? subscription.notifyUrl;
    if (url === null) return refused(`Subscription ${id} has no notify_url: name one in the request`);
    return { ok: true, value: { subscription, url } };
  }

  #notifySubscription(
    subscription: StoredSubscription,
    url: string,
    paymentId: number | null,
    status: Status,
    messageType: MessageType,
  ): void {
    const { record } = subscription;
    this.#outbox.push({
      url,
      orderId: record.order_id,
      paymentId,
      amount: record.amount,
      currency: record.currency,
      statusCode: status.code,
      statusMessage: status.message,
      custom1: subscription.custom1,
      custom2: subscription.custom2,
      payer: subscription.payer,
      subscription: this.#subscriptionNotice(subscription, messageType),
    });
  }

  #subscriptionNotice(subscription: StoredSubscription, messageType: MessageType): SubscriptionNotice {
    return subscriptionNotice(
      subscription,
      messageType,
      this.#installmentsPaid(subscription.record.subscription_id),
    );
  }

  #subscriptionEvent(
    subscription: StoredSubscription,
    messageType: MessageType,
    paymentId: number | null,
  ): SubscriptionEvent {
    const id = subscription.record.subscription_id;
    return {
      subscription_id: id,
      message_type: messageType,
      payment_id: paymentId,
      status: subscription.record.status,
      installments_paid: this.#installmentsPaid(id),
    };
  }

  #installmentsPaid(id: number): number {
    return this.#bySubscriptionId.get(id)?.length ?? 0;
  }

  /** A saved card: a new customer token, 32 upper-case hex digits like PayHere's. */
  #addPayer(payer: Payer): string {
    const token = randomBytes(16).toString('hex').toUpperCase();
    this.#data.payers.set(token, { ...structuredClone(payer), outcome: 'success' });
    return token;
  }

  #addAuthorization(fields: Omit<Authorization, 'token' | 'state'>): string {
    const token = randomUUID();
    this.#data.authorizations.set(token, { token, ...fields, state: 'AUTHORIZED' });
    return token;
  }

  /** A new ACTIVE subscription, its first installment paid with `paymentId`. */
  #addSubscription(checkout: CheckoutRequest, payer: Payer, paymentId: number): StoredSubscription {
    const id = ids.nextSubscriptionId++;
    const amount = checkout.amount ?? 0;
    const recurrence = checkout.recurrence ?? '';
    const duration = checkout.duration ?? '';
    const subscription: StoredSubscription = structuredClone({
      record: {
        subscription_id: id,
        order_id: checkout.order_id,
        date: this.#date(),
        description: checkout.items,
        recurring: recurringSentence(recurrence, duration),
        status: 'ACTIVE',
        amount,
        currency: checkout.currency,
        customer: payer.customer,
        amount_detail: amountDetail(checkout.currency, amount),
        payment_method: payer.paymentMethod,
        items: [
          {
            name: checkout.items,
            quantity: 1,
            currency: checkout.currency,
            unit_price: amount,
            total_price: amount,
          },
        ],
      },
      recurrence,
      duration,
      payer,
      notifyUrl: checkout.notify_url,
      custom1: checkout.custom_1 ?? null,
      custom2: checkout.custom_2 ?? null,
    });
    this.#data.subscriptions.set(id, subscription);
    this.#payInstallment(subscription, paymentId);
    return subscription;
  }

  /** One more payment of the subscription; after the last its terms allow, it is COMPLETED. */
  #payInstallment(subscription: StoredSubscription, paymentId: number): void {
    const { record } = subscription;
    this.#addPayment({
      paymentId,
      orderId: record.order_id,
      description: record.description,
      currency: record.currency,
      amount: record.amount,
      payer: subscription.payer,
      items: record.items,
      subscriptionId: record.subscription_id,
    });
    const total = installmentCount(record.date, subscription.recurrence, subscription.duration);
    if (total !== null && this.#installmentsPaid(record.subscription_id) >= total)
      record.status = 'COMPLETED';
  }

  #releaseAuthorization(token: string, amount: number | undefined): Envelope {
    const authorization = this.#data.authorizations.get(token);
    // A hold is released whole: a partial amount, or a hold already captured or released, is refused.
    if (!authorization || amount !== undefined || authorization.state !== 'AUTHORIZED') {
      return failed('Error processing refund');
    }
    authorization.state = 'REFUNDED';
    return ok('Successfully processed the authorization refund');
  }

  #addPayment(fields: {
    paymentId: number;
    orderId: string;
    description: string;
    currency: string;
    amount: number;
    payer: Payer;
    items: ItemLine[] | null;
    subscriptionId?: number;
  }): StoredPayment {
    const payment: StoredPayment = structuredClone({
      record: {
        payment_id: fields.paymentId,
        order_id: fields.orderId,
        date: this.#date(),
        description: fields.description,
        status: 'RECEIVED',
        currency: fields.currency,
        amount: fields.amount,
        customer: fields.payer.customer,
        amount_detail: amountDetail(fields.currency, fields.amount),
        payment_method: fields.payer.paymentMethod,
        items: fields.items,
      },
      refundedCents: 0,
      subscriptionId: fields.subscriptionId ?? null,
    });
    this.#data.payments.push(payment);
    this.#index(payment);
    return payment;
  }

  #index(payment: StoredPayment): void {
    this.#byPaymentId.set(payment.record.payment_id, payment);
    append(this.#byOrderId, payment.record.order_id, payment);
    if (payment.subscriptionId !== null) append(this.#bySubscriptionId, payment.subscriptionId, payment);
  }

  #newPaymentId(): number {
    return ids.nextPaymentId++;
  }

  /** PayHere's dates are Sri Lanka local time without a zone. */
  #date(): string {
    return new Date(this.#options.now() + SRI_LANKA_OFFSET_MS).toISOString().slice(0, 19).replace('T', ' ');
  }

  // The md5sig of charge and capture answers is undocumented; the notification formula is a
  // plausible stand-in and lets a test recompute it.
  #sign(orderId: string, amount: number, currency: string, statusCode: number): string {
    return md5sig({
      merchantId: this.#options.merchantId,
      orderId,
      amount: formatAmount(amount),
      currency,
      statusCode,
      merchantSecret: this.#options.merchantSecret,
    });
  }
}
