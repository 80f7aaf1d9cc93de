/** Every type of event (lib/orders/events.ts decides which change is which; docs/contract.md "Events"). */
export const EVENT_TYPES = [
  'order.pending',
  'order.succeeded',
  'order.failed',
  'order.cancelled',
  'order.unknown',
  'order.chargeback',
  'order.possible_duplicate',
  'card.saved',
  'hold.authorized',
  'hold.captured',
  'hold.released',
  'hold.expired',
  'subscription.created',
  'subscription.installment_paid',
  'subscription.cancelled',
  'subscription.completed',
  'refund.requested',
  'refund.settled',
  'refund.refused',
  'refund.undeterminable',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
