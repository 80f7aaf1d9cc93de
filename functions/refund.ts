import { ok } from '#lib/envelope/envelope.ts';
import { NotFoundError } from '#lib/envelope/errors.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { ownershipFromEnvironment } from '#lib/orders/environment.ts';
import { RefundRequest, refundUpstreamBody } from '#lib/schemas/refund.ts';

const payhere = payHereFromEnvironment();
const ownership = ownershipFromEnvironment();
const store = idempotencyStoreFromEnvironment();

/** POST /gateway/api/payments/refund: refund a payment (fully or partly) or release a hold, once per Idempotency-Key. */
export const handler = route(
  { scope: 'payments:refund', body: RefundRequest, idempotency: { operation: 'refund', store } },
  async ({ body, caller, deadline }) => {
    const upstream = refundUpstreamBody(body);
    if ('payment_id' in upstream) {
      const id = String(upstream.payment_id);
      await ownership.require(caller, 'payment', id, () => new NotFoundError(`Payment ${id} was not found.`));
    } else {
      await ownership.require(
        caller,
        'authorization',
        upstream.authorization_token,
        () => new NotFoundError('The authorization was not found.'),
      );
    }
    const { msg, data } = await payhere.refund(upstream, deadline);
    return ok(msg, data);
  },
);
