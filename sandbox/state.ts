// The gateway's bookkeeping: payments, authorizations and subscriptions, and the transitions the
// Merchant API performs on them. Inputs are already checked (validate.ts); answers are PayHere's
// envelopes, so the HTTP layer only serialises them.
import { randomUUID } from 'node:crypto';
import { amountDetail, centsOf, formatAmount, isValidAmount } from './money.ts';
import type { Envelope, ItemLine, Payer, StoredPayment, StoredSubscription } from './records.ts';
import { type SeedData, seedData } from './seed.ts';
import { md5sig } from './signature.ts';
import type { CaptureRequest, ChargeRequest, RefundRequest } from './validate.ts';

const ACCEPTED_CURRENCIES = new Set(['LKR', 'USD', 'EUR', 'GBP', 'AUD']);
// Generated ids start far from the seeded ones so they can never collide.
const FIRST_PAYMENT_ID = 320040000001;
const FIRST_REFUND_NUMBER = 560034010257;
const SRI_LANKA_OFFSET_MS = 5.5 * 60 * 60 * 1000;

const CHARGE_STATUS: Record<Payer['outcome'], { code: number; message: string }> = {
  success: { code: 2, message: 'Successfully completed the test tokenized payment.' },
  declined: { code: -2, message: 'Payment declined by the issuer.' },
  pending: { code: 0, message: 'Payment is pending.' },
};
const AUTHORIZED = { code: 3, message: 'Successfully authorized the test tokenized payment.' };

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
const ids = { nextPaymentId: FIRST_PAYMENT_ID, nextRefundNumber: FIRST_REFUND_NUMBER };

export class GatewayState {
  readonly #options: StateOptions;
  readonly #data: SeedData;
  // Lookups by key, in the order payments were made: a long run (the bench makes tens of
  // thousands) must not turn every search into a scan.
  readonly #byPaymentId = new Map<number, StoredPayment>();
  readonly #byOrderId = new Map<string, StoredPayment[]>();
  readonly #bySubscriptionId = new Map<number, StoredPayment[]>();

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

  charge(request: ChargeRequest): Envelope {
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
    const status = authorize ? AUTHORIZED : CHARGE_STATUS[payer.outcome];
    let authorizationToken: string | null = null;

    if (authorize) {
      authorizationToken = randomUUID();
      this.#data.authorizations.set(authorizationToken, {
        token: authorizationToken,
        paymentId,
        orderId: request.order_id,
        items: request.items,
        currency: request.currency,
        amount: request.amount,
        custom1: request.custom_1 ?? null,
        custom2: request.custom_2 ?? null,
        itemLines: itemLines ?? null,
        payer,
        state: 'AUTHORIZED',
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
    this.#addSubscriptionPayment(subscription);
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

  #releaseAuthorization(token: string, amount: number | undefined): Envelope {
    const authorization = this.#data.authorizations.get(token);
    // A hold is released whole: a partial amount, or a hold already captured or released, is refused.
    if (!authorization || amount !== undefined || authorization.state !== 'AUTHORIZED') {
      return failed('Error processing refund');
    }
    authorization.state = 'REFUNDED';
    return ok('Successfully processed the authorization refund');
  }

  #addSubscriptionPayment(subscription: StoredSubscription): void {
    const { record } = subscription;
    this.#addPayment({
      paymentId: this.#newPaymentId(),
      orderId: record.order_id,
      description: record.description,
      currency: record.currency,
      amount: record.amount,
      payer: subscription.payer,
      items: record.items,
      subscriptionId: record.subscription_id,
    });
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
