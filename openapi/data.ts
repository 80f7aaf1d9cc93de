import * as z from 'zod/mini';
import type { EventPage } from '../lib/events/feed.ts';
import type { EventType } from '../lib/events/types.ts';
import { SubscriptionList } from '../lib/gateway/schemas.ts';
import { ORDER_KINDS, ORDER_STATES } from '../lib/ledger/model.ts';
import type { CheckoutParameters, CheckoutView } from '../lib/orders/checkout.ts';
import type { OrderList } from '../lib/orders/order-lists.ts';
import type { ReconciliationReport } from '../lib/orders/reconciliation.ts';
import type { PaymentRefundsView } from '../lib/orders/refund-records.ts';
import type { SubscriptionList as SubscriptionPage } from '../lib/orders/subscription-lists.ts';
import { CURRENCIES } from '../lib/schemas/fields.ts';
import { DELIVERY_STATES } from '../lib/schemas/webhooks.ts';
import type { DeliveryList, DeliveryView, Redelivery } from '../lib/webhooks/deliveries.ts';

/**
 * The `data` of answers the functions build themselves (the gateway's records are described by
 * lib/gateway/schemas.ts, which parse them). Only the generator reads these; the type checks at the
 * bottom hold them to the interfaces the functions return.
 */

export const FieldError = z.strictObject({ path: z.string(), message: z.string() });

/** refund: the refund number, or null when an authorization was released. */
export const RefundAnswer = z.strictObject({ refund_id: z.nullable(z.number()) });

const amount = z.nullable(z.number());
const gatewayId = z.nullable(z.union([z.number(), z.string()]));

export const CheckoutParametersSchema = z.strictObject({
  order_id: z.string(),
  kind: z.enum(ORDER_KINDS),
  items: z.string(),
  currency: z.enum(CURRENCIES),
  amount,
  merchant_id: z.string(),
  notify_url: z.string(),
  hash: z.string().check(z.regex(/^[0-9A-F]{32}$/)),
  sandbox: z.boolean(),
  // Recurring checkouts only: PayHere's SDK takes them with the payment (lib/orders/checkout.ts).
  recurrence: z.optional(z.string()),
  duration: z.optional(z.string()),
  // A recurring checkout's startup fee, for PayHere's form: the first payment is amount + startup_fee.
  startup_fee: z.optional(z.number()),
});

const LineItem = z.strictObject({
  name: z.string(),
  number: z.string(),
  quantity: z.number(),
  unit_amount: z.number(),
});

const CustomerDetails = z.strictObject({
  first_name: z.optional(z.string()),
  last_name: z.optional(z.string()),
  email: z.optional(z.string()),
  phone: z.optional(z.string()),
  address: z.optional(z.string()),
  city: z.optional(z.string()),
  country: z.optional(z.string()),
});

/** What a back office reads of an order besides its state (lib/orders/checkout.ts OrderDetailsView). */
const details = {
  custom_1: z.nullable(z.string()),
  custom_2: z.nullable(z.string()),
  // Personal data: shown to the merchant and the order's own customer only.
  customer_details: z.nullable(CustomerDetails),
  // The merchant's own: null to a customer.
  metadata: z.nullable(z.record(z.string(), z.string())),
  startup_fee: amount,
  // YYYY-MM-DD, from PayHere's notification of the last installment its records confirmed.
  next_installment: z.nullable(z.string()),
};

export const Card = z.strictObject({
  method: z.nullable(z.string()),
  card_no: z.nullable(z.string()),
  card_expiry: z.nullable(z.string()),
});

export const CheckoutViewSchema = z.strictObject({
  order_id: z.string(),
  kind: z.enum(ORDER_KINDS),
  status: z.enum(ORDER_STATES),
  items: z.string(),
  currency: z.enum(CURRENCIES),
  amount,
  payment_id: gatewayId,
  customer_token: z.nullable(z.string()),
  authorization_token: z.nullable(z.string()),
  subscription_id: gatewayId,
  card: z.nullable(Card),
  verified: z.nullable(z.boolean()),
  // Payments of the order besides payment_id that no charge of the service owns: possibly paid twice.
  duplicate_payment_ids: z.array(z.string()),
  item_list: z.nullable(z.array(LineItem)),
  ...details,
  updated_at: z.string(),
});

