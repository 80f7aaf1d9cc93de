import { describe, expect, it } from 'vitest';
import { AttemptWindows } from '../../lib/orders/attempts.ts';

/** lib/orders/attempts.ts: card testing's windows, on a clock the test sets. */
describe('AttemptWindows', () => {
  const at = (now: number) => new AttemptWindows(1_000, () => now);

  it('counts a failure in its own window and the next', () => {
    expect(at(5_999).failureWindows()).toEqual([5, 6]);
    expect(at(6_000).current()).toBe(6);
  });

  it('allows again from the first window whose count is below the limit', () => {
    // Three failures in window 5: counted in 5 and 6; refused in 6 until 7 begins.
    expect(at(6_200).allowedFrom({ 5: 3, 6: 3 }, 3)).toBe(7_000);
    expect(at(6_200).retryAfterSeconds({ 5: 3, 6: 3 }, 3)).toBe(1);
    // A failure finished in 6 (a charge sent before the refusal) counts in 7 as well.
    expect(at(6_200).allowedFrom({ 5: 3, 6: 4, 7: 1 }, 3)).toBe(7_000);
    expect(at(6_200).allowedFrom({ 5: 2, 6: 3, 7: 3 }, 3)).toBe(8_000);
  });

  it('answers a Retry-After of at least a second', () => {
    expect(new AttemptWindows(60_000, () => 60_999).retryAfterSeconds({ 1: 3 }, 3)).toBe(60);
    expect(new AttemptWindows(60_000, () => 119_999).retryAfterSeconds({ 1: 3 }, 3)).toBe(1);
  });

  it('names the windows before this one as stale: no attempt from now on is checked against them', () => {
    expect(at(7_500).stale({ 5: 3, 6: 3, 7: 1, 8: 1 })).toEqual([5, 6]);
    expect(at(7_500).stale({ 7: 1, 8: 1 })).toEqual([]);
  });

  it('is at the limit only when both windows a failure now counts in hold the limit', () => {
    expect(at(6_200).atLimit({ 6: 3, 7: 3 }, 3)).toBe(true);
    // Window 6's three came from window 5: a failure now still counts in 7.
    expect(at(6_200).atLimit({ 5: 3, 6: 3 }, 3)).toBe(false);
    expect(at(6_200).atLimit({ 6: 2, 7: 3 }, 3)).toBe(false);
  });
});
