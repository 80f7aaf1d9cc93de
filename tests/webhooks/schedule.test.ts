import { describe, expect, it } from 'vitest';
import { afterFailure, MAX_ATTEMPTS, RETRY_SCHEDULE_MS } from '../../lib/webhooks/schedule.ts';

const S = 1_000;
const MIN = 60 * S;
const H = 60 * MIN;

describe('the retry schedule (docs/operator.md "Webhooks")', () => {
  it('retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, then fails: eight attempts over more than a day', () => {
    const now = 1_000_000;
    const nextAts = [1, 2, 3, 4, 5, 6, 7].map((attempts) => afterFailure(attempts, now));

    expect(nextAts).toEqual(
      [5 * S, 5 * MIN, 30 * MIN, 2 * H, 5 * H, 10 * H, 10 * H].map((delay) => ({
        status: 'pending',
        nextAt: now + delay,
      })),
    );
    expect(afterFailure(8, now)).toEqual({ status: 'failed' });
    expect(MAX_ATTEMPTS).toBe(8);
    expect(RETRY_SCHEDULE_MS[0]).toBeLessThan(MIN);
    expect(RETRY_SCHEDULE_MS.reduce((sum, delay) => sum + delay, 0)).toBeGreaterThanOrEqual(24 * H);
  });
});