/** listOrders: a page of orders, newest first, and the cursor of the next page. */
export const OrderListSchema = z.strictObject({
  orders: z.array(
    z.strictObject({
      order_id: z.string(),
      kind: z.enum(ORDER_KINDS),
      status: z.enum(ORDER_STATES),
      charge_in_flight: z.boolean(),
      customer: z.string(),
      items: z.string(),
      currency: z.enum(CURRENCIES),
      amount,
      payment_id: gatewayId,
      subscription_id: gatewayId,
      ...details,
      created_at: z.string(),
      updated_at: z.string(),
    }),
  ),
  next_cursor: z.nullable(z.string()),
});

/** listSubscriptions: a page of PayHere's subscription records, newest first, and the cursor of the next page. */
export const SubscriptionListSchema = z.strictObject({
  subscriptions: SubscriptionList,
  next_cursor: z.nullable(z.string()),
});

/** paymentRefunds: a payment's refunds through the service, and what is refunded and left. */
export const PaymentRefundsSchema = z.strictObject({
  payment_id: z.union([z.number(), z.string()]),
  order_id: z.nullable(z.string()),
  currency: z.nullable(z.enum(CURRENCIES)),
  amount,
  refunded: amount,
  left: amount,
  undetermined: z.number(),
  payhere_status: z.nullable(z.string()),
  payhere_status_at: z.nullable(z.string()),
  refunds: z.array(
    z.strictObject({
      id: z.string(),
      payment_id: z.union([z.number(), z.string()]),
      amount,
      full: z.boolean(),
      at: z.string(),
      by: z.nullable(z.string()),
      refund_id: z.nullable(z.number()),
      status: z.enum(['accepted', 'in_flight']),
    }),
  ),
});

/** reconciliationReport: per UTC day, the ledger's paid orders, PayHere's payments, refunds, and the differences. */
const id = z.union([z.number(), z.string()]);
const checkedAt = z.string();
export const ReconciliationReportSchema = z.strictObject({
  from: z.string(),
  to: z.string(),
  time_zone: z.literal('UTC'),
  generated_at: z.string(),
  complete: z.boolean(),
  orders: z.number(),
  checked: z.number(),
  unchecked: z.number(),
  checked_now: z.number(),
  oldest_check: z.nullable(z.string()),
  days: z.array(
    z.strictObject({
      date: z.string(),
      totals: z.array(
        z.strictObject({
          currency: z.string(),
          orders_paid: z.number(),
          ordered: z.number(),
          payments: z.number(),
          gross: z.number(),
          fee: z.number(),
          net: z.number(),
          refunds: z.number(),
          refunded: z.number(),
        }),
      ),
      orders_paid: z.array(
        z.strictObject({
          order_id: z.string(),
          kind: z.enum(ORDER_KINDS),
          customer: z.string(),
          status: z.enum(ORDER_STATES),
          currency: z.string(),
          amount,
          payment_id: gatewayId,
        }),
      ),
      payments: z.array(
        z.strictObject({
          order_id: z.string(),
          payment_id: id,
          status: z.string(),
          currency: z.string(),
          amount: z.number(),
          gross: amount,
          fee: amount,
          net: amount,
          settlement_currency: z.string(),
          date: z.nullable(z.string()),
          in_ledger: z.boolean(),
          checked_at: checkedAt,
        }),
      ),
      refunds: z.array(
        z.strictObject({
          order_id: z.string(),
          payment_id: id,
          amount,
          full: z.boolean(),
          at: z.string(),
          refund_id: z.nullable(z.number()),
          status: z.enum(['accepted', 'in_flight']),
        }),
      ),
      differences: z.array(
        z.strictObject({
          kind: z.enum(['payment_not_in_ledger', 'payment_not_at_payhere', 'amount_differs']),
          order_id: z.string(),
          payment_id: gatewayId,
          ledger_status: z.enum(ORDER_STATES),
          currency: z.string(),
          ledger_amount: amount,
          payhere_amount: amount,
          action: z.string(),
          checked_at: checkedAt,
        }),
      ),
      unchecked: z.array(
        z.strictObject({
          order_id: z.string(),
          status: z.enum(ORDER_STATES),
          reason: z.enum(['not_checked', 'changed_since_check', 'charge_in_flight']),
          checked_at: z.nullable(z.string()),
        }),
      ),
    }),
  ),
});

