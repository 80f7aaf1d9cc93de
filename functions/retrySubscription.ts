import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { MAX_UPSTREAM_MS } from '#lib/orders/charge.ts';
import { ownershipFromEnvironment } from '#lib/orders/environment.ts';
import { sharedReadStoreFromEnvironment } from '#lib/reads/environment.ts';
import { thenForget } from '#lib/reads/invalidation.ts';
import { SubscriptionPath } from '#lib/schemas/paths.ts';

const payhere = payHereFromEnvironment();
const ownership = ownershipFromEnvironment();
const store = idempotencyStoreFromEnvironment();
const sharedReads = sharedReadStoreFromEnvironment();

/**
 * POST /gateway/api/subscriptions/{id}/retry: charge a failed subscription's installment again,
 * now, once per Idempotency-Key.
 */
export const handler = route(
  {
    name: 'retrySubscription',
    scope: 'subscriptions:write',
    path: SubscriptionPath,
    audit: ({ path }) => ({ subscriptionId: String(Number(path.id)) }),
    idempotency: {
      operation: 'retrySubscription',
      store,
      // As PayHere receives it: 0420075032251 is 420075032251.
      upstream: ({ path }) => ({ subscription_id: Number(path.id) }),
      // A lost answer, repeated: the subscription's payments show a new one if the card was charged.
      reconcile: async ({ path, deadline }, startedAt) => {
        const window = { sentAt: startedAt, until: startedAt + MAX_UPSTREAM_MS };
        const { msg, data } = await payhere.reconcileRetry(path.id, window, deadline);
        return ok(msg, data);
      },
    },
  },
  async ({ path, caller, deadline }) => {
    await ownership.requireSubscription(caller, path.id);
    const { msg, data } = await thenForget(
      () => payhere.retrySubscription(path.id, deadline),
      () => sharedReads.forgetSubscription(path.id),
    );
    return ok(msg, data);
  },
);
