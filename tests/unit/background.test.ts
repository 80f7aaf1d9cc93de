import { setImmediate } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { backgroundSettled, inBackground } from '../../lib/net/background.ts';

describe('work in the background', () => {
  it('starts once the current turn is over, after the answer it follows has gone up', async () => {
    const events: string[] = [];
    const answer = (async () => {
      inBackground(async () => {
        events.push('write made');
      });
      events.push('answered');
    })();

    // Promises the caller awaits all settle before the work starts: none of them waits for it.
    await answer;
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(events).toEqual(['answered']);

    await setImmediate();
    expect(events).toEqual(['answered', 'write made']);
  });

  it('settles its promise with the work, and is waited for by backgroundSettled, what it starts included', async () => {
    const events: string[] = [];
    const done = inBackground(async () => {
      await setImmediate();
      inBackground(async () => {
        await setImmediate();
        events.push('second');
      });
      events.push('first');
      return 'kept';
    });

    await backgroundSettled();

    expect(await done).toBe('kept');
    expect(events).toEqual(['first', 'second']);
  });
});
