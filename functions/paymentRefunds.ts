import { ok } from '#lib/envelope/envelope.ts';
import { route } from '#lib/http/route.ts';
import { refundRecordsFromEnvironment } from '#lib/orders/from-environment.ts';
import { PaymentPath } from '#lib/schemas/paths.ts';

const records = refundRecordsFromEnvironment();

/**
 * GET /gateway/api/payments/{id}/refunds: each refund of the payment the service sent, and what is
 * refunded and left, from the ledger (never PayHere); a customer's own payments only (else 404).
 */
export const handler = route(
  { name: 'paymentRefunds', scope: 'payments:read', path: PaymentPath },
  async ({ caller, path }) => {
    // PayHere's ids are numbers: 0320040000011 is 320040000011, in the ledger as at the gateway.
    const view = await records.view(caller, String(Number(path.id)));
    return ok(`Found ${view.refunds.length} refunds`, view);
  },
);
