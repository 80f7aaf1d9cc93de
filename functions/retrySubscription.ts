import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { ownershipFromEnvironment } from '#lib/orders/environment.ts';
import { SubscriptionPath } from '#lib/schemas/paths.ts';

const payhere = payHereFromEnvironment();
const ownership = ownershipFromEnvironment();
const store = idempotencyStoreFromEnvironment();

/**
 * POST /gateway/api/subscriptions/{id}/retry: charge a failed subscription's installment again,
 * now, once per Idempotency-Key.
 */
export const handler = route(
  {
    scope: 'subscriptions:write',
    path: SubscriptionPath,
    idempotency: { operation: 'retrySubscription', store },
  },
  async ({ path, caller, deadline }) => {
    await ownership.requireSubscription(caller, path.id);
    const { msg, data } = await payhere.retrySubscription(path.id, deadline);
    return ok(msg, data);
  },
);
