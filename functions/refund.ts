import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { RefundRequest, refundUpstreamBody } from '#lib/schemas/refund.ts';

const payhere = payHereFromEnvironment();
const store = idempotencyStoreFromEnvironment();

/** POST /gateway/api/payments/refund: refund a payment (fully or partly) or release a hold, once per Idempotency-Key. */
export const handler = route(
  { scope: 'payments:write', body: RefundRequest, idempotency: { operation: 'refund', store } },
  async ({ body, deadline }) => {
    const { msg, data } = await payhere.refund(refundUpstreamBody(body), deadline);
    return ok(msg, data);
  },
);