/** An event's envelope (docs/contract.md "Events"), with `type` one of `types` and `data` as they carry it. */
const event = <const T extends readonly [string, ...string[]], D extends z.core.$ZodShape>(
  types: T,
  objectType: 'order' | 'payment',
  data: D,
) =>
  z.strictObject({
    id: z.string(),
    type: z.enum(types),
    created_at: z.string(),
    object: z.strictObject({ type: z.literal(objectType), id: z.string() }),
    sequence: z.number(),
    data: z.strictObject(data),
  });

const orderFacts = {
  order_id: z.string(),
  kind: z.enum(ORDER_KINDS),
  status: z.enum(ORDER_STATES),
  amount,
  currency: z.enum(CURRENCIES),
  payment_id: z.nullable(z.string()),
  subscription_id: z.nullable(z.string()),
};

/** Each kind of event, by the types that share its `data`. */
export const EventSchemas = {
  OrderMovedEvent: event(
    [
      'order.pending',
      'order.succeeded',
      'order.failed',
      'order.cancelled',
      'order.unknown',
      'order.chargeback',
      'card.saved',
      'hold.authorized',
      'hold.expired',
      'subscription.created',
    ],
    'order',
    { ...orderFacts, previous_status: z.optional(z.enum(ORDER_STATES)), evidence: z.string() },
  ),
  PossibleDuplicateEvent: event(['order.possible_duplicate'], 'order', {
    ...orderFacts,
    duplicate_payment_ids: z.array(z.string()),
  }),
  InstallmentPaidEvent: event(['subscription.installment_paid'], 'order', {
    ...orderFacts,
    installments_paid: z.number(),
    next_installment: z.nullable(z.string()),
  }),
  SubscriptionEndedEvent: event(
    ['subscription.cancelled', 'subscription.stopped', 'subscription.completed'],
    'order',
    {
      order_id: z.string(),
      kind: z.literal('recurring'),
      subscription_id: z.string(),
      subscription_status: z.enum(['CANCELLED', 'COMPLETED']),
    },
  ),
  InstallmentFailedEvent: event(['subscription.installment_failed'], 'order', {
    order_id: z.string(),
    kind: z.literal('recurring'),
    subscription_id: z.string(),
    subscription_status: z.literal('FAILED'),
    installment: z.number(),
    installments_paid: z.number(),
  }),
  HoldSettledEvent: event(['hold.captured', 'hold.released'], 'order', {
    order_id: z.string(),
    kind: z.literal('authorize'),
    amount,
  }),
  RefundEvent: event(
    ['refund.requested', 'refund.settled', 'refund.refused', 'refund.undeterminable'],
    'payment',
    {
      payment_id: z.string(),
      amount,
      refund_id: z.optional(z.nullable(z.number())),
      evidence: z.optional(z.string()),
    },
  ),
};

/** listEvents: a page of events, oldest first, and where the next page starts. */
export const EventPageSchema = z.strictObject({
  events: z.array(z.union(Object.values(EventSchemas))),
  next_cursor: z.nullable(z.string()),
  has_more: z.boolean(),
});

// A described answer is one the function can return, and it names every field the function's type has
// (the answers' contract test finds fields the function adds beyond its type).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Covers<A, B> = [B] extends [A] ? true : false;
const parametersDescribed: Covers<keyof z.infer<typeof CheckoutParametersSchema>, keyof CheckoutParameters> &
  (z.infer<typeof CheckoutParametersSchema> extends CheckoutParameters ? true : false) = true;
