import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { visibleTo } from '#lib/orders/access.ts';
import { ownershipFromEnvironment } from '#lib/orders/environment.ts';
import { SubscriptionPath } from '#lib/schemas/paths.ts';

const payhere = payHereFromEnvironment();
const ownership = ownershipFromEnvironment();

/** GET /gateway/api/subscriptions/{id}/payments: the payments of one subscription. */
export const handler = route(
  { name: 'subscriptionPayments', scope: 'subscriptions:read', path: SubscriptionPath },
  async ({ path, caller, deadline }) => {
    await ownership.requireSubscription(caller, path.id);
    const { msg, data } = await payhere.subscriptionPayments(path.id, deadline);
    return ok(msg, visibleTo(caller, data));
  },
);
