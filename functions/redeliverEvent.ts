import { ok } from '#lib/envelope/envelope.ts';
import { route } from '#lib/http/route.ts';
import { EventPath, RedeliverQuery } from '#lib/schemas/webhooks.ts';
import { deliverSoon, webhookDeliveriesFromEnvironment } from '#lib/webhooks/from-environment.ts';

const deliveries = webhookDeliveriesFromEnvironment();

/**
 * POST /gateway/api/events/{id}/redeliver: the event due now to every endpoint, or to `endpoint`,
 * its attempts kept, a disabled endpoint enabled again; the merchant's only. The deliverer posts it
 * at its next run (locally, at once, after the answer).
 */
export const handler = route(
  { name: 'redeliverEvent', scope: 'payments:read', path: EventPath, query: RedeliverQuery },
  async ({ caller, path, query }) => {
    const redelivery = await deliveries.redeliver(caller, path.id, query.endpoint);
    void deliverSoon([path.id]);
    return ok(`Event ${path.id} is due for delivery to ${redelivery.endpoints.length} endpoints`, redelivery);
  },
);
