// About 400 lines, one file: it is data (every seeded payment, subscription, card and token), read
// beside sandbox/README.md's table of it; split, the ids that tie records together would be apart.
// The data the sandbox starts with (and returns to on reset). Values come from docs/payhere.md's samples
// wherever a sample exists; sandbox/README.md documents every one.
import { amountDetail } from './money.ts';
import type {
  Authorization,
  Customer,
  ItemLine,
  Payer,
  PaymentMethod,
  StoredPayment,
  StoredSubscription,
} from './records.ts';
import { recurringSentence } from './recurrence.ts';

export const SANDBOX_CREDENTIALS = {
  appId: '4OVx3pFQmvkUsrq9S9Fty3',
  appSecret: '4Y8oNMVkU5Q8T4Fk2BYZxp8pTKpxwEGVv4hPdp52dXqC',
  merchantId: '1211149',
  merchantSecret: 'MERCHANT_SECRET_EXAMPLE',
} as const;

export const SEED = {
  customerTokens: {
    /** Charges succeed (VISA ************1234, Saman Perera); docs/payhere.md "Charge" samples it. */
    success: '59AFEE022CC69CA39D325E1B59130862',
    /** Charges succeed on a MasterCard (************4444, Nimali Fernando). */
    successMaster: 'A6C1E8F2B3D94705C8E1F6A2B9D3C704',
    /** Charges are declined: status 1, status_code -2. */
    declined: 'DC8A1F37B09E4D2C8E5F61A7B3C0D942',
    /** Charges stay pending: status 1, status_code 0. */
    pending: '7E3B90C4A1D85F26E0B4C7A9D3F1E658',
    /**
     * Charges are refused before processing, worded otherwise than "Authentication error": HTTP 200
     * `{"status":-2,"msg":"Customer authentication failed","data":null}`; nothing charged.
     */
    authenticationFails: 'A17E5C9D0B2F4E8391C6D7A2B5E80F14',
  },
  authorizationTokens: {
    /** 100.00 LKR on Order12345 (the sample of docs/payhere.md "Capture"), not yet captured. */
    capturable: 'e34f3059-7b7d-4b62-a57c-784beaa169f4',
    /** 345.67 LKR on Order12345 (the sample of docs/payhere.md "Charge"), for releasing through refund. */
    releasable: '74d7f304-7f9d-481d-b47f-6c9cad32d3d5',
    /** Already captured (200.00 LKR on Order12346). */
    captured: '5f0c8e7a-2b1d-4c6e-9a3f-7d8b1e2c4a60',
    /** Already released (75.50 LKR on Order12347). */
    released: '9b2e4d61-8c3a-4f7e-b1d5-0a6c2e8f4b13',
  },
  orders: {
    /** One payment: the sample of docs/payhere.md "The payment record". */
    sample: 'LP8006126139',
    /** Two payments of the same amount (PayHere does not enforce unique order ids). */
    duplicate: 'Order55501',
    /** One payment, 320027150501, meant for refund tests. */
    refundable: 'Order98765',
    /** Holds both uncaptured authorizations; no payment until one is captured. */
    authorized: 'Order12345',
    /** Payment of the captured authorization. */
    captured: 'Order12346',
    /** No payments at all. */
    withoutPayments: 'Order00000',
  },
  payments: {
    sample: 320025071278,
    duplicateFirst: 320025071301,
    duplicateSecond: 320025071302,
    refundable: 320027150501,
    captured: 320025527960,
  },
  subscriptions: {
    /** ACTIVE, 2 payments. */
    active: 420075032251,
    /** FAILED, 1 payment; a retry succeeds (→ ACTIVE, one more payment). */
    failed: 420075032252,
    /** COMPLETED, 3 payments. */
    completed: 420075032253,
    /** CANCELLED, 1 payment. */
    cancelled: 420075032254,
    /** Not a subscription. */
    unknown: 420075039999,
  },
} as const;

const saman: Customer = {
  fist_name: 'Saman',
  last_name: 'Perera',
  email: 'samanperera@gmail.com',
  phone: '+94771234567',
  delivery_details: { address: 'N0.1, Galle Road', city: 'Colombo', country: 'Sri Lanka' },
};

const nimali: Customer = {
  fist_name: 'Nimali',
  last_name: 'Fernando',
  email: 'nimali.fernando@example.lk',
  phone: '+94719876543',
  delivery_details: { address: '12, Temple Road', city: 'Kandy', country: 'Sri Lanka' },
};

