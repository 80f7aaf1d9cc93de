import { ApiError, OutcomeUnknownError } from '../envelope/errors.ts';

/**
 * What a failed attempt means for its idempotency record:
 * - `not_sent`: the money request provably never reached the gateway, so the record is deleted and
 *   the client may retry with the same key;
 * - `answered`: the gateway gave a definitive answer (a refusal); stored and replayed like a success;
 * - `unknown`: the request may have reached the gateway; stored as outcome_unknown, never deleted.
 */
export type FailureKind = 'not_sent' | 'answered' | 'unknown';

export function classifyFailure(error: unknown): FailureKind {
  if (!(error instanceof ApiError) || error instanceof OutcomeUnknownError) return 'unknown';
  // Only the gateway client knows what provably left the request unprocessed (a connect failure,
  // its own limiter, PayHere's 429, the token or the credentials failing first): it marks those.
  // Anything else, whatever its code, cannot prove that nothing was sent, and deleting the record
  // then could charge twice.
  if (error.notSent) return 'not_sent';
  // The gateway's refusals (conflict, gateway_rejected, not_found) are answers about the request.
  return error.httpStatus >= 400 && error.httpStatus < 500 ? 'answered' : 'unknown';
}
