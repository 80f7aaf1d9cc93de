import { createHash } from 'node:crypto';
import { InvalidRequestError } from '../envelope/errors.ts';
import type { OrderKind, OrderState } from '../ledger/model.ts';
import type { ListedOrder as LedgerListedOrder, LedgerStore, OrderListQuery } from '../ledger/store.ts';
import { DEFAULT_PAGE, type OrdersQuery } from '../schemas/orders.ts';
import { type Actor, readLedger } from './access.ts';
import { detailsView, gatewayId, type OrderDetailsView } from './checkout.ts';

/** One order as a list shows it: its back-office fields but its line items (getCheckout shows those). */
export interface ListedOrder extends Omit<OrderDetailsView, 'item_list'> {
  order_id: string;
  kind: OrderKind;
  status: OrderState;
  /** A charge of the order is in flight: not final yet, whatever `status` says (getCheckout shows it `pending`). */
  charge_in_flight: boolean;
  customer: string;
  items: string;
  currency: string;
  amount: number | null;
  payment_id: number | string | null;
  subscription_id: number | string | null;
  created_at: string;
  updated_at: string;
}

export interface OrderList {
  orders: ListedOrder[];
  /** Pass as `cursor` for the next page; null on the last one. */
  next_cursor: string | null;
}

/**
 * The order lists (GET /gateway/api/orders): newest first, from the ledger's indexes only, never
 * PayHere. The merchant lists every order; a customer only its own, whatever it asks: its lists are
 * read from its own partition of the owners' index, so no filter or cursor can reach another's.
 * A customer naming another customer gets an empty list, as if that customer had no orders.
 *
 * A cursor is opaque to callers: the position the last page ended at, with a digest of the query and
 * caller it was made for. One malformed, or used with other filters or by another caller, is refused
 * (400). The digest is not a signature (no function of the lists holds a key): a cursor made by hand
 * may name any position, but only moves within the caller's own list.
 */
export class OrderLists {
  readonly #ledger: LedgerStore;

  constructor(ledger: LedgerStore) {
    this.#ledger = ledger;
  }

  async list(actor: Actor, query: OrdersQuery): Promise<OrderList> {
    const limit = query.limit === undefined ? DEFAULT_PAGE : Number(query.limit);
    if (actor.role === 'customer' && query.customer !== undefined && query.customer !== actor.sub)
      return { orders: [], next_cursor: null };
    const binding = bindingOf(actor, query);
    const after = query.cursor === undefined ? undefined : positionOf(query.cursor, binding);
    const createdFrom = timeOf(query.created_from);
    const createdBefore = timeOf(query.created_to);
    const owner = actor.role === 'customer' ? actor.sub : query.customer;
    const list: OrderListQuery = {
      // The narrowest index that answers the query: one customer's orders, one state's, or every order.
      source:
        owner !== undefined
          ? { owner }
          : query.status !== undefined
            ? { state: query.status }
            : { all: true },
      ...(owner !== undefined && query.status !== undefined ? { state: query.status } : {}),
      ...(query.kind === undefined ? {} : { kind: query.kind }),
      ...(createdFrom === undefined ? {} : { createdFrom }),
      ...(createdBefore === undefined ? {} : { createdBefore }),
      ...(after === undefined ? {} : { after }),
      limit,
    };
    const page = await readLedger(() => this.#ledger.listOrders(list));
    return {
      orders: page.orders.map((order) => listed(order, actor)),
      next_cursor: page.next === null ? null : cursorOf(page.next, binding),
    };
  }
}

function timeOf(value: string | undefined): number | undefined {
  return value === undefined ? undefined : Date.parse(value);
}

function listed(order: LedgerListedOrder, actor: Actor): ListedOrder {
  const { item_list: _lines, ...details } = detailsView(order, actor);
  return {
    order_id: order.orderId,
    kind: order.kind,
    // The ledger's state, as the `status` filter reads it; a charge in flight is said apart.
    status: order.state,
    charge_in_flight: order.chargeInFlight,
    customer: order.owner,
    items: order.items,
    currency: order.currency,
    amount: order.amountCents === null ? null : order.amountCents / 100,
    payment_id: gatewayId(order.paymentId),
    subscription_id: order.kind === 'recurring' ? gatewayId(order.subscriptionId) : null,
    ...details,
    created_at: new Date(order.createdAt).toISOString(),
    updated_at: new Date(order.updatedAt).toISOString(),
  };
}

/** What a cursor is bound to: the caller and every filter of the query (not the page size). */
function bindingOf(actor: Actor, query: OrdersQuery): string {
  const { status, customer, kind, created_from, created_to } = query;
  return createHash('sha256')
    .update(JSON.stringify([actor.role, actor.sub, status, customer, kind, created_from, created_to]))
    .digest('base64url')
    .slice(0, 22);
}

function cursorOf(position: string, binding: string): string {
  return Buffer.from(JSON.stringify({ p: position, b: binding })).toString('base64url');
}

/** A position a list may start after: an order's (15 digits, `#`, its id). */
const POSITION = /^[0-9]{15}#[\x20-\x7E]{1,64}$/;

function positionOf(cursor: string, binding: string): string {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  const { p, b } = (decoded ?? {}) as { p?: unknown; b?: unknown };
  if (typeof p !== 'string' || !POSITION.test(p) || b !== binding) {
    throw new InvalidRequestError([
      {
        path: 'query.cursor',
        message: 'must be the next_cursor of the last page of this same list (same filters, same caller)',
      },
    ]);
  }
  return p;
}
