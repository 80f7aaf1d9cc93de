import { fullJitterMs } from '../net/backoff.ts';
import { AwsConnectionError, AwsServiceError, AwsTimeoutError } from './errors.ts';

/**
 * When a failed request is tried again, as the AWS SDK's standard retry mode does it: throttling,
 * the service's own failures (5xx) and a lost or silent connection are worth another try; a
 * refusal of the request itself (a failed condition, a validation error, a missing table or
 * secret, a denied access) would only be refused again, and repeating a failed condition could
 * hide whose write won.
 */

/** The services' names for "too many requests right now" (the SDK's throttling list, as they use it). */
const THROTTLING = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
]);

/** The service answered "too many requests right now": it is there, only busy. */
export function isThrottlingError(error: unknown): boolean {
  return error instanceof AwsServiceError && (THROTTLING.has(error.name) || error.statusCode === 429);
}

export function isRetryableAwsError(error: unknown): boolean {
  if (error instanceof AwsServiceError) {
    return THROTTLING.has(error.name) || error.statusCode === 429 || error.statusCode >= 500;
  }
  // No answer at all. Anything else thrown (a TypeError, a SyntaxError) is a bug here, and a bug
  // is not worth a second try.
  return error instanceof AwsConnectionError || error instanceof AwsTimeoutError;
}

/**
 * The wait before try `attempt + 1` (after `attempt` tries failed): full jitter on 100 ms doubled
 * each time, the SDK's base delay, so containers throttled together do not come back together.
 */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  return fullJitterMs(attempt - 1, random);
}
