import { ok, respond } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { OrderPath } from '#lib/schemas/paths.ts';

const payhere = payHereFromEnvironment();

/** GET /gateway/api/payments/{id}: the successful payments of an order (202 while one is pending). */
export const handler = route({ scope: 'payments:read', path: OrderPath }, async ({ path, deadline }) => {
  const { msg, data, pending } = await payhere.paymentsOfOrder(path.id, deadline);
  return pending ? respond(202, { status: 0, msg, data }) : ok(msg, data);
});
