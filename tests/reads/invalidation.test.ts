import { describe, expect, it } from 'vitest';
import { FORGET_WITHIN_MS, thenForget } from '../../lib/reads/invalidation.ts';

/** The drop after a money call: always made, whatever the call's outcome, and never holding its answer up. */
describe('thenForget', () => {
  it('drops after a call that succeeded, with its result', async () => {
    const forgotten: unknown[] = [];

    const result = await thenForget(
      async () => ({ order_id: 'Order-1' }),
      async (answer) => {
        forgotten.push(answer);
      },
    );

    expect(result).toEqual({ order_id: 'Order-1' });
    expect(forgotten).toEqual([{ order_id: 'Order-1' }]);
  });

  it('drops after a call that failed (an unknown outcome may have changed it), and rethrows', async () => {
    const forgotten: unknown[] = [];
    const failure = new Error('outcome unknown');

    const thrown = await thenForget(
      async () => {
        throw failure;
      },
      async (answer) => {
        forgotten.push(answer ?? 'no result');
      },
    ).catch((error: unknown) => error);

    expect(thrown).toBe(failure);
    expect(forgotten).toEqual(['no result']);
  });

  it('answers without waiting long for a drop that hangs, nor failing with one that fails', async () => {
    const started = Date.now();

    const late = await thenForget(
      async () => 'charged',
      () => new Promise<void>(() => {}),
    );
    const tookMs = Date.now() - started;
    const failed = await thenForget(
      async () => 'refunded',
      async () => {
        throw new Error('table down');
      },
    );

    expect([late, failed]).toEqual(['charged', 'refunded']);
    expect(tookMs).toBeGreaterThanOrEqual(FORGET_WITHIN_MS - 5);
    expect(tookMs).toBeLessThan(FORGET_WITHIN_MS + 400);
  });
});
