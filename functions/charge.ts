// First: PayHere's connection opens while the rest loads (lib/gateway/connect-at-start.ts).
import '#lib/gateway/connect-at-start.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/from-environment.ts';
import { fieldOf } from '#lib/log/audit.ts';
import { chargesFromEnvironment } from '#lib/orders/from-environment.ts';
import { ChargeRequest } from '#lib/schemas/charge.ts';

const charges = chargesFromEnvironment();
const store = idempotencyStoreFromEnvironment();

/**
 * POST /gateway/api/payments/charge: charge (PAYMENT) or hold (AUTHORIZE) a pre-approved customer.
 * A customer charges only its own saved card, at the price the merchant set for the order; an
 * order has at most one successful, pending or unknown payment. PayHere does not deduplicate: a
 * repeat with the same Idempotency-Key never charges again, and a charge whose outcome is unknown
 * is settled from PayHere's records (on a repeat, or by the settle job).
 */
export const handler = route(
  {
    name: 'charge',
    scope: 'payments:charge',
    body: ChargeRequest,
    createsOrders: true,
    audit: ({ body, onBehalfOf }, data) => ({
      orderId: body.order_id,
      paymentId: fieldOf(data, 'payment_id'),
      kind: body.type,
      amount: body.amount,
      currency: body.currency,
      onBehalfOf,
    }),
    idempotency: {
      operation: 'charge',
      store,
      subject: (request) => charges.subject(request),
      reconcile: (request, startedAt) => charges.settle(request, startedAt),
    },
  },
  (request) => charges.charge(request),
);
