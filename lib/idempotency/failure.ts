import { ApiError, OutcomeUnknownError } from '../errors.ts';

/**
 * What a failed attempt means for its idempotency record:
 * - `not_sent`: the money request provably never reached the gateway, so the record is deleted and
 *   the client may retry with the same key;
 * - `answered`: the gateway gave a definitive answer (a refusal); stored and replayed like a success;
 * - `unknown`: the request may have reached the gateway; stored as outcome_unknown, never deleted.
 */
export type FailureKind = 'not_sent' | 'answered' | 'unknown';

/**
 * Codes whose errors are raised before a money request leaves the container or are the gateway's
 * refusal to process it at all:
 * - gateway_unavailable: no connection could be made (a connect failure sends no byte; the gateway
 *   client retries those itself), or a dependency (credentials, this table) failed before sending;
 * - rate_limited: our own limiter refused to send, or PayHere answered 429, which it returns
 *   before processing (lib/gateway/client.ts reports a money request's other lost answers as
 *   outcome_unknown, never as rate_limited);
 * - unauthorized, forbidden: the caller was refused before anything was sent.
 * Anything not listed here and not a 4xx answer is `unknown`: a 502, a 504 or a bug cannot prove
 * that nothing was sent, and deleting the record then could charge twice.
 */
const NOT_SENT = new Set(['gateway_unavailable', 'rate_limited', 'unauthorized', 'forbidden']);

export function classifyFailure(error: unknown): FailureKind {
  if (!(error instanceof ApiError) || error instanceof OutcomeUnknownError) return 'unknown';
  // The gateway client marks what provably left the request unprocessed, whatever its code.
  if (error.notSent || NOT_SENT.has(error.code)) return 'not_sent';
  // The gateway's refusals (conflict, gateway_rejected, not_found) are answers about the request.
  return error.httpStatus >= 400 && error.httpStatus < 500 ? 'answered' : 'unknown';
}
