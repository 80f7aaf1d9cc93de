// First: PayHere's connection opens while the rest loads (lib/gateway/connect-at-start.ts).
import '#lib/gateway/connect-at-start.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/from-environment.ts';
import { fieldOf } from '#lib/log/audit.ts';
import { capturesFromEnvironment } from '#lib/orders/from-environment.ts';
import { CaptureRequest, captureUpstreamBody } from '#lib/schemas/capture.ts';

const captures = capturesFromEnvironment(payHereFromEnvironment());
const store = idempotencyStoreFromEnvironment();

/** POST /gateway/api/payments/capture: capture (all or part of) an authorized hold, once per Idempotency-Key. */
export const handler = route(
  {
    name: 'capture',
    scope: 'payments:capture',
    body: CaptureRequest,
    // The hold's token is a secret: the answer names the order and the captured payment.
    audit: ({ body }, data) => ({
      orderId: fieldOf(data, 'order_id'),
      paymentId: fieldOf(data, 'payment_id'),
      amount: body.amount,
      currency: fieldOf(data, 'currency'),
    }),
    idempotency: {
      operation: 'capture',
      store,
      upstream: ({ body }) => captureUpstreamBody(body),
      subject: (request) => captures.subject(request),
      // A lost answer, repeated: settled from the hold's order's payments.
      reconcile: (request, startedAt) => captures.settle(request, startedAt),
    },
  },
  (request) => captures.capture(request),
);
