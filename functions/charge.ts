import { paymentOutcomeResponse } from '#lib/envelope/payment-outcome.ts';
import { type PayHere, payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { ChargeRequest } from '#lib/schemas/charge.ts';

const payhere = payHereFromEnvironment();
const store = idempotencyStoreFromEnvironment();

// An AUTHORIZE hold may come back as 3, as PayHere's authorization notifications use.
const chargeAnswer = (body: ChargeRequest, { msg, data }: Awaited<ReturnType<PayHere['charge']>>) =>
  paymentOutcomeResponse(data, msg, body.type === 'AUTHORIZE' ? [2, 3] : [2]);

/**
 * POST /gateway/api/payments/charge: charge (PAYMENT) or hold (AUTHORIZE) a pre-approved customer.
 * PayHere does not deduplicate: a repeat with the same Idempotency-Key never charges again, and
 * a charge whose outcome is unknown is settled from the order's payments.
 */
export const handler = route(
  {
    scope: 'payments:write',
    body: ChargeRequest,
    idempotency: {
      operation: 'charge',
      store,
      reconcile: async ({ body, deadline }, startedAt) =>
        chargeAnswer(body, await payhere.reconcileCharge(body, startedAt, deadline)),
    },
  },
  async ({ body, deadline }) => chargeAnswer(body, await payhere.charge(body, deadline)),
);
