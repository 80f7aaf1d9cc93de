import { describe, expect, it } from 'vitest';
import { timeLimit, withinMs } from '../../../lib/net/time-limit.ts';
import { timersLeftBy } from '../../helpers/timers.ts';

describe('a time limit', () => {
  it('aborts its work with a TimeoutError, as AbortSignal.timeout does', async () => {
    // Act
    const reason = await withinMs(
      5,
      (signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason))),
    );

    // Assess
    expect(reason).toBeInstanceOf(DOMException);
    expect(reason).toMatchObject({ name: 'TimeoutError' });
  });

  it('leaves no timer behind once its work is done, however it ended', async () => {
    // Act
    const afterAnswer = await timersLeftBy([60_001], () => withinMs(60_001, async () => 'answered'));
    const afterFailure = await timersLeftBy([60_001], () =>
      withinMs(60_001, async () => {
        throw new Error('refused');
      }),
    );
    const ended = timeLimit(60_001);
    ended.end();

    // Assess
    expect(afterAnswer).toEqual([]);
    expect(afterFailure).toEqual([]);
    expect(ended.signal.aborted).toBe(false);
  });

  it('is found out by the check when it is AbortSignal.timeout', async () => {
    // The check itself: Node's own timer, which nothing stops, is seen.
    expect(await timersLeftBy([60_002], async () => AbortSignal.timeout(60_002))).toEqual([60_002]);
  });
});
