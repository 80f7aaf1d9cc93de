import { paymentOutcomeResponse } from '#lib/envelope/payment-outcome.ts';
import type { ValidRequest } from '#lib/http/route.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { recordKey } from '#lib/idempotency/idempotent.ts';
import { fieldOf } from '#lib/log/audit.ts';
import { visibleTo } from '#lib/orders/access.ts';
import type { ChargeAnswer, ChargeInput } from '#lib/orders/charge.ts';
import { chargingFromEnvironment } from '#lib/orders/environment.ts';
import { ChargeRequest } from '#lib/schemas/charge.ts';

const charging = chargingFromEnvironment();
const store = idempotencyStoreFromEnvironment();

type Charge = ValidRequest<ChargeRequest, undefined>;

const input = (request: Charge): ChargeInput => ({
  actor: request.caller,
  owner: request.owner,
  body: request.body,
  deadline: request.deadline,
  chargeKey: recordKey('charge', request.caller.sub, request.idempotencyKey!),
});

// An AUTHORIZE hold may come back as 3, as PayHere's authorization notifications use.
const answer = ({ body, caller }: Charge, { msg, data }: ChargeAnswer) =>
  paymentOutcomeResponse(visibleTo(caller, data), msg, body.type === 'AUTHORIZE' ? [2, 3] : [2]);

/**
 * POST /gateway/api/payments/charge: charge (PAYMENT) or hold (AUTHORIZE) a pre-approved customer.
 * A customer charges only its own saved card, at the price the merchant set for the order; an
 * order has at most one successful, pending or unknown payment. PayHere does not deduplicate: a
 * repeat with the same Idempotency-Key never charges again, and a charge whose outcome is unknown
 * is settled from the order's payments.
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
      reconcile: async (request, startedAt) =>
        answer(request, await charging.reconcile(input(request), startedAt)),
    },
  },
  async (request) => answer(request, await charging.charge(input(request))),
);
