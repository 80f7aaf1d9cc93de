import { respond } from '#lib/envelope/envelope.ts';
import { route } from '#lib/http/route.ts';
import { fieldOf } from '#lib/log/audit.ts';
import { checkoutsFromEnvironment } from '#lib/orders/from-environment.ts';
import { CheckoutRequest } from '#lib/schemas/checkout.ts';

const checkouts = checkoutsFromEnvironment();

/**
 * POST /gateway/api/checkouts: record an order and answer the parameters the app hands PayHere's
 * SDK or checkout (the hash signed with the merchant secret, which the app never holds). 201 for a
 * new order; 200 with the same data when the same order is created again.
 */
export const handler = route(
  {
    name: 'createCheckout',
    scope: 'payments:charge',
    body: CheckoutRequest,
    createsOrders: true,
    audit: ({ body, onBehalfOf }, data) => ({
      orderId: fieldOf(data, 'order_id') ?? body.order_id,
      kind: body.kind,
      amount: body.amount,
      currency: body.currency,
      onBehalfOf,
    }),
  },
  async ({ body, caller, owner, apiBaseUrl }) => {
    const { created, data } = await checkouts.create({
      actor: caller,
      owner,
      body,
      apiBaseUrl: apiBaseUrl(),
    });
    return respond(created ? 201 : 200, {
      status: 1,
      msg: created ? 'Checkout created' : 'Checkout already exists',
      data,
    });
  },
);
