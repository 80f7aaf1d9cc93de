// First: PayHere's connection opens while the rest loads (lib/gateway/connect-at-start.ts).
import '#lib/gateway/connect-at-start.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { idempotencyStoreFromEnvironment } from '#lib/idempotency/from-environment.ts';
import { fieldOf } from '#lib/log/audit.ts';
import { refundsFromEnvironment } from '#lib/orders/from-environment.ts';
import { RefundRequest, refundUpstreamBody } from '#lib/schemas/refund.ts';

const refunds = refundsFromEnvironment(payHereFromEnvironment());
const store = idempotencyStoreFromEnvironment();

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
      subject: (request) => refunds.subject(request),
      // A lost answer, repeated: settled from the payment's status.
      reconcile: (request, startedAt) => refunds.settle(request, startedAt),
    },
  },
  (request) => refunds.refund(request),
);