const viewDescribed: Same<keyof z.infer<typeof CheckoutViewSchema>, keyof CheckoutView> &
  (z.infer<typeof CheckoutViewSchema> extends CheckoutView ? true : false) = true;
const listDescribed: Same<keyof z.infer<typeof OrderListSchema>, keyof OrderList> &
  Same<keyof z.infer<typeof OrderListSchema>['orders'][number], keyof OrderList['orders'][number]> &
  (z.infer<typeof OrderListSchema> extends OrderList ? true : false) = true;
void listDescribed;
const subscriptionsDescribed: Same<keyof z.infer<typeof SubscriptionListSchema>, keyof SubscriptionPage> =
  true;
void subscriptionsDescribed;
const refundsDescribed: Same<keyof z.infer<typeof PaymentRefundsSchema>, keyof PaymentRefundsView> &
  Same<
    keyof z.infer<typeof PaymentRefundsSchema>['refunds'][number],
    keyof PaymentRefundsView['refunds'][number]
  > = true;
void refundsDescribed;
type Day = ReconciliationReport['days'][number];
type DescribedDay = z.infer<typeof ReconciliationReportSchema>['days'][number];
const reportDescribed: Same<keyof z.infer<typeof ReconciliationReportSchema>, keyof ReconciliationReport> &
  Same<keyof DescribedDay, keyof Day> &
  Same<keyof DescribedDay['totals'][number], keyof Day['totals'][number]> &
  Same<keyof DescribedDay['orders_paid'][number], keyof Day['orders_paid'][number]> &
  Same<keyof DescribedDay['payments'][number], keyof Day['payments'][number]> &
  Same<keyof DescribedDay['refunds'][number], keyof Day['refunds'][number]> &
  Same<keyof DescribedDay['differences'][number], keyof Day['differences'][number]> &
  Same<keyof DescribedDay['unchecked'][number], keyof Day['unchecked'][number]> &
  (z.infer<typeof ReconciliationReportSchema> extends ReconciliationReport ? true : false) = true;
void reportDescribed;
void parametersDescribed;
void viewDescribed;
// Every event type has its schema, and no schema names a type the service never writes.
type DescribedEventType = z.infer<(typeof EventSchemas)[keyof typeof EventSchemas]>['type'];
const eventsDescribed: Same<keyof z.infer<typeof EventPageSchema>, keyof EventPage> &
  Same<DescribedEventType, EventType> = true;
void eventsDescribed;

/** webhookDeliveries: a page of deliveries, newest event first (lib/webhooks/deliveries.ts). */
export const DeliveryListSchema = z.strictObject({
  deliveries: z.array(
    z.strictObject({
      event_id: z.string(),
      type: z.string(),
      object: z.strictObject({ type: z.string(), id: z.string() }),
      endpoint: z.string(),
      status: z.enum(DELIVERY_STATES),
      attempts: z.number(),
      last_status: z.nullable(z.number()),
      last_error: z.nullable(z.string()),
      last_attempt_at: z.nullable(z.string()),
      next_attempt_at: z.nullable(z.string()),
      delivered_at: z.nullable(z.string()),
    }),
  ),
  next_cursor: z.nullable(z.string()),
});

/** redeliverEvent: the endpoints the event is due to again, from when. */
export const RedeliverySchema = z.strictObject({
  event_id: z.string(),
  endpoints: z.array(z.string()),
  due_at: z.string(),
});

const deliveriesDescribed: Same<keyof z.infer<typeof DeliveryListSchema>, keyof DeliveryList> &
  Same<keyof z.infer<typeof DeliveryListSchema>['deliveries'][number], keyof DeliveryView> &
  (z.infer<typeof DeliveryListSchema> extends DeliveryList ? true : false) &
  Same<keyof z.infer<typeof RedeliverySchema>, keyof Redelivery> = true;
void deliveriesDescribed;
