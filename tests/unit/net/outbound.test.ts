import { EventEmitter } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
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

  it('counts a real request until its body has been written to its new connection', async () => {
    // Prepare: a loopback server that holds its answer.
    const server = createServer((incoming, response) => {
      incoming.resume();
      incoming.on('end', () => setTimeout(() => response.end('ok'), 50));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const events: string[] = [];
    try {
      // Act
      const sent = request({ host: '127.0.0.1', port, method: 'POST', agent: false });
      beingWritten(sent);
      sent.once('finish', () => events.push('finish'));
      const answered = new Promise<void>((resolve) =>
        sent.once('response', (response) => response.resume().once('end', resolve)),
      );
      sent.end('{"a":1}');
      await allWritten().then(() => events.push('all written'));
      await answered;
      events.push('answered');

      // Assess: written before the answer, not merely created.
      expect(events).toEqual(['finish', 'all written', 'answered']);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
