/** What the ledger holds (lib/ledger/store.ts keeps it in DynamoDB); no dependencies, so schemas and views can use it. */

export const ORDER_KINDS = ['payment', 'preapproval', 'authorize', 'recurring', 'charge'] as const;
export type OrderKind = (typeof ORDER_KINDS)[number];

export const ORDER_STATES = [
  'created',
  'pending',
  'succeeded',
  'failed',
  'cancelled',
  'chargedback',
  'unknown',
] as const;
export type OrderState = (typeof ORDER_STATES)[number];

export interface Card {
  method: string | null;
  card_no: string | null;
  card_expiry: string | null;
}

/** What the order's price is made of; a customer's charge must match it (docs/contract.md "Prices"). */
export interface Price {
  items: string;
  currency: string;
  /** In cents; null for a pre-approval created without an amount. */
  amountCents: number | null;
}

/** One line of what an order sells, as PayHere's charge takes its `itemList`. */
export interface LineItem {
  name: string;
  number: string;
  quantity: number;
  unit_amount: number;
}

/**
 * The customer's personal fields as PayHere's checkout form takes them. Personal data: shown only
 * to the merchant and the order's own customer, never logged (lib/log/redact.ts).
 */
export interface CustomerDetails {
  first_name?: string;
  last_name?: string;
  email?: string;
  phone?: string;
  address?: string;
  city?: string;
  country?: string;
}

/** What a back office keeps of an order besides its price: given at checkout or charge, never sent to PayHere but `custom_1/2`. */
export interface OrderDetails {
  custom1: string | null;
  custom2: string | null;
  /** The line items given at checkout or charge; null when none were. */
  lineItems: LineItem[] | null;
  customerDetails: CustomerDetails | null;
  /** The merchant's own key/value pairs (lib/schemas/fields.ts bounds them); null when none. */
  metadata: Record<string, string> | null;
}

export interface Order extends Price, OrderDetails {
  orderId: string;
  owner: string;
  kind: OrderKind;
  state: OrderState;
  recurrence: string | null;
  duration: string | null;
  /**
   * A recurring order's startup fee in cents, charged once with the first payment (PayHere's
   * `startup_fee`): that payment is `amountCents` + this; null when none.
   */
  startupFeeCents: number | null;
  /**
   * A recurring order's next installment date (`YYYY-MM-DD`, PayHere's `item_rec_date_next`), from
   * the notification of an installment PayHere's records confirmed; null when unknown or none is due.
   */
  nextInstallment: string | null;
  paymentId: string | null;
  customerToken: string | null;
  authorizationToken: string | null;
  subscriptionId: string | null;
  card: Card | null;
  /** Epoch ms. */
  createdAt: number;
  updatedAt: number;
  /** The charge that holds (or last held) the order's payment slot. */
  charge: ChargeSlot | null;
  /** A recurring order's installments PayHere's payments of the subscription show as paid. */
  installmentsPaid: number | null;
  /**
   * A recurring order's subscription as PayHere's records (or its answer to a cancel through the
   * service) last showed it and the ledger recorded it (lib/orders/subscription-evidence.ts decides):
   * `FAILED` (an installment failed), `CANCELLED`, `COMPLETED`; null while none of these was recorded.
   */
  subscriptionStatus: SubscriptionStatus | null;
  /**
   * The last installment (1 is the first payment) PayHere's records showed failed: its subscription
   * `FAILED` after one fewer installments paid; null when none was recorded.
   */
  failedInstallment: number | null;
  /**
   * What a verified notification reported but PayHere could not confirm yet (a payment id, a
   * subscription id, installments paid): checked again on the next read, never shown before.
   */
  reported: Reported;
  /**
   * Epoch ms: when a success was reported that PayHere's records did not show yet (the order is
   * `pending` until they do, or the settle job finds they never will); null when none is.
   */
  reportedAt: number | null;
  /** Epoch ms: when the report is settled as not done if PayHere's records still do not show it. */
  settleAt: number | null;
  /**
   * Epoch ms: when the settle job reads the order's subscription from PayHere's records, because a
   * notification of its status or an installment came when the order could not be checked; null
   * when no such read is due.
   */
  standingCheckAt: number | null;
  /** Epoch ms: when the standing check due now was first asked for (for the hour's alarm); null with none. */
  standingSince: number | null;
  /** How many notifications asked for the standing check due now (0 with none). */
  standingAsks: number;
  /**
   * A hold's authorization token is proven (true: PayHere's own answer gave it, or a capture or
   * release through the service used it) or known only from a notification (false); null for no hold.
   */
  holdVerified: boolean | null;
  /** PayHere's answer to the order's payments, kept for its owner while the order's state is final. */
  paymentsCopy: PaymentsCopy | null;
  /** Declined or refused charges of the order, by window (lib/orders/charge-engine.ts: card testing). */
  failedAttempts: Record<number, number>;
  /**
   * Payments of the order PayHere holds besides `paymentId` that no charge owns: a lost charge
   * matched by several, or a second payment through PayHere's SDK. The merchant checks and refunds.
   */
  duplicatePayments: string[];
}

