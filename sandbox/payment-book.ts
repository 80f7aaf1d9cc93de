import { randomBytes, randomUUID } from 'node:crypto';
import { amountDetail, formatAmount } from './money.ts';
import type { Authorization, Envelope, ItemLine, Payer, StoredPayment } from './records.ts';
import type { SeedData } from './seed.ts';
import { md5sig } from './signature.ts';

// Generated ids start far from the seeded ones so they can never collide.
const FIRST_PAYMENT_ID = 320040000001;
const FIRST_REFUND_NUMBER = 560034010257;
const FIRST_SUBSCRIPTION_ID = 420080000001;
const SRI_LANKA_OFFSET_MS = 5.5 * 60 * 60 * 1000;

/**
 * PayHere never hands out an id twice: the counters outlive a reset of the seeded data (and are
 * shared by every sandbox in a process), so a client's records of earlier ids stay unambiguous.
 */
export const ids = {
  nextPaymentId: FIRST_PAYMENT_ID,
  nextRefundNumber: FIRST_REFUND_NUMBER,
  nextSubscriptionId: FIRST_SUBSCRIPTION_ID,
};

/** A moment (ms) as PayHere writes dates: Sri Lanka local time without a zone. */
export function payhereDate(ms: number): string {
  return new Date(ms + SRI_LANKA_OFFSET_MS).toISOString().slice(0, 19).replace('T', ' ');
}

export function ok(msg: string, data: unknown = null): Envelope {
  return { status: 1, msg, data };
}

export function failed(msg: string, status = -1): Envelope {
  return { status, msg, data: null };
}

function append<Key, Value>(map: Map<Key, Value[]>, key: Key, value: Value): void {
  const values = map.get(key);
  if (values) values.push(value);
  else map.set(key, [value]);
}

export interface StateOptions {
  /** The sandbox's clock (ms): when things happen. */
  now: () => number;
  /** How far PayHere's own clock, which dates its records, is off the sandbox's (ms; default 0). */
  clockOffsetMs?: () => number;
  merchantId: string;
  merchantSecret: string;
}

/**
 * The gateway's payments, saved cards and holds: what a charge, a capture, a checkout or an
 * installment adds, found by payment, order or subscription, with PayHere's dates and signatures.
 */
export class PaymentBook {
  readonly #options: StateOptions;
  readonly #data: SeedData;
  // Lookups by key, in the order payments were made: a long run (the bench makes tens of
  // thousands) must not turn every search into a scan.
  readonly #byPaymentId = new Map<number, StoredPayment>();
  readonly #byOrderId = new Map<string, StoredPayment[]>();
  readonly #bySubscriptionId = new Map<number, StoredPayment[]>();

  constructor(options: StateOptions, data: SeedData) {
    this.#options = options;
    this.#data = data;
    for (const payment of data.payments) this.#index(payment);
  }

  byPaymentId(id: number): StoredPayment | undefined {
    return this.#byPaymentId.get(id);
  }

  ofOrder(orderId: string): StoredPayment[] {
    return this.#byOrderId.get(orderId) ?? [];
  }

  ofSubscription(id: number): StoredPayment[] {
    return this.#bySubscriptionId.get(id) ?? [];
  }

  /** A saved card: a new customer token, 32 upper-case hex digits like PayHere's. */
  addPayer(payer: Payer): string {
    const token = randomBytes(16).toString('hex').toUpperCase();
    this.#data.payers.set(token, { ...structuredClone(payer), outcome: 'success' });
    return token;
  }

  addAuthorization(fields: Omit<Authorization, 'token' | 'state'>): string {
    const token = randomUUID();
    this.#data.authorizations.set(token, { token, ...fields, state: 'AUTHORIZED' });
    return token;
  }

  releaseAuthorization(token: string, amount: number | undefined): Envelope {
    const authorization = this.#data.authorizations.get(token);
    // A hold is released whole: a partial amount, or a hold already captured or released, is refused.
    if (!authorization || amount !== undefined || authorization.state !== 'AUTHORIZED') {
      return failed('Error processing refund');
    }
    authorization.state = 'REFUNDED';
    return ok('Successfully processed the authorization refund');
  }

  addPayment(fields: {
    paymentId: number;
    orderId: string;
    description: string;
    currency: string;
    amount: number;
    payer: Payer;
    items: ItemLine[] | null;
    subscriptionId?: number;
    /** When PayHere made it, on the sandbox's clock; default now. */
    at?: number;
  }): StoredPayment {
    const payment: StoredPayment = structuredClone({
      record: {
        payment_id: fields.paymentId,
        order_id: fields.orderId,
        date: this.date(fields.at),
        description: fields.description,
        status: 'RECEIVED',
        currency: fields.currency,
        amount: fields.amount,
        customer: fields.payer.customer,
        amount_detail: amountDetail(fields.currency, fields.amount),
        payment_method: fields.payer.paymentMethod,
        items: fields.items,
      },
      refunds: [],
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

  newPaymentId(): number {
    return ids.nextPaymentId++;
  }

  /** PayHere's date of a moment on the sandbox's clock (default now), read off PayHere's own clock. */
  date(at = this.#options.now()): string {
    return payhereDate(at + (this.#options.clockOffsetMs?.() ?? 0));
  }

  // The md5sig of charge and capture answers is undocumented; the notification formula is a
  // plausible stand-in and lets a test recompute it.
  sign(orderId: string, amount: number, currency: string, statusCode: number): string {
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
