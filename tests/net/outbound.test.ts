import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { allWritten, beingWritten } from '../../lib/net/outbound.ts';

/** tests/unit/net/outbound.test.ts holds the rest; this one needs a loopback server. */
describe('requests being written', () => {
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
