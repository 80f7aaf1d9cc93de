import type { EventType } from '../events/types.ts';
import type { LedgerEvent, Order, OrderKind, OrderState, SubscriptionStatus } from '../ledger/model.ts';

/**
 * What each change of money state the ledger records becomes for the merchant's backend: one event,
 * written by the same conditional write as the change (lib/ledger/outbox.ts), then listed by GET
 * /gateway/api/events and delivered to the merchant's webhooks. The one place that says which
 * change is which event; docs/contract.md "Events" lists them.
 *
 * An order's events carry its state after the change and the evidence that moved it: an unknown
 * settles as `order.succeeded` or `order.failed`, its `evidence` saying what settled it.
 */
/** What every order event carries: the order as the change left it. */
type OrderFacts = Pick<Order, 'orderId' | 'kind' | 'currency' | 'amountCents'> &
  Partial<Pick<Order, 'paymentId' | 'subscriptionId'>>;

const amountOf = (cents: number | null) => (cents === null ? null : cents / 100);

function orderData(order: OrderFacts, state: OrderState): Record<string, unknown> {
  return {
    order_id: order.orderId,
    kind: order.kind,
    status: state,
    amount: amountOf(order.amountCents),
    currency: order.currency,
    payment_id: order.paymentId ?? null,
    subscription_id: order.subscriptionId ?? null,
  };
}

/** The event an order's move to `to` is, by the order's kind: a saved card, a hold, a subscription, a payment. */
function moveType(kind: OrderKind, to: OrderState, evidence: string): EventType {
  if (to === 'succeeded') {
    if (kind === 'preapproval') return 'card.saved';
    if (kind === 'authorize') return 'hold.authorized';
    if (kind === 'recurring') return 'subscription.created';
    return 'order.succeeded';
  }
  if (to === 'cancelled' && evidence === 'hold_expired') return 'hold.expired';
  if (to === 'chargedback') return 'order.chargeback';
  return `order.${to}` as EventType;
}

/**
 * The event of an order's move from `from` (undefined: a charge's outcome, written without reading
 * the order) to `to` on `evidence`, with what the move records (a payment id, a subscription id).
 */
export function orderMoved(
  order: OrderFacts,
  move: { from?: OrderState; to: OrderState; evidence: string },
): LedgerEvent {
  return {
    type: moveType(order.kind, move.to, move.evidence),
    data: {
      ...orderData(order, move.to),
      ...(move.from === undefined ? {} : { previous_status: move.from }),
      evidence: move.evidence,
    },
  };
}

/** Payments of the order besides its own that could be duplicates: the merchant checks and refunds. */
export function possibleDuplicates(
  order: OrderFacts,
  state: OrderState,
  paymentIds: readonly string[],
): LedgerEvent {
  return {
    type: 'order.possible_duplicate',
    data: { ...orderData(order, state), duplicate_payment_ids: [...paymentIds] },
  };
}

/** A hold's capture (of `amount`) or release PayHere accepted: its first, on the hold's order. */
export function holdSettled(
  orderId: string,
  action: 'captured' | 'released',
  amount: number | null,
): LedgerEvent {
  return {
    type: action === 'captured' ? 'hold.captured' : 'hold.released',
    data: { order_id: orderId, kind: 'authorize', amount },
  };
}

/** Installments PayHere's records show paid, up to `installmentsPaid`. */
export function installmentPaid(
  order: OrderFacts & Pick<Order, 'state'>,
  installmentsPaid: number,
  nextInstallment: string | null | undefined,
): LedgerEvent {
  return {
    type: 'subscription.installment_paid',
    data: {
      ...orderData(order, order.state),
      installments_paid: installmentsPaid,
      next_installment: nextInstallment ?? null,
    },
  };
}

/**
 * What the order's subscription became as PayHere said (lib/orders/subscription-evidence.ts
 * decides): cancelled through the service (its cancel accepted, or refused as already cancelled),
 * stopped (PayHere's records show it CANCELLED: by PayHere, the customer, or a cancel the service
 * did not record), completed, or an installment failed (`installment`: 1 is the first payment).
 */
export function subscriptionChanged(
  orderId: string,
  subscriptionId: string,
  change: { to: SubscriptionStatus; evidence: string; installment?: number },
): LedgerEvent {
  const type: EventType =
    change.to === 'FAILED'
      ? 'subscription.installment_failed'
      : change.to === 'COMPLETED'
        ? 'subscription.completed'
        : change.evidence === 'records_show_status'
          ? 'subscription.stopped'
          : 'subscription.cancelled';
  return {
    type,
    data: {
      order_id: orderId,
      kind: 'recurring',
      subscription_id: subscriptionId,
      subscription_status: change.to,
      ...(change.installment === undefined
        ? {}
        : { installment: change.installment, installments_paid: change.installment - 1 }),
    },
  };
}

/**
 * A refund of a payment through the service, as its slot and its outcome record it: requested (the
 * slot taken before it is sent), then settled (PayHere accepted it), refused (not made: refused
 * before PayHere or by it) or undeterminable (its answer lost and PayHere's records could not show
 * it either way: it may have been made). `amount` null: a full refund.
 */
export function refundEvent(
  type: 'refund.requested' | 'refund.settled' | 'refund.refused' | 'refund.undeterminable',
  refund: { paymentId: string; amountCents: number | null; refundId?: number | null; evidence?: string },
): LedgerEvent {
  return {
    type,
    data: {
      payment_id: refund.paymentId,
      amount: amountOf(refund.amountCents),
      ...(refund.refundId === undefined ? {} : { refund_id: refund.refundId }),
      ...(refund.evidence === undefined ? {} : { evidence: refund.evidence }),
    },
  };
}
