/**
 * Full-jitter exponential backoff: a wait drawn evenly below 100 ms doubled for each retry so far,
 * at most `maxMs`, so that callers failed together do not come back together. The PayHere client
 * (lib/gateway/policy.ts) and the AWS client (lib/aws/retry.ts) wait by it.
 */
const BASE_DELAY_MS = 100;

export function fullJitterMs(
  retriesSoFar: number,
  random: () => number,
  maxMs = Number.POSITIVE_INFINITY,
): number {
  return Math.floor(random() * Math.min(maxMs, BASE_DELAY_MS * 2 ** retriesSoFar));
}
