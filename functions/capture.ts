import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http.ts';
import { paymentOutcomeResponse } from '#lib/payment-outcome.ts';
import { CaptureRequest, captureUpstreamBody } from '#lib/schemas.ts';

const payhere = payHereFromEnvironment();

/** POST /gateway/api/payments/capture: capture (all or part of) an authorized hold. */
export const handler = route({ body: CaptureRequest }, async ({ body, deadline }) => {
  const { msg, data } = await payhere.capture(captureUpstreamBody(body), deadline);
  return paymentOutcomeResponse(data, msg, [2]);
});
