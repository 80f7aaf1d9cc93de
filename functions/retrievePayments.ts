import { ok } from '#lib/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http.ts';
import { OrderPath } from '#lib/schemas.ts';

const payhere = payHereFromEnvironment();

/** GET /gateway/api/payments/{id}: the successful payments of an order. */
export const handler = route({ scope: 'payments:read', path: OrderPath }, async ({ path, deadline }) => {
  const { msg, data } = await payhere.paymentsOfOrder(path.id, deadline);
  return ok(msg, data);
});