const samanVisa: PaymentMethod = {
  method: 'VISA',
  card_customer_name: 'S Perera',
  card_no: '************1234',
};
const nimaliMaster: PaymentMethod = {
  method: 'MASTER',
  card_customer_name: 'N Fernando',
  card_no: '************4444',
};

const samanPayer: Payer = {
  outcome: 'success',
  customer: saman,
  paymentMethod: samanVisa,
  cardExpiry: '12/27',
};
const nimaliPayer: Payer = {
  outcome: 'success',
  customer: nimali,
  paymentMethod: nimaliMaster,
  cardExpiry: '08/28',
};

/** Who completes a checkout through the control API: Saman Perera with the VISA card ending 1234. */
export const CHECKOUT_PAYER: Payer = samanPayer;

function payers(): Map<string, Payer> {
  const t = SEED.customerTokens;
  return new Map<string, Payer>([
    [t.success, samanPayer],
    [t.successMaster, nimaliPayer],
    [t.declined, { ...nimaliPayer, outcome: 'declined' }],
    [t.pending, { ...samanPayer, outcome: 'pending' }],
  ]);
}

function line(name: string, quantity: number, currency: string, unitPrice: number): ItemLine {
  return { name, quantity, currency, unit_price: unitPrice, total_price: quantity * unitPrice };
}

interface PaymentSeed {
  id: number;
  orderId: string;
  date: string;
  description: string;
  currency: string;
  amount: number;
  items: ItemLine[] | null;
  customer?: Customer;
  method?: PaymentMethod;
  subscriptionId?: number;
}

function payment(seed: PaymentSeed): StoredPayment {
  return {
    record: {
      payment_id: seed.id,
      order_id: seed.orderId,
      date: seed.date,
      description: seed.description,
      status: 'RECEIVED',
      currency: seed.currency,
      amount: seed.amount,
      customer: seed.customer ?? saman,
      amount_detail: amountDetail(seed.currency, seed.amount),
      payment_method: seed.method ?? samanVisa,
      items: seed.items,
    },
    refunds: [],
    subscriptionId: seed.subscriptionId ?? null,
  };
}

interface SubscriptionSeed {
  id: number;
  orderId: string;
  date: string;
  description: string;
  recurrence: string;
  duration: string;
  status: string;
  currency: string;
  amount: number;
  payer?: Payer;
  /** Dates of the installments already paid. */
  paidOn: string[];
  firstPaymentId: number;
}

function subscription(seed: SubscriptionSeed): { stored: StoredSubscription; payments: StoredPayment[] } {
  const items = [line(seed.description, 1, seed.currency, seed.amount)];
  const payer = seed.payer ?? samanPayer;
  const stored: StoredSubscription = {
    record: {
      subscription_id: seed.id,
      order_id: seed.orderId,
      date: seed.date,
      description: seed.description,
      recurring: recurringSentence(seed.recurrence, seed.duration),
      status: seed.status,
      amount: seed.amount,
      currency: seed.currency,
      customer: payer.customer,
      amount_detail: amountDetail(seed.currency, seed.amount),
      payment_method: payer.paymentMethod,
      items,
    },
    recurrence: seed.recurrence,
    duration: seed.duration,
    payer,
    notifyUrl: null,
    custom1: null,
    custom2: null,
  };
  const payments = seed.paidOn.map((date, index) =>
    payment({
      id: seed.firstPaymentId + index,
      orderId: seed.orderId,
      date,
      description: seed.description,
      currency: seed.currency,
      amount: seed.amount,
      items,
      subscriptionId: seed.id,
      customer: payer.customer,
      method: payer.paymentMethod,
    }),
  );
  return { stored, payments };
}

function authorization(
  fields: Omit<Authorization, 'payer' | 'custom2' | 'itemLines'> & { payer?: Payer },
): Authorization {
  return { ...fields, payer: fields.payer ?? samanPayer, custom2: null, itemLines: null };
}

export interface SeedData {
  payers: Map<string, Payer>;
  payments: StoredPayment[];
  authorizations: Map<string, Authorization>;
  subscriptions: Map<number, StoredSubscription>;
}

