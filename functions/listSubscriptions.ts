import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';

const payhere = payHereFromEnvironment();

/** GET /gateway/api/subscriptions: every subscription of the merchant. */
export const handler = route({ scope: 'subscriptions:read' }, async ({ deadline }) => {
  const { msg, data } = await payhere.listSubscriptions(deadline);
  return ok(msg, data);
});
