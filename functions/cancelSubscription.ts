// First: PayHere's connection opens while the rest loads (lib/gateway/connect-at-start.ts).
import '#lib/gateway/connect-at-start.ts';
import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/from-environment.ts';
import { subscriptionCancelsFromEnvironment } from '#lib/orders/from-environment.ts';
import { SubscriptionPath } from '#lib/schemas/paths.ts';

const cancels = subscriptionCancelsFromEnvironment(payHereFromEnvironment());
const store = idempotencyStoreFromEnvironment();

/**
 * DELETE /gateway/api/subscriptions/{id}: stop a subscription. A subscription already cancelled or
 * completed is answered 409 without PayHere. An Idempotency-Key is optional: with one, a repeat is
 * answered from the store, and one whose outcome was unknown is settled from the subscription's state.
 */
export const handler = route(
  {
    name: 'cancelSubscription',
    scope: 'subscriptions:write',
    path: SubscriptionPath,
    audit: ({ path }) => ({ subscriptionId: String(Number(path.id)) }),
    idempotency: {
      operation: 'cancelSubscription',
      store,
      optional: true,
      // As PayHere receives it: 0420075032251 is 420075032251.
      upstream: ({ path }) => ({ subscription_id: Number(path.id) }),
      subject: ({ path, caller }) => cancels.subject(caller, path.id),
      // A lost answer, repeated: settled from the subscription's state.
      reconcile: ({ path, caller, deadline }, startedAt) =>
        cancels.settle(caller, path.id, startedAt, deadline),
    },
  },
  async ({ path, caller, deadline }) => {
    const { msg, data } = await cancels.cancel(caller, path.id, deadline);
    return ok(msg, data);
  },
);
