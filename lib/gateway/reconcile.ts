import type { ChargeRequest } from '../schemas/charge.ts';
import type { PaymentRecord } from './schemas.ts';

/** PayHere's dates are Sri Lanka time (UTC+05:30) without a zone. */
const SRI_LANKA_OFFSET = '+05:30';

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
    // An older payment of a reused order id must never pass for this charge: without a readable
    // date, or dated before the charge was sent (to the second, as PayHere dates are), it does
    // not count. A gateway clock running behind ours then gives an honest "unknown", never a
    // false success.
    const at = gatewayDateToEpoch(payment.date);
    return at !== undefined && at >= Math.floor(sentAt / 1000) * 1000;
  });
  return matches.sort((a, b) => Number(b.payment_id) - Number(a.payment_id))[0];
}
