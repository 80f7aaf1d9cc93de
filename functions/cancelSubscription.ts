import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { SubscriptionPath } from '#lib/schemas/paths.ts';

const payhere = payHereFromEnvironment();

/** DELETE /gateway/api/subscriptions/{id}: stop a subscription. */
export const handler = route(
  { scope: 'subscriptions:write', path: SubscriptionPath },
  async ({ path, deadline }) => {
    const { msg, data } = await payhere.cancelSubscription(path.id, deadline);
    return ok(msg, data);
  },
);