/** A fresh, mutable copy of the seeded state. */
export function seedData(): SeedData {
  const o = SEED.orders;
  const p = SEED.payments;
  const a = SEED.authorizationTokens;
  const s = SEED.subscriptions;

  const subscriptions = [
    subscription({
      id: s.active,
      orderId: 'Order23451',
      date: '2024-01-05 10:15:30',
      description: 'Gym membership - monthly',
      recurrence: '1 Month',
      duration: '1 Year',
      status: 'ACTIVE',
      currency: 'LKR',
      amount: 2500,
      paidOn: ['2024-01-05 10:15:30', '2024-02-05 10:15:41'],
      firstPaymentId: 320031000001,
    }),
    subscription({
      id: s.failed,
      orderId: 'Order23452',
      date: '2024-03-10 08:00:12',
      description: 'Magazine subscription',
      recurrence: '1 Month',
      duration: '6 Month',
      status: 'FAILED',
      currency: 'LKR',
      amount: 750,
      paidOn: ['2024-03-10 08:00:12'],
      firstPaymentId: 320031000011,
    }),
    subscription({
      id: s.completed,
      orderId: 'Order23453',
      date: '2023-09-01 14:30:00',
      description: 'Online course - 3 installments',
      recurrence: '1 Month',
      duration: '3 Month',
      status: 'COMPLETED',
      currency: 'USD',
      amount: 100,
      payer: nimaliPayer,
      paidOn: ['2023-09-01 14:30:00', '2023-10-01 14:30:05', '2023-11-01 14:30:09'],
      firstPaymentId: 320031000021,
    }),
    subscription({
      id: s.cancelled,
      orderId: 'Order23454',
      date: '2023-06-15 19:45:10',
      description: 'Streaming plan',
      recurrence: '1 Month',
      duration: '3 Year',
      status: 'CANCELLED',
      currency: 'LKR',
      amount: 1200,
      paidOn: ['2023-06-15 19:45:10'],
      firstPaymentId: 320031000031,
    }),
  ];

  const payments = [
    payment({
      id: p.sample,
      orderId: o.sample,
      date: '2020-01-16 16:21:02',
      description: 'Policy No. LP8006126139 - Outstanding Payment',
      // The sample says amount 50 with gross 500; the sandbox keeps the record consistent.
      currency: 'LKR',
      amount: 500,
      items: null,
    }),
    payment({
      id: p.duplicateFirst,
      orderId: o.duplicate,
      date: '2024-04-02 09:12:44',
      description: 'Taxi Hire 5501',
      currency: 'LKR',
      amount: 1200,
      items: null,
    }),
    payment({
      id: p.duplicateSecond,
      orderId: o.duplicate,
      date: '2024-04-02 09:12:51',
      description: 'Taxi Hire 5501',
      currency: 'LKR',
      amount: 1200,
      items: [line('Hire from Colombo 1 to Colombo 4', 1, 'LKR', 1000), line('Tax', 1, 'LKR', 200)],
    }),
    payment({
      id: p.refundable,
      orderId: o.refundable,
      date: '2024-05-20 13:05:27',
      description: 'Order 98765 - 2 items',
      currency: 'LKR',
      amount: 1500,
      items: [line('Water bottle', 2, 'LKR', 500), line('Lunch box', 1, 'LKR', 500)],
    }),
    payment({
      id: p.captured,
      orderId: o.captured,
      date: '2024-06-01 11:00:00',
      description: 'Doll House',
      currency: 'LKR',
      amount: 200,
      items: null,
    }),
    ...subscriptions.flatMap((sub) => sub.payments),
  ];

  const authorizations = [
    authorization({
      token: a.capturable,
      paymentId: 320025527952,
      orderId: o.authorized,
      items: 'Toy Car',
      currency: 'LKR',
      amount: 100,
      custom1: 'ABCD',
      state: 'AUTHORIZED',
    }),
    authorization({
      token: a.releasable,
      paymentId: 320025021815,
      orderId: o.authorized,
      items: 'Taxi Hire 123',
      currency: 'LKR',
      amount: 345.67,
      custom1: null,
      state: 'AUTHORIZED',
    }),
    authorization({
      token: a.captured,
      paymentId: p.captured,
      orderId: o.captured,
      items: 'Doll House',
      currency: 'LKR',
      amount: 200,
      custom1: null,
      state: 'CAPTURED',
    }),
    authorization({
      token: a.released,
      paymentId: 320025527971,
      orderId: 'Order12347',
      items: 'Kite',
      currency: 'LKR',
      amount: 75.5,
      custom1: null,
      state: 'REFUNDED',
    }),
  ];

  // structuredClone so that no two records share a customer or item object that a transition could mutate.
  return structuredClone({
    payers: payers(),
    payments,
    authorizations: new Map(authorizations.map((auth) => [auth.token, auth])),
    subscriptions: new Map(subscriptions.map((sub) => [sub.stored.record.subscription_id, sub.stored])),
  });
}
