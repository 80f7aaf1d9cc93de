import type { AttributeValue } from '../dynamodb/index.ts';
import {
  type Card,
  type CustomerDetails,
  type LineItem,
  ORDER_KINDS,
  ORDER_STATES,
  type Order,
  type OrderKind,
  type OrderState,
  type PaymentsCopy,
  SUBSCRIPTION_STATUSES,
  type SubscriptionStatus,
} from './model.ts';
import { number, optionalNumber, optionalText, text } from './table.ts';

/** An order's item, `order#<order_id>`: its key, its attributes, and the order read back from it. */
export const orderKey = (orderId: string) => `order#${orderId}`;

/** The value of `listed` on every order: the one partition of the order list of all orders (order-lists.ts). */
export const LISTED = 'order';

/**
 * An order's position in every order list: its creation time (epoch ms, 15 digits) then its id, so
 * that orders created in the same millisecond still have one order and a position names one order.
 */
export function listedAt(createdAt: number, orderId: string): string {
  return `${timeKey(createdAt)}#${orderId}`;
}

/** A time as the order lists sort it; shorter than any position, so it sorts before that millisecond's orders. */
export const timeKey = (at: number) => String(Math.max(0, Math.trunc(at))).padStart(15, '0');

/** Every attribute name an expression may use, as `#name` placeholders (several are reserved words). */
export const ATTRIBUTES = [
  'owner',
  'kind',
  'state',
  'items',
  'currency',
  'amount',
  'custom1',
  'custom2',
  'lineItems',
  'customerDetails',
  'metadata',
  'startupFee',
  'nextInstallment',
  'inflight',
  'chargeKey',
  'chargeSentAt',
  'chargeUntil',
  'chargeQueue',
  'chargeDueAt',
  'nothingAt',
  'duplicatePayments',
  'createdAt',
  'updatedAt',
  'paymentId',
  'authorizationToken',
  'orderId',
  'customerToken',
  'subscriptionId',
  'card',
  'installmentsPaid',
  'subscriptionStatus',
  'failedInstallment',
  'reportedPaymentId',
  'reportedSubscriptionId',
  'reportedInstallmentsPaid',
  'reportedNextInstallment',
  'reportedAt',
  'holdVerified',
  'settleQueue',
  'settleAt',
  'standingSince',
  'standingAsks',
  'checkedAt',
  'paymentsCopy',
  'paymentsCopyState',
  'paymentsFetchedAt',
  'paymentsDroppedAt',
  'listed',
  'listedAt',
] as const;

export function namesIn(expression: string): Record<string, string> {
  return Object.fromEntries(
    ATTRIBUTES.filter((name) => new RegExp(`#${name}\\b`).test(expression)).map((name) => [`#${name}`, name]),
  );
}

export function valuesIn(
  expression: string,
  values: Record<string, AttributeValue>,
): Record<string, AttributeValue> {
  return Object.fromEntries(
    Object.entries(values).filter(([placeholder]) => new RegExp(`${placeholder}\\b`).test(expression)),
  );
}

/** A new order as an item: what it does not have yet is absent (conditions test for absence). */
export function toOrderItem(order: Order): Record<string, AttributeValue> {
  const optional = (name: string, value: string | null) => (value === null ? {} : { [name]: { S: value } });
  return {
    pk: { S: orderKey(order.orderId) },
    orderId: { S: order.orderId },
    owner: { S: order.owner },
    kind: { S: order.kind },
    state: { S: order.state },
    items: { S: order.items },
    currency: { S: order.currency },
    ...(order.amountCents === null ? {} : { amount: number(order.amountCents) }),
    ...optional('custom1', order.custom1),
    ...optional('custom2', order.custom2),
    ...optional('lineItems', jsonOrNull(order.lineItems)),
    ...optional('customerDetails', jsonOrNull(order.customerDetails)),
    ...optional('metadata', jsonOrNull(order.metadata)),
    ...(order.startupFeeCents === null ? {} : { startupFee: number(order.startupFeeCents) }),
    ...optional('nextInstallment', order.nextInstallment),
    ...optional('recurrence', order.recurrence),
    ...optional('duration', order.duration),
    ...optional('customerToken', order.customerToken),
    ...optional('authorizationToken', order.authorizationToken),
    ...optional('subscriptionId', order.subscriptionId),
    ...optional('card', order.card === null ? null : JSON.stringify(order.card)),
    createdAt: number(order.createdAt),
    updatedAt: number(order.updatedAt),
    // The order lists' keys (order-lists.ts).
    listed: { S: LISTED },
    listedAt: { S: listedAt(order.createdAt, order.orderId) },
  };
}

