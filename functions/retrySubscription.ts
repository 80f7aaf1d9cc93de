// First: PayHere's connection opens while the rest loads (lib/gateway/connect-at-start.ts).
import '#lib/gateway/connect-at-start.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/from-environment.ts';
import { subscriptionRetriesFromEnvironment } from '#lib/orders/from-environment.ts';
import { SubscriptionPath } from '#lib/schemas/paths.ts';

const retries = subscriptionRetriesFromEnvironment(payHereFromEnvironment());
const store = idempotencyStoreFromEnvironment();

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
      subject: ({ path, caller, deadline }) => retries.subject({ caller, id: path.id, deadline }),
      // A lost answer, repeated: settled from the subscription's payments.
      reconcile: ({ path, caller, deadline }, startedAt) =>
        retries.settle({ caller, id: path.id, deadline }, startedAt),
    },
  },
  ({ path, caller, deadline }) => retries.retry({ caller, id: path.id, deadline }),
);
