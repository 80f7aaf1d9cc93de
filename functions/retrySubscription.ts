import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { ownershipFromEnvironment } from '#lib/orders/environment.ts';
import { sharedReadStoreFromEnvironment } from '#lib/reads/environment.ts';
import { thenForget } from '#lib/reads/invalidation.ts';
import { SubscriptionPath } from '#lib/schemas/paths.ts';
import { settleDepsFromEnvironment } from '#lib/settle/environment.ts';
import { settleRetry } from '#lib/settle/money.ts';

const payhere = payHereFromEnvironment();
const ownership = ownershipFromEnvironment();
const store = idempotencyStoreFromEnvironment();
const sharedReads = sharedReadStoreFromEnvironment();
const settling = settleDepsFromEnvironment(payhere);
/** As PayHere receives it: 0420075032251 is 420075032251. */
const subscriptionId = (id: string) => String(Number(id));

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
      upstream: ({ path }) => ({ subscription_id: Number(path.id) }),
      subject: ({ path, caller }) => ({
        operation: 'retrySubscription',
        role: caller.role,
        subscriptionId: subscriptionId(path.id),
      }),
      // A lost answer, repeated: the subscription's payments show a new one if the card was charged.
      reconcile: async ({ path, caller, deadline }, startedAt) =>
        settleRetry(
          settling,
          { operation: 'retrySubscription', role: caller.role, subscriptionId: subscriptionId(path.id) },
          { key: '', startedAt },
          deadline,
        ),
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
