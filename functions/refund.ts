import { ok } from '#lib/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http.ts';
import { RefundRequest, refundUpstreamBody } from '#lib/schemas.ts';

const payhere = payHereFromEnvironment();

/** POST /gateway/api/payments/refund: refund a payment (fully or partly) or release a hold. */
export const handler = route({ body: RefundRequest }, async ({ body, deadline }) => {
  const { msg, data } = await payhere.refund(refundUpstreamBody(body), deadline);
  return ok(msg, data);
});
