import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import { setTimeout as delay, setImmediate as turn } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { connectAtStart, takeStarted } from '../../lib/gateway/early-connection.ts';
import {
  KEEP_ALIVE_MS,
  STALE_AFTER_IDLE_MS,
  Transport,
  TransportError,
} from '../../lib/gateway/transport.ts';
import { farEnd } from '../helpers/far-end.ts';
import { freePort } from '../helpers/ports.ts';

let closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closing.map((close) => close()));
  closing = [];
});

async function setUp() {
  const end = await farEnd();
  let now = 1_000_000;
  const transport = new Transport(end.url, { connectTimeoutMs: 1_000, now: () => now });
  closing.push(
    () => transport.close(),
    () => end.close(),
  );
  const send = async (unsafeToRepeat: boolean) => {
    const answer = await transport.send({
      method: unsafeToRepeat ? 'POST' : 'GET',
      path: '/merchant/v1/x',
      headers: {},
      ...(unsafeToRepeat ? { body: '{}' } : {}),
      deadline: Date.now() + 5_000,
      unsafeToRepeat,
    });
    // The pool takes its socket back in the next turn, as between two requests of a container.
    await turn();
    return answer;
  };
  return {
    end,
    transport,
    send,
    /** Time passing with the process frozen: no timer of it runs meanwhile. */
    freeze: (ms: number) => {
      now += ms;
    },
  };
}

describe('a connection opened ahead of the call', () => {
  it('is one connection, with nothing written on it until the call, which then goes on it', async () => {
    // Prepare
    const { end, transport, send } = await setUp();
    const accepted = once(end.server, 'connection');

    // Act: opened, and accepted by the far end, before any call is made.
    transport.connectEarly();
    await accepted;
    const beforeTheCall = { ...end.counts };
    const answer = await send(false);

    // Assess
    expect(beforeTheCall).toEqual({ connections: 1, requests: 0, lost: 0 });
    expect(answer.status).toBe(200);
    expect(end.counts).toEqual({ connections: 1, requests: 1, lost: 0 });
  });

  it('is opened once however many requests prepare for a call meanwhile', async () => {
    // Prepare
    const { end, transport, send } = await setUp();

    // Act
    transport.connectEarly();
    transport.connectEarly(true);
    await transport.preload();
    await Promise.all([send(false), transport.preload(true)]);

    // Assess
    expect(end.counts).toEqual({ connections: 1, requests: 1, lost: 0 });
  });

  it('is opened when the pool held a socket the far end has since closed', async () => {
    // Prepare: a call leaves a kept-alive socket in the pool; the far end then closes it, and the
    // pool hears of it.
    const { end, transport, send } = await setUp();
    await send(false);
    end.server.closeAllConnections();
    for (let i = 0; i < 20; i++) await turn();
    const accepted = once(end.server, 'connection');

    // Act
    transport.connectEarly();
    const beforeTheCall = await Promise.race([
      accepted.then(() => 'opened'),
      delay(2_000).then(() => 'not opened'),
    ]);
    await send(false);

    // Assess: a pool counting the closed socket would have left the call to connect on its own.
    expect(beforeTheCall).toBe('opened');
    expect(end.counts).toEqual({ connections: 2, requests: 2, lost: 0 });
  });

  it('failing, leaves the call to connect and fail as it would have: not sent', async () => {
    // Prepare: nothing listens there.
    const transport = new Transport(`http://127.0.0.1:${await freePort()}`, { connectTimeoutMs: 1_000 });
    closing.push(() => transport.close());
    transport.connectEarly();

    // Act
    const error = await transport
      .send({
        method: 'POST',
        path: '/',
        headers: {},
        body: '{}',
        deadline: Date.now() + 5_000,
        unsafeToRepeat: true,
      })
      .catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ kind: 'connect', reach: 'not_sent' });
  });
});

describe('a connection opened as the container starts (lib/gateway/connect-at-start.ts)', () => {
  it('is taken by the first transport of its origin, for its first call', async () => {
    // Prepare: opened before any client exists, as a function's first import opens it.
    const end = await farEnd();
    closing.push(() => end.close());
    const accepted = once(end.server, 'connection');
    connectAtStart(`${end.url}/merchant/v1`);
    await accepted;

    // Act
    const transport = new Transport(end.url, { connectTimeoutMs: 1_000 });
    closing.push(() => transport.close());
    const answer = await transport.send({
      method: 'GET',
      path: '/',
      headers: {},
      deadline: Date.now() + 5_000,
    });

    // Assess
    expect(answer.status).toBe(200);
    expect(end.counts).toEqual({ connections: 1, requests: 1, lost: 0 });
  });

  it('settles once its connect(2) has been issued, which Node defers to a later turn of the event loop', async () => {
    // Prepare
    const end = await farEnd();
    closing.push(() => end.close());

    // Act: what the container's start awaits (lib/gateway/connect-at-start.ts), nothing else.
    await connectAtStart(`${end.url}/merchant/v1`);

    // Assess: the socket has its local port, which the kernel gives it when it connects.
    const connection = takeStarted(end.url)!;
    closing.push(async () => connection.close());
    expect(connection.socket.localPort).toBeGreaterThan(0);
  });

  it.each([undefined, '', 'not a url', 'ftp://127.0.0.1:9'])(
    'opens nothing for a base URL of %j',
    async (url) => {
      await expect(connectAtStart(url)).resolves.toBeUndefined();
    },
  );
});