/** Read an order back; an item this module did not write is an error, not something to guess at. */
export function fromOrderItem(item: Record<string, AttributeValue>): Order {
  const kind = text(item, 'kind');
  const state = text(item, 'state');
  if (!(ORDER_KINDS as readonly string[]).includes(kind))
    throw new Error(`ledger order of unknown kind ${kind}`);
  if (!(ORDER_STATES as readonly string[]).includes(state))
    throw new Error(`ledger order in unknown state ${state}`);
  const card = optionalText(item, 'card');
  const chargeKey = optionalText(item, 'chargeKey');
  return {
    orderId: text(item, 'orderId'),
    owner: text(item, 'owner'),
    kind: kind as OrderKind,
    state: state as OrderState,
    items: text(item, 'items'),
    currency: text(item, 'currency'),
    amountCents: optionalNumber(item, 'amount'),
    custom1: optionalText(item, 'custom1'),
    custom2: optionalText(item, 'custom2'),
    lineItems: jsonOf<LineItem[]>(item, 'lineItems'),
    customerDetails: jsonOf<CustomerDetails>(item, 'customerDetails'),
    metadata: jsonOf<Record<string, string>>(item, 'metadata'),
    recurrence: optionalText(item, 'recurrence'),
    duration: optionalText(item, 'duration'),
    startupFeeCents: optionalNumber(item, 'startupFee'),
    nextInstallment: optionalText(item, 'nextInstallment'),
    paymentId: optionalText(item, 'paymentId'),
    customerToken: optionalText(item, 'customerToken'),
    authorizationToken: optionalText(item, 'authorizationToken'),
    subscriptionId: optionalText(item, 'subscriptionId'),
    card: card === null ? null : (JSON.parse(card) as Card),
    createdAt: optionalNumber(item, 'createdAt') ?? 0,
    updatedAt: optionalNumber(item, 'updatedAt') ?? 0,
    charge:
      chargeKey === null
        ? null
        : {
            key: chargeKey,
            inflight: optionalText(item, 'inflight') !== null,
            sentAt: optionalNumber(item, 'chargeSentAt') ?? 0,
            until: optionalNumber(item, 'chargeUntil') ?? 0,
            nothingAt: optionalNumber(item, 'nothingAt'),
          },
    installmentsPaid: optionalNumber(item, 'installmentsPaid'),
    subscriptionStatus: subscriptionStatusOf(item),
    failedInstallment: optionalNumber(item, 'failedInstallment'),
    reported: {
      paymentId: optionalText(item, 'reportedPaymentId'),
      subscriptionId: optionalText(item, 'reportedSubscriptionId'),
      installmentsPaid: optionalNumber(item, 'reportedInstallmentsPaid'),
      nextInstallment: optionalText(item, 'reportedNextInstallment'),
    },
    reportedAt: optionalNumber(item, 'reportedAt'),
    // One settle queue at a time: a report's deadline, or a subscription's standing check.
    settleAt: item.settleQueue?.S === 'standing' ? null : optionalNumber(item, 'settleAt'),
    standingCheckAt: item.settleQueue?.S === 'standing' ? optionalNumber(item, 'settleAt') : null,
    standingSince: optionalNumber(item, 'standingSince'),
    standingAsks: optionalNumber(item, 'standingAsks') ?? 0,
    holdVerified: item.holdVerified?.BOOL ?? null,
    paymentsCopy: paymentsCopyOf(item),
    duplicatePayments: [...(item.duplicatePayments?.SS ?? [])].sort(),
    failedAttempts: Object.fromEntries(
      Object.entries(item).flatMap(([name, value]) => {
        const window = /^declined(\d+)$/.exec(name)?.[1];
        return window !== undefined && value.SS !== undefined ? [[Number(window), value.SS.length]] : [];
      }),
    ),
  };
}

/** The subscription's status the ledger recorded; one it does not know is an error, as a state would be. */
function subscriptionStatusOf(item: Record<string, AttributeValue>): SubscriptionStatus | null {
  const status = optionalText(item, 'subscriptionStatus');
  if (status === null) return null;
  if (!(SUBSCRIPTION_STATUSES as readonly string[]).includes(status))
    throw new Error(`ledger order with an unknown subscription status ${status}`);
  return status as SubscriptionStatus;
}

/** A back-office field as the item keeps it: JSON text, absent when there is none. */
export function jsonOrNull(value: object | null): string | null {
  return value === null ? null : JSON.stringify(value);
}

function jsonOf<T>(item: Record<string, AttributeValue>, name: string): T | null {
  const value = optionalText(item, name);
  return value === null ? null : (JSON.parse(value) as T);
}

export function paymentsCopyOf(item: Record<string, AttributeValue>): PaymentsCopy | null {
  const answer = optionalText(item, 'paymentsCopy');
  const state = optionalText(item, 'paymentsCopyState');
  const fetchedAt = optionalNumber(item, 'paymentsFetchedAt');
  if (answer === null || fetchedAt === null || !(ORDER_STATES as readonly (string | null)[]).includes(state))
    return null;
  return { answer, state: state as OrderState, fetchedAt };
}
