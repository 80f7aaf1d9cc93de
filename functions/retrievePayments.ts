import { ok, respond } from '#lib/envelope/envelope.ts';
import { NotFoundError } from '#lib/envelope/errors.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { visibleTo } from '#lib/orders/access.ts';
import { ownershipFromEnvironment } from '#lib/orders/environment.ts';
import { OrderPath } from '#lib/schemas/paths.ts';

const payhere = payHereFromEnvironment();
const ownership = ownershipFromEnvironment();

/** GET /gateway/api/payments/{id}: the successful payments of an order (202 while one is pending). */
export const handler = route(
  { name: 'retrievePayments', scope: 'payments:read', path: OrderPath },
  async ({ path, caller, deadline }) => {
    await ownership.requireOrder(
      caller,
      path.id,
      () => new NotFoundError(`No payments were found for order ${path.id}.`),
    );
    const { msg, data, pending } = await payhere.paymentsOfOrder(path.id, deadline);
    const visible = visibleTo(caller, data);
    return pending ? respond(202, { status: 0, msg, data: visible }) : ok(msg, visible);
  },
);
