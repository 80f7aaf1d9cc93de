import { createHash, randomUUID } from 'node:crypto';
import type { CredentialsProvider } from '../config/config.ts';
import {
  CallerRateLimitedError,
  ForbiddenError,
  InvalidRequestError,
  NotFoundError,
  OrderConflictError,
} from '../envelope/errors.ts';
import type { CustomerDetails, LineItem, NewOrder, Order } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import type { CheckoutRequest } from '../schemas/checkout.ts';
import { type Actor, metadataRefused, Ownership, readLedger } from './access.ts';
import { AttemptWindows } from './attempts.ts';
import { NOTIFY_PATH, type OrdersConfig } from './config.ts';

/** What the app hands PayHere's SDK or checkout (docs/contract.md "createCheckout"). */
export interface CheckoutParameters {
  order_id: string;
  kind: Order['kind'];
  items: string;
  currency: string;
  amount: number | null;
  merchant_id: string;
  notify_url: string;
  hash: string;
  sandbox: boolean;
  /** A recurring checkout's startup fee, for PayHere's form: its first payment is `amount` + this. */
  startup_fee?: number;
}

/**
 * What a back office reads of an order besides its state (docs/contract.md "What an order keeps"). The
 * merchant sees all of it; the order's own customer all but the merchant's `metadata` (null to it);
 * nobody else sees the order at all.
 */
export interface OrderDetailsView {
  custom_1: string | null;
  custom_2: string | null;
  item_list: LineItem[] | null;
  customer_details: CustomerDetails | null;
  metadata: Record<string, string> | null;
  /** A recurring order's startup fee, paid once with its first payment. */
  startup_fee: number | null;
  /** A recurring order's next installment date (`YYYY-MM-DD`), as PayHere's notification of its last one said. */
  next_installment: string | null;
}

/** The order as the ledger knows it, for its owner or the merchant (docs/contract.md "getCheckout"). */
export interface CheckoutView extends OrderDetailsView {
  order_id: string;
  kind: Order['kind'];
  status: Order['state'];
  items: string;
  currency: string;
  amount: number | null;
  payment_id: number | string | null;
  customer_token: string | null;
  authorization_token: string | null;
  subscription_id: number | string | null;
  card: Order['card'];
  /** A hold's: its token proven (true) or known only from a notification (false); null otherwise. */
  verified: boolean | null;
  /**
   * Payments of the order PayHere holds besides `payment_id`, no charge of the service owns: the
   * order may have been paid twice (the merchant checks them in PayHere's portal and refunds).
   */
  duplicate_payment_ids: string[];
  updated_at: string;
}

export interface CheckoutInput {
  actor: Actor;
  /** The order's owner: the caller, or the customer a merchant acts for. */
  owner: string;
  body: CheckoutRequest;
  /** The API's base URL as this request reached it: the notify_url when PUBLIC_BASE_URL is unset. */
  apiBaseUrl: string;
}

/** Kinds a customer may create while the merchant sets prices: only saving its own card. */
const CUSTOMER_KINDS_MERCHANT_PRICED: readonly Order['kind'][] = ['preapproval'];

const upperMd5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex').toUpperCase();

/** PayHere's checkout hash: UPPER(MD5(merchant_id + order_id + amount + currency + UPPER(MD5(secret)))). */
export function checkoutHash(fields: {
  merchantId: string;
  merchantSecret: string;
  orderId: string;
  amountCents: number | null;
  currency: string;
}): string {
  // A pre-approval created without an amount is signed over 0.00 (docs/app.md: an assumption).
  const amount = ((fields.amountCents ?? 0) / 100).toFixed(2);
  return upperMd5(
    fields.merchantId + fields.orderId + amount + fields.currency + upperMd5(fields.merchantSecret),
  );
}

export class Checkouts {
  readonly #ledger: LedgerStore;
  readonly #ownership: Ownership;
  readonly #credentials: CredentialsProvider;
  readonly #config: OrdersConfig;
  readonly #attempts: AttemptWindows;
  readonly #sandbox: boolean;
  readonly #refresh: (order: Order, deadline: number) => Promise<Order>;

