import type { ChargeRequest } from '../schemas.ts';
import type { PaymentRecord } from './schemas.ts';

/** PayHere's dates are Sri Lanka time (UTC+05:30) without a zone. */
const SRI_LANKA_OFFSET = '+05:30';
/** Tolerated difference between the gateway's clock and ours. */
const CLOCK_SKEW_MS = 5 * 60_000;

export function gatewayDateToEpoch(date: unknown): number | undefined {
  if (typeof date !== 'string' || !/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(date)) return undefined;
  const epoch = Date.parse(`${date.replace(' ', 'T')}${SRI_LANKA_OFFSET}`);
  return Number.isNaN(epoch) ? undefined : epoch;
}

/**
 * The payment a lost charge produced, if the order's records show one: same order, amount and
 * currency, dated (readably) no earlier than the charge was sent (PayHere allows reused order ids, so an
 * older payment of the same order is not this charge). The newest match wins.
 */
export function findReconciledCharge(
  payments: readonly PaymentRecord[],
  request: Pick<ChargeRequest, 'order_id' | 'amount' | 'currency'>,
  sentAt: number,
): PaymentRecord | undefined {
  const matches = payments.filter((payment) => {
    if (payment.order_id !== request.order_id) return false;
    if (payment.currency !== request.currency) return false;
    if (Math.round(payment.amount * 100) !== Math.round(request.amount * 100)) return false;
    // Without a readable date an older payment of a reused order id could pass for this charge:
    // better an honest "unknown" than a false success.
    const at = gatewayDateToEpoch(payment.date);
    return at !== undefined && at >= sentAt - CLOCK_SKEW_MS;
  });
  return matches.sort((a, b) => Number(b.payment_id) - Number(a.payment_id))[0];
}
