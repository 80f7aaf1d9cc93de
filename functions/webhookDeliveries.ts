import { ok } from '#lib/envelope/envelope.ts';
import { route } from '#lib/http/route.ts';
import { DeliveriesQuery } from '#lib/schemas/webhooks.ts';
import { webhookDeliveriesFromEnvironment } from '#lib/webhooks/from-environment.ts';

const deliveries = webhookDeliveriesFromEnvironment();

/**
 * GET /gateway/api/webhooks/deliveries: each webhook delivery (attempts, status, last error), newest
 * event first, a page at a time, from the events table; the merchant's only. Filters: endpoint,
 * status; `cursor` is the last page's next_cursor.
 */
export const handler = route(
  { name: 'webhookDeliveries', scope: 'payments:read', query: DeliveriesQuery },
  async ({ caller, query }) => {
    const list = await deliveries.list(caller, query);
    return ok(`Found ${list.deliveries.length} deliveries`, list);
  },
);
