import { ApiError } from '../envelope/errors.ts';

/**
 * What a failed attempt means for its idempotency record, read from the one place that knows:
 * the error's `reach` (lib/envelope/errors.ts), set where the knowledge is and carried up unchanged.
 * - `not_sent`: the money request provably never reached the gateway, so the record is released
 *   and the client may retry with the same key;
 * - `answered`: the gateway gave a definitive answer (a refusal); stored and replayed like a success;
 * - `unknown`: the request may have reached the gateway (or nothing says it did not): stored as
 *   outcome_unknown, never released.
 */
export type FailureKind = 'not_sent' | 'answered' | 'unknown';

export function classifyFailure(error: unknown): FailureKind {
  if (!(error instanceof ApiError)) return 'unknown';
  if (error.reach === 'not_sent') return 'not_sent';
  if (error.reach === 'answered') return 'answered';
  return 'unknown';
}
