import { ok } from '#lib/envelope/envelope.ts';
import { NotFoundError } from '#lib/envelope/errors.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route, type ValidRequest } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/environment.ts';
import { fieldOf } from '#lib/log/audit.ts';
import {
  holdsFromEnvironment,
  orderPaymentsFromEnvironment,
  ownershipFromEnvironment,
} from '#lib/orders/environment.ts';
import { thenForget } from '#lib/reads/invalidation.ts';
import { RefundRequest, refundUpstreamBody } from '#lib/schemas/refund.ts';
import { settleDepsFromEnvironment } from '#lib/settle/environment.ts';
import { type MoneySubject, settleRefund } from '#lib/settle/money.ts';

const payhere = payHereFromEnvironment();
const ownership = ownershipFromEnvironment();
const store = idempotencyStoreFromEnvironment();
const payments = orderPaymentsFromEnvironment(payhere);
const holds = holdsFromEnvironment();
const settling = settleDepsFromEnvironment(payhere);

type Refund = ValidRequest<RefundRequest, undefined>;

/**
 * The refunded payment's or released hold's order: the customer's own (else 404). The merchant's
 * is looked up only to settle a lost answer (`always`): a first attempt pays no read for it.
 */
async function refundedOrder({ body, caller }: Refund, always = false): Promise<string | undefined> {
  const upstream = refundUpstreamBody(body);
  const reference =
    'payment_id' in upstream
      ? await ownership.reference(
          caller,
          'payment',
          String(upstream.payment_id),
          () => new NotFoundError(`Payment ${upstream.payment_id} was not found.`),
          always,
        )
      : await ownership.reference(
          caller,
          'authorization',
          upstream.authorization_token,
          () => new NotFoundError('The authorization was not found.'),
          always,
        );
  return reference?.orderId;
}

/** POST /gateway/api/payments/refund: refund a payment (fully or partly) or release a hold, once per Idempotency-Key. */
export const handler = route(
  {
    name: 'refund',
    scope: 'payments:refund',
    body: RefundRequest,
    // A release names no payment (the hold's token is a secret); a refund answers its number.
    audit: ({ body }, data) => ({
      kind:
        body.payment_id === undefined ? 'release' : body.amount === undefined ? 'refund' : 'partial_refund',
      paymentId: body.payment_id === undefined ? undefined : String(body.payment_id),
      refundId: fieldOf(data, 'refund_id'),
      amount: body.amount,
    }),
    idempotency: {
      operation: 'refund',
      store,
      upstream: ({ body }) => refundUpstreamBody(body),
      subject: ({ body, caller }): MoneySubject => ({
        operation: 'refund',
        role: caller.role,
        body: refundUpstreamBody(body),
      }),
      // A lost answer, repeated: a refunded payment shows it in its status.
      reconcile: async (request, startedAt) =>
        settleRefund(
          settling,
          {
            operation: 'refund',
            role: request.caller.role,
            body: refundUpstreamBody(request.body),
            orderId: await refundedOrder(request, true),
          },
          { key: '', startedAt },
          request.deadline,
        ),
    },
  },
  async (request) => {
    const orderId = await refundedOrder(request);
    const { msg, data } = await thenForget(
      () => payhere.refund(refundUpstreamBody(request.body), request.deadline, orderId),
      // The merchant's refund looks its order up only now, after PayHere answered.
      async (refunded) => {
        const order = orderId ?? (await refundedOrder(request, true).catch(() => undefined));
        const token = request.body.authorization_token;
        // A release PayHere accepted proves the hold's token, if it was only a notification's word.
        await Promise.all([payments.refunded(order), refunded && token && holds.proven(order, token)]);
      },
    );
    return ok(msg, data);
  },
);
