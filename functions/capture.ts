import { paymentOutcomeResponse } from '#lib/envelope/payment-outcome.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { CaptureRequest, captureUpstreamBody } from '#lib/schemas/capture.ts';

const payhere = payHereFromEnvironment();
const store = idempotencyStoreFromEnvironment();

/** POST /gateway/api/payments/capture: capture (all or part of) an authorized hold, once per Idempotency-Key. */
export const handler = route(
  { scope: 'payments:write', body: CaptureRequest, idempotency: { operation: 'capture', store } },
  async ({ body, deadline }) => {
    const { msg, data } = await payhere.capture(captureUpstreamBody(body), deadline);
    return paymentOutcomeResponse(data, msg, [2]);
  },
);
