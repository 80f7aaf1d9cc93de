import { type CheckoutRequest, type Result, refused } from './control-requests.ts';
import { addAmounts, amountDetail } from './money.ts';
import {
  type MessageType,
  type Notification,
  type SubscriptionNotice,
  subscriptionNotice,
} from './notifications.ts';
import { failed, ids, ok, type PaymentBook } from './payment-book.ts';
import type { Envelope, Payer, StoredSubscription } from './records.ts';
import { installmentCount, recurringSentence } from './recurrence.ts';
import { installmentStatus, type Status, SUBSCRIPTION_COMPLETED, SUBSCRIPTION_STOPPED } from './statuses.ts';

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

/** What an installment or the end of a subscription did. */
export interface SubscriptionEvent {
  subscription_id: number;
  message_type: MessageType;
  /** The installment's payment id (also a declined one's); null when a subscription ends. */
  payment_id: number | null;
  status: string;
  installments_paid: number;
}

/**
 * The gateway's subscriptions: the Merchant API's reads, retry and cancel, a recurring checkout's
 * new subscription, and what PayHere's scheduler does (installments, the end), each installment a
 * payment of the PaymentBook; what it would report waits in the outbox (`notify`).
 */
export class SubscriptionBook {
  readonly #subscriptions: Map<number, StoredSubscription>;
  readonly #payments: PaymentBook;
  readonly #notify: (notification: Notification) => void;

  constructor(
    subscriptions: Map<number, StoredSubscription>,
    payments: PaymentBook,
    notify: (notification: Notification) => void,
  ) {
    this.#subscriptions = subscriptions;
    this.#payments = payments;
    this.#notify = notify;
  }

  list(): Envelope {
    const records = [...this.#subscriptions.values()].map((subscription) => subscription.record);
    return ok(`Found ${records.length} subscriptions`, records);
  }

  get(id: number): Envelope {
    const subscription = this.#subscriptions.get(id);
    return subscription ? ok('Found subscription', subscription.record) : failed('Subscription not found');
  }

  payments(id: number): Envelope {
    if (!this.#subscriptions.has(id)) return failed('Subscription not found');
    const records = this.#payments.ofSubscription(id).map((p) => p.record);
    return ok(`Found ${records.length} payments`, records);
  }

  retry(id: number): Envelope {
    const subscription = this.#subscriptions.get(id);
    if (!subscription) return failed('Subscription not found');
    if (subscription.record.status !== 'FAILED') return failed('Subscription is not eligible for retrying');

    // The seeded card always accepts the retry: the point is to exercise the FAILED → ACTIVE path.
    subscription.record.status = 'ACTIVE';
    this.#payInstallment(subscription, this.#payments.newPaymentId());
    return ok('Recurring payment charged successfully');
  }

  cancel(id: number): Envelope {
    const subscription = this.#subscriptions.get(id);
    if (!subscription) return failed('Subscription not found');
    const { record } = subscription;
    if (record.status === 'CANCELLED') return failed('Subscription is already cancelled.');
    if (record.status === 'COMPLETED') return failed('Subscription is already completed.');
    record.status = 'CANCELLED';
    return ok('Successfully cancelled the subscription');
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

    const paymentId = this.#payments.newPaymentId();
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
    const lastPayment = this.#payments.ofSubscription(id).at(-1)?.record.payment_id ?? null;
    this.#notifySubscription(subscription, url, lastPayment, how.notice, how.messageType);
    return { ok: true, value: this.#subscriptionEvent(subscription, how.messageType, null) };
  }

  #notifiable(
    id: number,
    notifyUrl: string | undefined,
  ): Result<{ subscription: StoredSubscription; url: string }> {
    const subscription = this.#subscriptions.get(id);
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
    this.#notify({
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
      subscription: this.notice(subscription, messageType),
    });
  }

  notice(subscription: StoredSubscription, messageType: MessageType): SubscriptionNotice {
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
    return this.#payments.ofSubscription(id).length;
  }

  /** A new ACTIVE subscription, its first installment paid with `paymentId`. */
  add(checkout: CheckoutRequest, payer: Payer, paymentId: number): StoredSubscription {
    const id = ids.nextSubscriptionId++;
    const amount = checkout.amount ?? 0;
    const recurrence = checkout.recurrence ?? '';
    const duration = checkout.duration ?? '';
    const subscription: StoredSubscription = structuredClone({
      record: {
        subscription_id: id,
        order_id: checkout.order_id,
        date: this.#payments.date(),
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
    this.#subscriptions.set(id, subscription);
    this.#payInstallment(subscription, paymentId, addAmounts(amount, checkout.startup_fee ?? 0));
    return subscription;
  }

  /**
   * One more payment of the subscription (of `amount`: the first carries the startup fee); after
   * the last its terms allow, it is COMPLETED.
   */
  #payInstallment(subscription: StoredSubscription, paymentId: number, amount?: number): void {
    const { record } = subscription;
    this.#payments.addPayment({
      paymentId,
      orderId: record.order_id,
      description: record.description,
      currency: record.currency,
      amount: amount ?? record.amount,
      payer: subscription.payer,
      items: record.items,
      subscriptionId: record.subscription_id,
    });
    const total = installmentCount(record.date, subscription.recurrence, subscription.duration);
    if (total !== null && this.#installmentsPaid(record.subscription_id) >= total)
      record.status = 'COMPLETED';
  }
}