/** What the ledger records of a subscription's status at PayHere (`ACTIVE` is never recorded: it is the default). */
export const SUBSCRIPTION_STATUSES = ['FAILED', 'CANCELLED', 'COMPLETED'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

/** An order's payments as PayHere answered them while the order was in `state` (lib/orders/payments.ts). */
export interface PaymentsCopy {
  state: OrderState;
  /** Epoch ms when the request to PayHere started. */
  fetchedAt: number;
  /** PayHere's unfiltered answer, as JSON. */
  answer: string;
}

export interface ChargeSlot {
  /** The idempotency record key of the charge request: only it may finish or release the slot. */
  key: string;
  /** The request is being processed: no other charge may start. */
  inflight: boolean;
  /** Epoch ms: when the charge was sent, and the deadline by which it must have been processed. */
  sentAt: number;
  until: number;
  /**
   * Epoch ms: the first look at PayHere's records, past the settle delay, that showed nothing of
   * the charge. "Not done" needs a second look at least one settle interval later.
   */
  nothingAt: number | null;
}

export interface Reported {
  paymentId: string | null;
  subscriptionId: string | null;
  installmentsPaid: number | null;
  /** A subscription's next installment date the reported notification gave: taken when PayHere's records confirm it. */
  nextInstallment: string | null;
}

/**
 * An event a ledger write records with the state change it reports, in the same conditional write
 * (lib/ledger/outbox.ts keeps it; lib/orders/events.ts decides what a change becomes).
 */
export interface LedgerEvent {
  type: string;
  data: Record<string, unknown>;
}

/**
 * An order moved as lib/orders/evidence.ts decided, from the state and facts it was read with: the
 * write is conditional on them, so that two pieces of evidence racing cannot both act, nor an older
 * one undo a newer one.
 */
export interface OrderMove {
  from: OrderState;
  to: OrderState;
  /** The facts the decision read besides the state: whether a charge and a report were there. */
  seen: { charged: boolean; reported: boolean };
  paymentId?: string;
  customerToken?: string;
  authorizationToken?: string;
  subscriptionId?: string;
  card?: Card;
  holdVerified?: boolean;
  /** A subscription's next installment date, from the notification of its first payment PayHere's records confirmed. */
  nextInstallment?: string;
  /** A success PayHere's records do not show yet: kept as reported, and settled by `settleAt`. */
  report?: {
    paymentId: string | null;
    subscriptionId: string | null;
    nextInstallment?: string;
    at: number;
    settleAt: number;
  };
  /** The report is settled (confirmed, or refuted by the settle job): cleared. */
  clearReport?: boolean;
  /** What the move becomes for the merchant (lib/orders/events.ts), recorded with it. */
  events?: readonly LedgerEvent[];
}

/**
 * What PayHere said of an order's subscription, recorded as lib/orders/subscription-evidence.ts
 * decided, from the facts it read: the write is conditional on them.
 */
export interface SubscriptionChange {
  subscriptionId: string;
  to: SubscriptionStatus;
  from: Pick<Order, 'subscriptionStatus' | 'failedInstallment'>;
  /** `FAILED`: the installment that failed. */
  failedInstallment?: number;
  /** What the change becomes for the merchant (lib/orders/events.ts), recorded with it. */
  events: readonly LedgerEvent[];
}

/** A notification that matched no order, or not its amount, status or state: kept for the operator. */
export interface UnmatchedNotification {
  reason:
    | 'unknown_order'
    | 'amount_mismatch'
    | 'unknown_status'
    | 'token_conflict'
    /** Its fields are another flow's than the order's kind (a customer token on a payment order...). */
    | 'flow_mismatch'
    /** A subscription on other terms than the order's (recurrence, duration, amount, currency). */
    | 'terms_mismatch';
  orderId: string;
  statusCode: string;
  amount: string;
  currency: string;
  /** The other fields, with tokens removed. */
  fields: Record<string, string>;
}

export type ReferenceKind = 'payment' | 'authorization' | 'subscription' | 'customer_token';

export interface Reference {
  orderId: string;
  owner: string;
  /** A subscription's state as the service last learned it from PayHere (a cancel it sent, or was refused). */
  status?: string;
  /** A payment's: the charge that adopted it (absent: linked by its order's notification). */
  chargeKey?: string;
}

export type NewOrder = Omit<
  Order,
  | 'state'
  | 'createdAt'
  | 'updatedAt'
  | 'charge'
  | 'paymentId'
  | 'installmentsPaid'
  | 'reported'
  | 'reportedAt'
  | 'settleAt'
  | 'standingCheckAt'
  | 'standingSince'
  | 'standingAsks'
  | 'holdVerified'
  | 'paymentsCopy'
  | 'failedAttempts'
  | 'duplicatePayments'
  | 'nextInstallment'
  | 'subscriptionStatus'
  | 'failedInstallment'
>;

/** How a charge wants to take an order's payment slot (see claimCharge). */
export interface ChargeClaim {
  orderId: string;
  /** The order's owner if the charge creates it. */
  owner: string;
  /** `charge` for a payment, `authorize` for a hold: the kind of order the charge creates or must find. */
  kind: 'charge' | 'authorize';
  price: Price;
  custom1: string | null;
  custom2: string | null;
  /** Kept, with `custom1/2`, on an order the charge creates or prices (not one the merchant priced for a customer). */
  lineItems?: LineItem[] | null;
  customerDetails?: CustomerDetails | null;
  metadata?: Record<string, string> | null;
  slot: Omit<ChargeSlot, 'inflight' | 'nothingAt'>;
  /**
   * Epoch ms: when the settle job looks at the order if the charge's request has not finished it
   * (by default when the slot's window closes).
   */
  dueAt?: number;
  /** The states the order may be charged in (lib/orders/evidence.ts CHARGEABLE). */
  chargeable: readonly OrderState[];
  /**
   * Only while the order's failed charges counted in this window (its own and the previous
   * window's, lib/orders/attempts.ts) are fewer than `limit` (card testing).
   */
  attempts?: { window: number; limit: number };
  /**
   * `merchant`: any order, created if absent, its price set by the charge. `customer-priced`: an
   * existing order of `owner` of this `kind` at exactly `price`. `customer`: an order of `owner`, created
   * if absent, its price set by the charge (CHARGE_PRICING=client).
   */
  rule: 'merchant' | 'customer-priced' | 'customer';
}

/**
 * What a charge's evidence moves the order to (lib/orders/evidence.ts chargeMove), written without
 * reading the order first: conditional on the charge holding the slot and the order being in one
 * of `from` (and, unless `overReport`, on no success being reported meanwhile).
 */
export interface ChargeOutcome {
  state: OrderState;
  from: readonly OrderState[];
  overReport: boolean;
  paymentId?: string | null;
  authorizationToken?: string | null;
  /** A declined or refused charge: counted against the order in each of these windows (card testing). */
  failedWindows?: readonly number[];
  /** Windows whose failed charges no charge is checked against any more: their counts are removed. */
  staleFailedWindows?: readonly number[];
  /**
   * Epoch ms: when the settle job looks at the order again (an outcome still open: pending or
   * unknown); absent, the order leaves the settle job's charges.
   */
  dueAt?: number;
  /** Other payments of the order that could be this charge's (a possible duplicate charge). */
  possibleDuplicates?: readonly string[];
  /**
   * What the outcome becomes for the merchant (lib/orders/events.ts), recorded with it when it
   * moves the order; not when the order was already in `state` (a notification got there first).
   */
  events?: readonly LedgerEvent[];
  /** What `possibleDuplicates` become, recorded with them where any of them is new to the order. */
  duplicateEvents?: readonly LedgerEvent[];
}
