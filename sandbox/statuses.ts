// The status_code and status_message PayHere reports for each way a payment ends, in charge answers
// and in notifications. docs/payhere.md quotes a few texts; sandbox/README.md lists the ones assumed.
import type { CheckoutKind, CheckoutOutcome } from './control-requests.ts';
import type { Payer } from './records.ts';

export interface Status {
  code: number;
  message: string;
}

const DECLINED: Status = { code: -2, message: 'Payment declined by the issuer.' };
const PENDING: Status = { code: 0, message: 'Payment is pending.' };
const CANCELLED: Status = { code: -1, message: 'Payment cancelled by the customer.' };

/** A charge on a saved card, by how the card answers. */
export const CHARGE_STATUS: Record<Payer['outcome'], Status> = {
  success: { code: 2, message: 'Successfully completed the test tokenized payment.' },
  declined: DECLINED,
  pending: PENDING,
};
export const CHARGE_AUTHORIZED: Status = {
  code: 3,
  message: 'Successfully authorized the test tokenized payment.',
};

export function received(payer: Payer): Status {
  return { code: 2, message: `Successfully received the ${payer.paymentMethod.method} payment` };
}

export function checkoutStatus(kind: CheckoutKind, outcome: CheckoutOutcome, payer: Payer): Status {
  const method = payer.paymentMethod.method;
  if (outcome === 'decline') return DECLINED;
  if (outcome === 'cancel') return CANCELLED;
  if (outcome === 'pending') return PENDING;
  if (kind === 'authorize') return { code: 3, message: `Successfully authorized the ${method} payment` };
  if (kind === 'preapproval') return { code: 2, message: `Successfully pre-approved the ${method} card` };
  return received(payer);
}

export function installmentStatus(outcome: 'success' | 'decline', payer: Payer): Status {
  return outcome === 'success' ? received(payer) : DECLINED;
}

export const SUBSCRIPTION_COMPLETED: Status = { code: 2, message: 'Recurring payments completed' };
export const SUBSCRIPTION_STOPPED: Status = { code: -1, message: 'Recurring payments stopped' };
