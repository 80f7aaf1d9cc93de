import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { ownershipFromEnvironment } from '#lib/orders/environment.ts';
import { SubscriptionPath } from '#lib/schemas/paths.ts';

const payhere = payHereFromEnvironment();
const ownership = ownershipFromEnvironment();

/** DELETE /gateway/api/subscriptions/{id}: stop a subscription. */
export const handler = route(
  {
    name: 'cancelSubscription',
    scope: 'subscriptions:write',
    path: SubscriptionPath,
    audit: ({ path }) => ({ subscriptionId: String(Number(path.id)) }),
  },
  async ({ path, caller, deadline }) => {
    await ownership.requireSubscription(caller, path.id);
    const { msg, data } = await payhere.cancelSubscription(path.id, deadline);
    return ok(msg, data);
  },
);
