import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A far end on loopback (PayHere's, or an AWS endpoint's) that counts what reaches it: connections,
 * requests, and requests written to a connection it dropped without a word (see drop()), each
 * answered by a reset, as a far end or a NAT that forgot the connection answers. Every other
 * request is answered `{}`, after `answerAfterMs` (0: at once).
 */
export async function farEnd(options: { answerAfterMs?: number } = {}) {
  const counts = { connections: 0, requests: 0, lost: 0 };
  const dropped = new WeakSet<Socket>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    if (dropped.has(req.socket)) {
      counts.lost++;
      req.socket.resetAndDestroy();
      return;
    }
    counts.requests++;
    req.resume();
    const answer = () => res.end('{}');
    if (options.answerAfterMs) req.on('end', () => setTimeout(answer, options.answerAfterMs));
    else answer();
  });
  server.on('connection', (socket: Socket) => {
    counts.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    server,
    /** The far end forgets every open connection, telling no one: the next bytes on one are reset. */
    drop() {
      for (const socket of sockets) dropped.add(socket);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
