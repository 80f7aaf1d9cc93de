import { NotFoundError } from '#lib/envelope/errors.ts';
import { paymentOutcomeResponse } from '#lib/envelope/payment-outcome.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { visibleTo } from '#lib/orders/access.ts';
import { ownershipFromEnvironment } from '#lib/orders/environment.ts';
import { CaptureRequest, captureUpstreamBody } from '#lib/schemas/capture.ts';

const payhere = payHereFromEnvironment();
const ownership = ownershipFromEnvironment();
const store = idempotencyStoreFromEnvironment();

/** POST /gateway/api/payments/capture: capture (all or part of) an authorized hold, once per Idempotency-Key. */
export const handler = route(
  { scope: 'payments:capture', body: CaptureRequest, idempotency: { operation: 'capture', store } },
  async ({ body, caller, deadline }) => {
    await ownership.require(
      caller,
      'authorization',
      body.authorization_token,
      () => new NotFoundError('The authorization was not found.'),
    );
    const { msg, data } = await payhere.capture(captureUpstreamBody(body), deadline);
    return paymentOutcomeResponse(visibleTo(caller, data), msg, [2]);
  },
);
