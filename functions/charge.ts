import { settleDelayMs } from '#lib/config/config.ts';
import type { ValidRequest } from '#lib/http/route.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { recordKey } from '#lib/idempotency/idempotent.ts';
import { fieldOf } from '#lib/log/audit.ts';
import { type ChargeAnswer, type ChargeInput, chargeResponse } from '#lib/orders/charge.ts';
import { chargingFromEnvironment } from '#lib/orders/environment.ts';
import { ChargeRequest } from '#lib/schemas/charge.ts';
import type { MoneySubject } from '#lib/settle/money.ts';

const charging = chargingFromEnvironment();
const store = idempotencyStoreFromEnvironment();
const delayMs = settleDelayMs(process.env);

type Charge = ValidRequest<ChargeRequest, undefined>;

const input = (request: Charge): ChargeInput => ({
  actor: request.caller,
  owner: request.owner,
  body: request.body,
  deadline: request.deadline,
  chargeKey: recordKey('charge', request.caller.sub, request.idempotencyKey!),
});

const answer = ({ body, caller }: Charge, charged: ChargeAnswer) =>
  chargeResponse(caller, body.type, charged);

/** What the settle job settles an unknown charge with. */
const subject = ({ caller, owner, body }: Charge): MoneySubject => ({
  operation: 'charge',
  role: caller.role,
  sub: caller.sub,
  owner,
  body,
});

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
      subject,
      reconcile: async (request, startedAt) =>
        answer(request, await charging.settle(input(request), startedAt, delayMs)),
    },
  },
  async (request) => answer(request, await charging.charge(input(request))),
);