describe('after a freeze, the far end having dropped the kept-alive socket', () => {
  it.each([
    ['a read', false, KEEP_ALIVE_MS + 1],
    ['a money request', true, STALE_AFTER_IDLE_MS + 1],
  ])(
    '%s goes on one new connection, opened as the request begins, and nothing on the dead one',
    async (_, money, idleMs) => {
      // Prepare: one exchange, then the container freezes while the far end drops its socket.
      const { end, transport, send, freeze } = await setUp();
      await send(false);
      end.drop();
      freeze(idleMs);

      // Act: the request begins its work (the budget's slot...), then calls.
      const accepted = once(end.server, 'connection');
      void transport.preload(money);
      await accepted;
      const answer = await send(money);

      // Assess
      expect(answer.status).toBe(200);
      expect(end.counts).toEqual({ connections: 2, requests: 2, lost: 0 });
    },
  );

  it('a connection still opening when the container froze is not used: the charge goes on a new one', async () => {
    // Prepare: a request opened the connection ahead of a call it never made (its read was shared),
    // and the container froze before the handshake's end was processed; the far end then forgot it.
    const { end, transport, send, freeze } = await setUp();
    const accepted = once(end.server, 'connection');
    transport.connectEarly(true);
    freeze(10 * 60_000);
    await accepted;
    for (let i = 0; i < 5; i++) await turn();
    end.drop();

    // Act
    const answer = await send(true);

    // Assess: nothing written on the forgotten connection.
    expect(answer.status).toBe(200);
    expect(end.counts).toEqual({ connections: 2, requests: 1, lost: 0 });
  });

  it('a read whose socket sat idle less than undici keeps one reuses it: no needless handshake', async () => {
    // Prepare
    const { end, transport, send, freeze } = await setUp();
    await send(false);
    freeze(KEEP_ALIVE_MS - 1);

    // Act
    await transport.preload(false);
    await send(false);

    // Assess
    expect(end.counts).toEqual({ connections: 1, requests: 2, lost: 0 });
  });

  it('a money request on a socket the far end dropped unseen is lost once, never written again by the transport', async () => {
    // Prepare: dropped a moment after its last exchange, too soon to suspect it.
    const { end, send, freeze } = await setUp();
    await send(false);
    end.drop();
    freeze(STALE_AFTER_IDLE_MS - 1);

    // Act
    const error = await send(true).catch((e: unknown) => e);

    // Assess: its outcome is unknown to the caller (lib/gateway/client.ts reconciles it, never resends).
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ kind: 'reset', reach: 'lost' });
    expect(end.counts).toEqual({ connections: 1, requests: 1, lost: 1 });
  });
});

/** A charge's request with `ms` to its deadline: its failure, or its answer. */
function chargeWithin(transport: Transport, ms: number): Promise<unknown> {
  return transport
    .send({
      method: 'POST',
      path: '/merchant/v1/payment/charge',
      headers: {},
      body: '{}',
      deadline: Date.now() + ms,
      unsafeToRepeat: true,
    })
    .catch((error: unknown) => error);
}

describe('a call whose connection has not come by its deadline', () => {
  /** A far end that takes the TCP connection and never answers TLS's first message. */
  async function silentTls() {
    const sockets = new Set<Socket>();
    const server = createTcpServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closing.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    });
    return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it.each([
    ['its own connection', false],
    ['a connection opened ahead', true],
  ])('ends at its deadline, not sent, waiting on %s', async (_, early) => {
    // Prepare: a connect timeout well past the call's deadline.
    const transport = new Transport(await silentTls(), { connectTimeoutMs: 2_000 });
    closing.push(() => transport.close());
    if (early) transport.connectEarly(true);
    const started = performance.now();

    // Act
    const failure = await chargeWithin(transport, 200);
    const tookMs = performance.now() - started;

    // Assess: a charge that never left is said so (its key is released, not left unknown).
    expect(failure).toBeInstanceOf(TransportError);
    expect(failure).toMatchObject({ kind: 'timeout', reach: 'not_sent' });
    // Its connect timeout (2 s) is what it waited for before; a loaded machine's lag is allowed.
    expect(tookMs).toBeLessThan(1_500);
  });

  it('waiting for a free socket of the pool, ends at its deadline not sent, and is never written', async () => {
    // Prepare: every socket of the pool (16) held by a read the far end does not answer yet.
    let charges = 0;
    const held: Array<() => void> = [];
    const server: Server = createServer((req, res) => {
      if (req.url?.endsWith('/charge')) {
        charges++;
        res.end('{}');
      } else held.push(() => res.end('{}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const transport = new Transport(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, {
      connectTimeoutMs: 1_000,
    });
    closing.push(
      () => transport.close(),
      async () => {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      },
    );
    const reads = Array.from({ length: 16 }, () =>
      transport.send({ method: 'GET', path: '/merchant/v1/x', headers: {}, deadline: Date.now() + 10_000 }),
    );
    while (held.length < 16) await delay(5);

    // Act
    const failure = await chargeWithin(transport, 200);
    for (const answer of held) answer();
    await Promise.all(reads);

    // Assess
    expect(failure).toMatchObject({ kind: 'timeout', reach: 'not_sent' });
    expect(charges).toBe(0);
  });
});
