import { ok } from '#lib/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http.ts';
import { SubscriptionPath } from '#lib/schemas.ts';

const payhere = payHereFromEnvironment();

/** POST /gateway/api/subscriptions/{id}/retry: charge a failed subscription's installment again, now. */
export const handler = route({ path: SubscriptionPath }, async ({ path, deadline }) => {
  const { msg, data } = await payhere.retrySubscription(path.id, deadline);
  return ok(msg, data);
});
