import type { ChargeRequest } from '../schemas/charge.ts';
import type { PaymentRecord } from './schemas.ts';

/** PayHere's dates are Sri Lanka time (UTC+05:30) without a zone. */
const SRI_LANKA_OFFSET = '+05:30';

export function gatewayDateToEpoch(date: unknown): number | undefined {
  if (typeof date !== 'string' || !/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(date)) return undefined;
  const epoch = Date.parse(`${date.replace(' ', 'T')}${SRI_LANKA_OFFSET}`);
  return Number.isNaN(epoch) ? undefined : epoch;
}

/** When a lost charge can have been processed: from when it was sent until its deadline (epoch ms). */
export interface ChargeWindow {
  sentAt: number;
  until: number;
}

/**
 * The payments a lost charge may have produced: same order, amount and currency, dated (readably)
 * within the charge's window, to the second as PayHere dates are. PayHere allows reused order ids,
 * so an older payment of the order is not this charge, nor is one made after the charge could no
 * longer be processed. Without a readable date a payment does not count: a gateway clock running
 * behind ours then gives an honest "unknown", never a false success. Newest first.
 */
export function chargeCandidates(
  payments: readonly PaymentRecord[],
  request: Pick<ChargeRequest, 'order_id' | 'amount' | 'currency'>,
  window: ChargeWindow,
): PaymentRecord[] {
  const from = Math.floor(window.sentAt / 1000) * 1000;
  const until = Math.ceil(window.until / 1000) * 1000;
  return payments
    .filter((payment) => {
      if (payment.order_id !== request.order_id) return false;
      if (payment.currency !== request.currency) return false;
      if (Math.round(payment.amount * 100) !== Math.round(request.amount * 100)) return false;
      const at = gatewayDateToEpoch(payment.date);
      return at !== undefined && at >= from && at <= until;
    })
    .sort((a, b) => Number(b.payment_id) - Number(a.payment_id));
}
