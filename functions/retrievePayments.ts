// First: PayHere's connection opens while the rest loads (lib/gateway/connect-at-start.ts).
import '#lib/gateway/connect-at-start.ts';
import { ok, respond } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { visibleTo } from '#lib/orders/access.ts';
import { orderPaymentsFromEnvironment } from '#lib/orders/from-environment.ts';
import { ageHeaders } from '#lib/reads/shared-reads.ts';
import { OrderPath } from '#lib/schemas/paths.ts';

const payments = orderPaymentsFromEnvironment(payHereFromEnvironment());

/**
 * GET /gateway/api/payments/{id}: the successful payments of an order (202 while one is pending),
 * with `Age` when answered from data shared earlier.
 */
export const handler = route(
  { name: 'retrievePayments', scope: 'payments:read', path: OrderPath },
  async ({ path, caller, deadline }) => {
    const served = await payments.read(caller, path.id, deadline);
    const { msg, data, pending } = served.answer;
    const visible = visibleTo(caller, data);
    return pending ? respond(202, { status: 0, msg, data: visible }) : ok(msg, visible, ageHeaders(served));
  },
);
