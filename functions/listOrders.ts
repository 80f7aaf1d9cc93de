import { ok } from '#lib/envelope/envelope.ts';
import { route } from '#lib/http/route.ts';
import { orderListsFromEnvironment } from '#lib/orders/from-environment.ts';
import { OrdersQuery } from '#lib/schemas/orders.ts';

const lists = orderListsFromEnvironment();

/**
 * GET /gateway/api/orders: orders newest first, a page at a time, from the ledger's indexes: every
 * order to the merchant, a customer's own to a customer. Filters: status, customer, kind, created_from,
 * created_to; `cursor` is the last page's next_cursor.
 */
export const handler = route(
  { name: 'listOrders', scope: 'payments:read', query: OrdersQuery },
  async ({ caller, query }) => {
    const list = await lists.list(caller, query);
    return ok(`Found ${list.orders.length} orders`, list);
  },
);
