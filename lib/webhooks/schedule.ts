/**
 * When a failed delivery is tried again (docs/operator.md "Webhooks"): as Svix does, the first
 * retry within seconds, then growing delays, over more than a day in all (5 s + 5 min + 30 min +
 * 2 h + 5 h + 10 h + 10 h: 27 h 35 min 5 s), so a receiver down for a night still gets every event.
 * A delivery is tried once at once, then once after each delay: eight attempts; the eighth failure
 * marks it `failed` for good (a redelivery asks for it again).
 */
export const RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
];

/** Attempts a delivery gets: the first, and one after each delay of the schedule. */
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;

/**
 * After the `attempts`-th failed attempt (1 for the first), at `now`: when to try again, or
 * `failed` once the schedule is spent.
 */
export function afterFailure(
  attempts: number,
  now: number,
): { status: 'pending'; nextAt: number } | { status: 'failed' } {
  const delay = RETRY_SCHEDULE_MS[attempts - 1];
  return delay === undefined ? { status: 'failed' } : { status: 'pending', nextAt: now + delay };
}
