import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { SubscriptionPath } from '#lib/schemas/paths.ts';

const payhere = payHereFromEnvironment();

/** GET /gateway/api/subscriptions/{id}: one subscription. */
export const handler = route(
  { scope: 'subscriptions:read', path: SubscriptionPath },
  async ({ path, deadline }) => {
    const { msg, data } = await payhere.getSubscription(path.id, deadline);
    return ok(msg, data);
  },
);
