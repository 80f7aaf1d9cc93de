import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { ownershipFromEnvironment } from '#lib/orders/environment.ts';
import { sharedReadStoreFromEnvironment } from '#lib/reads/environment.ts';
import { thenForget } from '#lib/reads/invalidation.ts';
import { SubscriptionPath } from '#lib/schemas/paths.ts';

const payhere = payHereFromEnvironment();
const ownership = ownershipFromEnvironment();
const sharedReads = sharedReadStoreFromEnvironment();

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
    const { msg, data } = await thenForget(
      () => payhere.cancelSubscription(path.id, deadline),
      () => sharedReads.forgetSubscription(path.id),
    );
    return ok(msg, data);
  },
);
