/** API Gateway gives up on an integration after 29 s; our answer must be out well before. */
export const MAX_REQUEST_BUDGET_MS = 20_000;
/** Kept back from Lambda's remaining time to build and return the response. */
export const RESPONSE_RESERVE_MS = 1_000;

/**
 * The epoch-ms deadline for all upstream work of one invocation, keeping back the time to answer
 * and `reserveMs` for what must happen after the upstream work (a money request's bookkeeping).
 */
export function requestDeadline(
  remainingTimeMs: number | undefined,
  now = Date.now(),
  reserveMs = 0,
): number {
  const remaining =
    remainingTimeMs === undefined ? MAX_REQUEST_BUDGET_MS : remainingTimeMs - RESPONSE_RESERVE_MS - reserveMs;
  return now + Math.max(0, Math.min(MAX_REQUEST_BUDGET_MS, remaining));
}
