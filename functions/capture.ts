import { NotFoundError } from '#lib/envelope/errors.ts';
import { paymentOutcomeResponse } from '#lib/envelope/payment-outcome.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route, type ValidRequest } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { fieldOf } from '#lib/log/audit.ts';
import { visibleTo } from '#lib/orders/access.ts';
import { holdsFromEnvironment, ownershipFromEnvironment } from '#lib/orders/environment.ts';
import { sharedReadStoreFromEnvironment } from '#lib/reads/environment.ts';
import { thenForget } from '#lib/reads/invalidation.ts';
import { CaptureRequest, captureUpstreamBody } from '#lib/schemas/capture.ts';
import { settleDepsFromEnvironment } from '#lib/settle/environment.ts';
import { type MoneySubject, settleCapture } from '#lib/settle/money.ts';

const payhere = payHereFromEnvironment();
const ownership = ownershipFromEnvironment();
const store = idempotencyStoreFromEnvironment();
const sharedReads = sharedReadStoreFromEnvironment();
const holds = holdsFromEnvironment();
const settling = settleDepsFromEnvironment(payhere);

type Capture = ValidRequest<CaptureRequest, undefined>;

/**
 * The hold's order: the customer's own (else 404). The merchant's is looked up only to settle a
 * lost answer (`always`): a first attempt pays no read for it.
 */
const holdOrder = async ({ body, caller }: Capture, always = false) =>
  (
    await ownership.reference(
      caller,
      'authorization',
      body.authorization_token,
      () => new NotFoundError('The authorization was not found.'),
      always,
    )
  )?.orderId;

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
      subject: ({ body, caller }): MoneySubject => ({
        operation: 'capture',
        role: caller.role,
        body: captureUpstreamBody(body),
      }),
      // A lost answer, repeated: the hold's order shows the captured payment if it was captured.
      reconcile: async (request, startedAt) =>
        settleCapture(
          settling,
          {
            operation: 'capture',
            role: request.caller.role,
            body: captureUpstreamBody(request.body),
            orderId: await holdOrder(request, true),
          },
          { key: '', startedAt },
          request.deadline,
        ),
    },
  },
  async (request) => {
    const orderId = await holdOrder(request);
    const { msg, data } = await thenForget(
      () => payhere.capture(captureUpstreamBody(request.body), request.deadline, orderId),
      // The hold's order: known to a customer's request, else in the answer, else in the ledger.
      async (captured) => {
        const order =
          orderId ??
          fieldOf(captured?.data, 'order_id') ??
          (await holdOrder(request, true).catch(() => undefined));
        // PayHere accepted the hold's token: proven, if it was only a notification's word.
        await Promise.all([
          sharedReads.forgetOrder(order),
          captured && holds.proven(order, request.body.authorization_token),
        ]);
      },
    );
    return paymentOutcomeResponse(visibleTo(request.caller, data), msg, [2]);
  },
);
