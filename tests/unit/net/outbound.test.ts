import { EventEmitter } from 'node:events';
import { setImmediate as turn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { allWritten, beingWritten } from '../../../lib/net/outbound.ts';

/** Whether `promise` has settled after a few turns of the event loop. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  for (let i = 0; i < 3; i++) await turn();
  return done;
}

describe('requests being written', () => {
  it('are all written at once when none is counted', async () => {
    expect(await settled(allWritten())).toBe(true);
  });

  it('are all written only once every counted request has finished or closed', async () => {
    // Prepare: two requests on their way.
    const first = new EventEmitter();
    const second = new EventEmitter();
    beingWritten(first);
    beingWritten(second);

    // Act and assess: the wait ends with the last of them, a request that failed (closed unwritten) included.
    const written = allWritten();
    expect(await settled(written)).toBe(false);
    first.emit('finish');
    first.emit('close');
    expect(await settled(written)).toBe(false);
    second.emit('close');
    expect(await settled(written)).toBe(true);
    expect(await settled(allWritten())).toBe(true);
  });
});