  constructor(options: {
    ledger: LedgerStore;
    credentials: CredentialsProvider;
    config: OrdersConfig;
    /** Whether the merchant id belongs to PayHere's sandbox (anything but live PayHere). */
    sandbox: boolean;
    /** The order as PayHere's records show it now (lib/orders/confirmations.ts). */
    refresh: (order: Order, deadline: number) => Promise<Order>;
  }) {
    this.#refresh = options.refresh;
    this.#ledger = options.ledger;
    this.#ownership = new Ownership(options.ledger);
    this.#credentials = options.credentials;
    this.#config = options.config;
    this.#attempts = new AttemptWindows(options.config.failedAttempts.windowMs);
    this.#sandbox = options.sandbox;
  }

  /**
   * Card testing through pre-approvals: a customer whose pre-approvals failed ORDER_FAILED_ATTEMPTS
   * times in the window's span (counted by lib/notifications/receiver.ts, lib/orders/attempts.ts)
   * gets no new one until they fall out of it, whoever asks for it, as an order refuses charges
   * after too many declined ones.
   */
  async #refuseCardTesting(owner: string): Promise<void> {
    const { count } = this.#config.failedAttempts;
    const failed = await readLedger(() => this.#ledger.failedPreapprovals(owner));
    if ((failed[this.#attempts.current()] ?? 0) < count) return;
    countMetric('CardTesting');
    log.warn('a customer was refused a pre-approval after too many failed ones (card testing?)', {
      owner,
    });
    throw new CallerRateLimitedError(
      'Too many cards were declined for this customer: try again later.',
      this.#attempts.retryAfterSeconds(failed, count),
    );
  }

  /** Record the order and answer the SDK's parameters; `created` is false for a repeat of the same order. */
  async create(input: CheckoutInput): Promise<{ created: boolean; data: CheckoutParameters }> {
    const { actor, body } = input;
    if (actor.role === 'customer') {
      if (this.#config.pricing === 'merchant' && !CUSTOMER_KINDS_MERCHANT_PRICED.includes(body.kind)) {
        throw new ForbiddenError(
          `Only the merchant creates ${body.kind} checkouts; a customer may create a preapproval checkout.`,
        );
      }
      // Order ids are global at PayHere: letting a customer choose one would tell it whether
      // another customer's order has that id.
      if (body.order_id !== undefined) {
        throw new InvalidRequestError([
          { path: 'order_id', message: 'is assigned by the service for customers: leave it out' },
        ]);
      }
    }
    if (actor.role === 'customer' && body.metadata !== undefined) throw metadataRefused();
    if (body.kind === 'preapproval') await this.#refuseCardTesting(input.owner);
    const order: NewOrder = {
      orderId: body.order_id ?? `ORD-${randomUUID()}`,
      owner: input.owner,
      kind: body.kind,
      items: body.items,
      currency: body.currency,
      amountCents: body.amount === undefined ? null : Math.round(body.amount * 100),
      custom1: body.custom_1 ?? null,
      custom2: body.custom_2 ?? null,
      lineItems: body.itemList ?? null,
      customerDetails: body.customer_details ?? null,
      metadata: body.metadata ?? null,
      recurrence: body.recurrence ?? null,
      duration: body.duration ?? null,
      startupFeeCents: body.startup_fee === undefined ? null : Math.round(body.startup_fee * 100),
      customerToken: null,
      authorizationToken: null,
      subscriptionId: null,
      card: null,
    };
    // The secret first: nothing is recorded for a checkout the service cannot sign.
    const credentials = await this.#credentials.get();
    const written = await readLedger(() => this.#ledger.createOrder(order));
    if ('existing' in written) refuseUnlessSame(order, written.existing);
    return {
      created: 'created' in written,
      data: {
        order_id: order.orderId,
        kind: order.kind,
        items: order.items,
        currency: order.currency,
        amount: order.amountCents === null ? null : order.amountCents / 100,
        merchant_id: credentials.merchantId,
        notify_url: (this.#config.publicBaseUrl ?? input.apiBaseUrl) + NOTIFY_PATH,
        hash: checkoutHash({
          ...credentials,
          orderId: order.orderId,
          amountCents: order.amountCents,
          currency: order.currency,
        }),
        sandbox: this.#sandbox,
        ...(order.recurrence === null ? {} : { recurrence: order.recurrence }),
        ...(order.duration === null ? {} : { duration: order.duration }),
        ...(order.startupFeeCents === null ? {} : { startup_fee: order.startupFeeCents / 100 }),
      },
    };
  }

  async view(actor: Actor, orderId: string, deadline: number): Promise<CheckoutView> {
    const order = await this.#ownership.order(
      actor,
      orderId,
      () => new NotFoundError(`Order ${orderId} was not found.`),
    );
    let current = order;
    try {
      current = await this.#refresh(order, deadline);
    } catch (error) {
      // What the ledger knows is still the truth as far as it goes: shown, not replaced by a 5xx.
      log.warn('could not refresh an order from the gateway', { orderId, error: describeError(error) });
    }
    return checkoutView(current, actor);
  }
}

/** The same owner and fields answer the same data; anything else is a conflict naming what differs. */
function refuseUnlessSame(wanted: NewOrder, existing: Order | undefined): void {
  const conflict = `Order ${wanted.orderId} already exists`;
  if (!existing || existing.owner !== wanted.owner) {
    throw new OrderConflictError(`${conflict}; choose another order_id or leave it out.`, [
      { path: 'order_id', message: 'is already used by another order' },
    ]);
  }
  const fields = {
    kind: 'kind',
    items: 'items',
    currency: 'currency',
    amountCents: 'amount',
    custom1: 'custom_1',
    custom2: 'custom_2',
    recurrence: 'recurrence',
    duration: 'duration',
  } as const;
  const kept = {
    lineItems: 'itemList',
    customerDetails: 'customer_details',
    metadata: 'metadata',
    startupFeeCents: 'startup_fee',
  } as const;
  const errors = [
    ...(Object.keys(fields) as (keyof typeof fields)[])
      .filter((field) => existing[field] !== wanted[field])
      .map((field) => fields[field]),
    ...(Object.keys(kept) as (keyof typeof kept)[])
      .filter((field) => canonical(existing[field]) !== canonical(wanted[field]))
      .map((field) => kept[field]),
  ].map((path) => ({ path, message: 'differs from the existing order' }));
  if (errors.length > 0) {
    throw new OrderConflictError(`${conflict} with other ${errors.map((e) => e.path).join(', ')}.`, errors);
  }
}

/** A value as JSON with every object's keys sorted: the same fields given in another order are the same. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_, inner: unknown) =>
    inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

/** PayHere's ids are 12-digit numbers: shown as numbers, as PayHere shows them. */
export function gatewayId(id: string | null): number | string | null {
  if (id === null) return null;
  return /^[0-9]+$/.test(id) && Number.isSafeInteger(Number(id)) ? Number(id) : id;
}

/** An order's back-office fields as `actor` (its owner or the merchant) may see them. */
export function detailsView(order: Order, actor: Actor): OrderDetailsView {
  return {
    custom_1: order.custom1,
    custom_2: order.custom2,
    item_list: order.lineItems,
    customer_details: order.customerDetails,
    metadata: actor.role === 'merchant' ? order.metadata : null,
    startup_fee: order.startupFeeCents === null ? null : order.startupFeeCents / 100,
    next_installment: order.nextInstallment,
  };
}

export function checkoutView(order: Order, actor: Actor): CheckoutView {
  const succeeded = order.state === 'succeeded';
  // A charge in flight is not final yet, whatever the order's last state was.
  const status = order.charge?.inflight ? 'pending' : order.state;
  return {
    order_id: order.orderId,
    kind: order.kind,
    status,
    items: order.items,
    currency: order.currency,
    amount: order.amountCents === null ? null : order.amountCents / 100,
    payment_id: gatewayId(order.paymentId),
    customer_token: succeeded && order.kind === 'preapproval' ? order.customerToken : null,
    authorization_token: succeeded ? order.authorizationToken : null,
    subscription_id: order.kind === 'recurring' ? gatewayId(order.subscriptionId) : null,
    card: order.card,
    verified:
      order.kind === 'authorize' && order.authorizationToken !== null ? order.holdVerified === true : null,
    duplicate_payment_ids: order.duplicatePayments,
    ...detailsView(order, actor),
    updated_at: new Date(order.updatedAt).toISOString(),
  };
}
