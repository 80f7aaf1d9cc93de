import { ok } from '#lib/envelope/envelope.ts';
import { route } from '#lib/http/route.ts';
import { checkoutsFromEnvironment } from '#lib/orders/from-environment.ts';
import { CheckoutPath } from '#lib/schemas/paths.ts';

const checkouts = checkoutsFromEnvironment();

/**
 * GET /gateway/api/checkouts/{order_id}: an order as the ledger knows it, to its owner or the
 * merchant, checked with PayHere's records while it is not final.
 */
export const handler = route(
  { name: 'getCheckout', scope: 'payments:read', path: CheckoutPath },
  async ({ path, caller, deadline }) =>
    ok(`Order ${path.order_id}`, await checkouts.view(caller, path.order_id, deadline)),
);
