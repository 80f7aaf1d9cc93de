// What PayHere posts to a notify_url (docs/payhere.md "Notifications"): the form fields, every value a
// string, signed over merchant_id, order_id, payhere_amount, payhere_currency and status_code.
// A test may ask for a form PayHere would never send: signed with another secret, or altered after
// signing.
import { formatAmount } from './money.ts';
import type { Payer, StoredSubscription } from './records.ts';
import { dueDate } from './recurrence.ts';
import { md5sig } from './signature.ts';

export type MessageType =
  | 'AUTHORIZATION_SUCCESS'
  | 'AUTHORIZATION_FAILED'
  | 'RECURRING_INSTALLMENT_SUCCESS'
  | 'RECURRING_INSTALLMENT_FAILED'
  | 'RECURRING_COMPLETE'
  | 'RECURRING_STOPPED';

/** What a notification says about a subscription. */
export interface SubscriptionNotice {
  /** Null when the checkout created none. */
  id: number | null;
  messageType: MessageType;
  recurrence: string;
  duration: string;
  /** The subscription's record status; null when the checkout created none. */
  status: string | null;
  /** `YYYY-MM-DD`, or null when nothing more falls due. */
  nextDate: string | null;
  installmentsPaid: number;
}

/** One notification before it is signed: a state transition PayHere reports to `url`. */
export interface Notification {
  url: string;
  orderId: string;
  paymentId: number | null;
  amount: number;
  currency: string;
  statusCode: number;
  statusMessage: string;
  custom1: string | null;
  custom2: string | null;
  /** The card; null when the customer cancelled before giving one. */
  payer: Payer | null;
  customerToken?: string;
  authorizationToken?: string;
  capturedAmount?: number;
  subscription?: SubscriptionNotice;
}

/** What a notification says about an existing subscription that has `installmentsPaid` payments. */
export function subscriptionNotice(
  subscription: StoredSubscription,
  messageType: MessageType,
  installmentsPaid: number,
): SubscriptionNotice {
  const { record } = subscription;
  const due = record.status === 'ACTIVE' || record.status === 'FAILED';
  return {
    id: record.subscription_id,
    messageType,
    recurrence: subscription.recurrence,
    duration: subscription.duration,
    status: record.status,
    nextDate: due ? dueDate(record.date, subscription.recurrence, installmentsPaid + 1) : null,
    installmentsPaid,
  };
}

export type NotificationForm = Record<string, string>;

export interface Signer {
  merchantId: string;
  merchantSecret: string;
}

/** How a form departs from what PayHere sends; chosen per control call. */
export interface FormFaults {
  /** Sign with this secret instead of the merchant's, as PayHere does with an app's own secret. */
  signWith?: string;
  /** Sign with a secret the merchant does not have. */
  badSignature?: boolean;
  /** Replace (or add) these fields after signing; the signature stays as it was. */
  tamper?: Record<string, string>;
}

/** A secret nobody holds, for `badSignature`. */
const WRONG_SECRET = 'NOT_THE_MERCHANT_SECRET';

// item_rec_status is not documented publicly; these codes follow status_code's signs.
const REC_STATUS: Record<string, string> = { ACTIVE: '0', COMPLETED: '1', CANCELLED: '-1', FAILED: '-2' };
const NO_SUBSCRIPTION_REC_STATUS = '-2';

function subscriptionFields(notice: SubscriptionNotice): NotificationForm {
  return {
    subscription_id: notice.id === null ? '' : String(notice.id),
    message_type: notice.messageType,
    item_recurrence: notice.recurrence,
    item_duration: notice.duration,
    item_rec_status:
      notice.status === null ? NO_SUBSCRIPTION_REC_STATUS : (REC_STATUS[notice.status] ?? notice.status),
    item_rec_date_next: notice.nextDate ?? '',
    item_rec_install_paid: String(notice.installmentsPaid),
  };
}

/** The form fields in the order PayHere's samples list them. */
export function notificationForm(
  notification: Notification,
  signer: Signer,
  faults: FormFaults = {},
): NotificationForm {
  const amount = formatAmount(notification.amount);
  const statusCode = String(notification.statusCode);
  const secret = faults.badSignature ? WRONG_SECRET : (faults.signWith ?? signer.merchantSecret);
  const card = notification.payer;
  const form: NotificationForm = {
    merchant_id: signer.merchantId,
    order_id: notification.orderId,
    payment_id: notification.paymentId === null ? '' : String(notification.paymentId),
    ...(notification.capturedAmount === undefined
      ? {}
      : { captured_amount: formatAmount(notification.capturedAmount) }),
    payhere_amount: amount,
    payhere_currency: notification.currency,
    status_code: statusCode,
    md5sig: md5sig({
      merchantId: signer.merchantId,
      orderId: notification.orderId,
      amount,
      currency: notification.currency,
      statusCode,
      merchantSecret: secret,
    }),
    custom_1: notification.custom1 ?? '',
    custom_2: notification.custom2 ?? '',
    status_message: notification.statusMessage,
    method: card?.paymentMethod.method ?? '',
    card_holder_name: card?.paymentMethod.card_customer_name ?? '',
    card_no: card?.paymentMethod.card_no ?? '',
    card_expiry: card?.cardExpiry ?? '',
    recurring: notification.subscription ? '1' : '0',
    ...(notification.customerToken === undefined ? {} : { customer_token: notification.customerToken }),
    ...(notification.authorizationToken === undefined
      ? {}
      : { authorization_token: notification.authorizationToken }),
    ...(notification.subscription ? subscriptionFields(notification.subscription) : {}),
  };
  return { ...form, ...faults.tamper };
}
