import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_REQUEST_BUDGET_MS, RESPONSE_RESERVE_MS, requestDeadline } from '../../lib/http/deadline.ts';

const NOW = Date.UTC(2024, 5, 1, 4, 30);

describe('requestDeadline', () => {
  it('keeps at most 20 s for upstream work, well inside API Gateway’s 29 s', () => {
    expect(MAX_REQUEST_BUDGET_MS).toBe(20_000);
    expect(requestDeadline(900_000, NOW)).toBe(NOW + 20_000);
  });

  it('keeps 1 s of the remaining time back to answer', () => {
    expect(RESPONSE_RESERVE_MS).toBe(1_000);
    expect(requestDeadline(6_000, NOW)).toBe(NOW + 5_000);
  });

  it('uses the full budget when the remaining time is unknown (local runs)', () => {
    expect(requestDeadline(undefined, NOW)).toBe(NOW + 20_000);
  });

  it.each([1_000, 999, 0, -500])('never lies in the past, with %i ms remaining', (remaining) => {
    expect(requestDeadline(remaining, NOW)).toBe(NOW);
  });

  it('is now + min(20 s, remaining - 1 s), never before now', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -60_000, max: 900_000 }),
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        (remaining, now) => {
          const deadline = requestDeadline(remaining, now);
          return deadline === now + Math.max(0, Math.min(20_000, remaining - 1_000));
        },
      ),
    );
  });

  it('defaults to the current time', () => {
    // Prepare
    const before = Date.now();

    // Act
    const deadline = requestDeadline(10_000);

    // Assess
    expect(deadline).toBeGreaterThanOrEqual(before + 9_000);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 9_000);
  });
});
