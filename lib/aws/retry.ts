import { DynamoDbError } from './errors.ts';

/**
 * When a failed request is tried again, as the AWS SDK's standard retry mode does it for DynamoDB:
 * throttling, DynamoDB's own failures (5xx) and a lost or silent connection are worth another try;
 * a refusal of the request itself (a failed condition, a validation error, a missing table) would
 * only be refused again, and repeating a failed condition could hide whose write won.
 */

/** DynamoDB's names for "too many requests right now" (the SDK's throttling list, as DynamoDB uses it). */
const THROTTLING = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
]);

export function isRetryable(error: unknown): boolean {
  if (error instanceof DynamoDbError) {
    return THROTTLING.has(error.name) || error.statusCode === 429 || error.statusCode >= 500;
  }
  // No answer at all: fetch's network failure (a TypeError "fetch failed", the cause under it), or
  // a try that timed out. Any other TypeError is a bug here, and a bug is not worth a second try.
  const { name, message } = (error ?? {}) as { name?: unknown; message?: unknown };
  return (name === 'TypeError' && message === 'fetch failed') || name === 'TimeoutError';
}

/**
 * The wait before try `attempt + 1` (after `attempt` tries failed): full jitter on 100 ms doubled
 * each time, the SDK's base delay, so containers throttled together do not come back together.
 */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  return Math.floor(random() * 100 * 2 ** (attempt - 1));
}
