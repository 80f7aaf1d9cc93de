import { setImmediate } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { afterAnswer, backgroundSettled, counted, inBackground } from '../../lib/net/background.ts';
import { captureLogs } from '../helpers/logs.ts';

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

  it('settles its promise when the work is done, and is waited for by backgroundSettled, what it starts included', async () => {
    const events: string[] = [];
    const done = inBackground(async () => {
      await setImmediate();
      inBackground(async () => {
        await setImmediate();
        events.push('second');
      });
      events.push('first');
    });

    await backgroundSettled();

    await done;
    expect(events).toEqual(['first', 'second']);
  });

  it('logs a failure the work did not handle, and neither rejects nor leaves it unhandled', async () => {
    const logs = captureLogs('error');
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const done = inBackground(async () => {
        throw new Error('a bug in the work');
      });

      await expect(done).resolves.toBeUndefined();
      await backgroundSettled();
      await setImmediate();

      expect(unhandled).toEqual([]);
      expect(logs).toContainEqual(
        expect.objectContaining({
          level: 'error',
          message: 'a write started after an answer failed',
          error: expect.objectContaining({ message: 'a bug in the work' }),
        }),
      );
    } finally {
      process.off('unhandledRejection', onUnhandled);
      vi.unstubAllEnvs();
    }
  });
});

describe('work left for after the answer', () => {
  it('waits until every request the container answers has its answer, then starts', async () => {
    const events: string[] = [];
    let finishSecond: () => void = () => {};
    const handler = counted(async (name: string, wait: boolean) => {
      afterAnswer(async () => {
        events.push(`relay of ${name}`);
      });
      if (wait) await new Promise<void>((resolve) => (finishSecond = resolve));
      events.push(`${name} answered`);
      return name;
    });

    const second = handler('second', true);
    await handler('first', false);
    await setImmediate();
    const whileSecondAnswers = [...events];
    finishSecond();
    await second;
    await backgroundSettled();

    expect(whileSecondAnswers).toEqual(['first answered']);
    expect(events).toEqual(['first answered', 'second answered', 'relay of second', 'relay of first']);
  });

  it('starts at once, in the background, when no request is being answered', async () => {
    const events: string[] = [];

    afterAnswer(async () => {
      events.push('relay');
    });
    const before = [...events];
    await backgroundSettled();

    expect(before).toEqual([]);
    expect(events).toEqual(['relay']);
  });

  it('waits for a request that failed too', async () => {
    const events: string[] = [];
    const failing = counted(async () => {
      afterAnswer(async () => {
        events.push('relay');
      });
      throw new Error('refused');
    });

    await expect(failing()).rejects.toThrow('refused');
    await backgroundSettled();

    expect(events).toEqual(['relay']);
  });
});
