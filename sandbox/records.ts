// Shapes of docs/payhere.md's records. Field order follows PayHere's samples, because the records are
// serialised as stored.

export interface Customer {
  /** PayHere's own spelling. */
  fist_name: string;
  last_name: string;
  email: string;
  phone: string;
  delivery_details: { address: string; city: string; country: string };
}

export interface PaymentMethod {
  method: string;
  card_customer_name: string;
  card_no: string;
}

export interface AmountDetail {
  currency: string;
  gross: number;
  fee: number;
  net: number;
  exchange_rate: number;
  exchange_from: string;
  exchange_to: string;
}

export interface ItemLine {
  name: string;
  quantity: number;
  currency: string;
  unit_price: number;
  total_price: number;
}

export interface PaymentRecord {
  payment_id: number;
  order_id: string;
  date: string;
  description: string;
  status: string;
  currency: string;
  amount: number;
  customer: Customer;
  amount_detail: AmountDetail;
  payment_method: PaymentMethod;
  items: ItemLine[] | null;
}

export interface SubscriptionRecord {
  subscription_id: number;
  order_id: string;
  date: string;
  description: string;
  recurring: string;
  status: string;
  amount: number;
  currency: string;
  customer: Customer;
  amount_detail: AmountDetail;
  payment_method: PaymentMethod;
  items: ItemLine[];
}

/** What a customer token stands for: a saved card, and how a charge on it ends. */
export interface Payer {
  outcome: 'success' | 'declined' | 'pending';
  customer: Customer;
  paymentMethod: PaymentMethod;
  /** MM/YY, as notifications carry it; payment records do not show it. */
  cardExpiry: string;
}

/** Where a refund is in PayHere's asynchronous processing. */
export type RefundStatus = 'REFUND REQUESTED' | 'REFUND PROCESSING' | 'REFUNDED';

/** One refund of a payment, as the control API lists it (PayHere's Merchant API does not). */
export interface StoredRefund {
  /** The refund number the refund answer carries as `data`. */
  refund_id: number;
  amount: number;
  description: string;
  /** When it was requested, on the sandbox's clock (ms). */
  at: number;
  /** The same, as PayHere dates it. */
  date: string;
  status: RefundStatus;
}

/** A payment plus what PayHere tracks behind it but does not show. */
export interface StoredPayment {
  record: PaymentRecord;
  /** Oldest first. */
  refunds: StoredRefund[];
  subscriptionId: number | null;
}

/** A subscription plus its terms and where PayHere reports on it. */
export interface StoredSubscription {
  record: SubscriptionRecord;
  /** PayHere's forms: `1 Month`; duration also `Forever`. */
  recurrence: string;
  duration: string;
  payer: Payer;
  /** Null for the seeded ones, whose checkout the sandbox never saw. */
  notifyUrl: string | null;
  custom1: string | null;
  custom2: string | null;
}

export interface Authorization {
  token: string;
  paymentId: number;
  orderId: string;
  items: string;
  currency: string;
  amount: number;
  custom1: string | null;
  custom2: string | null;
  itemLines: ItemLine[] | null;
  payer: Payer;
  state: 'AUTHORIZED' | 'CAPTURED' | 'REFUNDED';
}

export interface Envelope {
  status: number;
  msg: string;
  data: unknown;
}
