import { OutcomeUnknownError, reached } from '../envelope/errors.ts';

/**
 * What a caller is told when a money request may have been processed and PayHere's records cannot
 * settle it yet: one builder per route, each naming the read that will show the outcome. Every one
 * is `lost`: the request may have reached PayHere, so its Idempotency-Key is never released.
 */
const API = '/gateway/api';
const NEVER_AGAIN = 'Do not send it again with a new key';

function unknown(message: string, cause: unknown): OutcomeUnknownError {
  return reached(new OutcomeUnknownError(message, cause), 'lost');
}

export const outcomeUnknown = {
  charge: (orderId: string, cause?: unknown) =>
    unknown(
      `The gateway did not answer the charge and no payment for order ${orderId} is visible yet. ${NEVER_AGAIN}: ` +
        `repeat this request with the same Idempotency-Key later, or read GET ${API}/checkouts/${encodeURIComponent(orderId)}.`,
      cause,
    ),
  hold: (orderId: string, cause?: unknown) =>
    unknown(
      `The gateway did not answer the hold on order ${orderId}, and PayHere shows holds only in its notifications. ` +
        `${NEVER_AGAIN}: GET ${API}/checkouts/${encodeURIComponent(orderId)} shows the hold once PayHere reports it, ` +
        'and a repeat with the same Idempotency-Key answers from it.',
      cause,
    ),
  capture: (orderId: string | undefined, cause?: unknown) =>
    unknown(
      `The gateway did not confirm the capture; it may have been processed. ${NEVER_AGAIN}: ` +
        (orderId
          ? `GET ${API}/payments/${encodeURIComponent(orderId)} shows the captured payment, and a repeat with the same Idempotency-Key checks it.`
          : `the captured payment shows in GET ${API}/payments/{order_id} of the hold's order.`),
      cause,
    ),
  refund: (orderId: string | undefined, cause?: unknown) =>
    unknown(
      `The gateway did not confirm the refund; it may have been processed. ${NEVER_AGAIN}: ` +
        (orderId
          ? `GET ${API}/payments/${encodeURIComponent(orderId)} shows the payment's status (REFUND REQUESTED once refunded), and a repeat with the same Idempotency-Key checks it.`
          : `the payment's status in GET ${API}/payments/{order_id} shows it (REFUND REQUESTED once refunded).`),
      cause,
    ),
  retry: (subscriptionId: string, cause?: unknown) =>
    unknown(
      `The gateway did not confirm the retry of subscription ${subscriptionId}; the card may have been charged. ${NEVER_AGAIN}: ` +
        `GET ${API}/subscriptions/${subscriptionId}/payments shows a new payment if it was, and a repeat with the same Idempotency-Key checks it.`,
      cause,
    ),
  cancel: (subscriptionId: string, cause?: unknown) =>
    unknown(
      `The gateway did not confirm the cancellation of subscription ${subscriptionId}; it may have been processed. ` +
        `Send the DELETE again ("already cancelled" then means it was done; sent with an Idempotency-Key, its repeat with the same key checks the subscription's state instead), or read GET ${API}/subscriptions/${subscriptionId}.`,
      cause,
    ),
};
