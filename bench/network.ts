/**
 * The network as production has it, for the comparison with the naive intermediary
 * (bench/first-answer.ts): PayHere reached over TLS, each new connection paying its handshakes'
 * round trips, each request a round trip and PayHere's own work. The stand-in terminates TLS with
 * a certificate made here for the run, signed by a certificate authority made with it, which the
 * processes measured trust as production trusts one (NODE_EXTRA_CA_CERTS: nothing in the service
 * or the naive intermediary skips verification), and passes each connection's requests on to the
 * PayHere sandbox, whose latency fault adds the request's round trip and work.
 */
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';

/** The network a run models; every figure configurable (bench/first-answer-run.ts's flags). */
export interface NetworkModel {
  /** A round trip to PayHere. */
  payhereRttMs: number;
  /** PayHere's own work on a request, on top of its round trip. */
  payhereWorkMs: number;
  /** Round trips a new connection to PayHere costs before its first request (TCP's, then TLS's). */
  handshakeRoundTrips: number;
  /** A DynamoDB request's round trip, its work included; requests are served in parallel. */
  dynamodbRttMs: number;
  /** How long a simulated freeze lasts (a Lambda between invocations), during which PayHere drops the connections. */
  freezeMs: number;
}

/** Sri Lanka from an AWS region near it: tens of ms a round trip (issue 38). */
export const DEFAULT_MODEL: NetworkModel = {
  payhereRttMs: 30,
  payhereWorkMs: 70,
  handshakeRoundTrips: 2,
  dynamodbRttMs: 5,
  // Past undici's keep-alive (lib/gateway/transport.ts KEEP_ALIVE_MS), short of the local
  // DynamoDB's, whose sockets are not what this measures.
  freezeMs: 4_500,
};

/** The model in one line, as the bench prints it. */
export function describeModel(model: NetworkModel): string {
  return `PayHere over TLS, ${model.payhereRttMs} ms a round trip; a new connection ${model.handshakeRoundTrips} round trips before its first request (TCP's when accepted, then TLS's once the client's hello arrives, over a TLS 1.3 handshake on loopback); each request a round trip and ${model.payhereWorkMs} ms of PayHere's work (${model.payhereRttMs + model.payhereWorkMs} ms); DynamoDB ${model.dynamodbRttMs} ms a request, served in parallel, over plain HTTP on loopback; a freeze ${model.freezeMs} ms, during which PayHere drops every connection without a word (the next bytes sent on one are answered by a reset, as a NAT or a server that went away answers them)`;
}

export interface TlsFiles {
  /** The certificate authority the measured processes trust (NODE_EXTRA_CA_CERTS). */
  caFile: string;
  key: string;
  cert: string;
}

/**
 * The bench's certificate authority and the server certificate for 127.0.0.1 it signed (bench/tls/,
 * P-256, valid until 2126; the authority's key was thrown away once it had signed): made once with
 * `openssl`, so that running the bench needs no tool beyond Node on any machine. They protect
 * nothing: the key is for a stand-in on loopback, trusted by the bench's own child processes only.
 */
export async function makeCertificates(): Promise<TlsFiles> {
  const dir = path.join(import.meta.dirname, 'tls');
  return {
    caFile: path.join(dir, 'ca.pem'),
    key: await readFile(path.join(dir, 'server.key'), 'utf8'),
    cert: await readFile(path.join(dir, 'server.pem'), 'utf8'),
  };
}

export interface StandInCounters {
  /** TCP connections accepted: each one a handshake its client pays. */
  connections: number;
  /** TLS handshakes completed. */
  handshakes: number;
  /** Requests written to a connection PayHere had dropped: each one answered by a reset. */
  failedCalls: number;
}

export interface TlsStandIn {
  /** https://127.0.0.1:<port>: PayHere's base URL for the processes measured. */
  url: string;
  /** http://127.0.0.1:<port>: GET /counters, POST /drop, for the processes measured (bench/cold-child.ts). */
  controlUrl: string;
  counters(): StandInCounters;
  /** PayHere drops every open connection without a word: the next bytes on one get a reset. */
  drop(): void;
  close(): Promise<void>;
}

/**
 * PayHere's stand-in: TLS in front of the sandbox at `target` (its plain port), with the model's
 * handshake round trips. The per-request round trip and work are the sandbox's latency fault
 * (bench/environment.ts `distant()`).
 */
export async function startTlsStandIn(options: {
  target: number;
  model: NetworkModel;
  tls: Pick<TlsFiles, 'key' | 'cert'>;
}): Promise<TlsStandIn> {
  const { model } = options;
  const counters: StandInCounters = { connections: 0, handshakes: 0, failedCalls: 0 };
  /** The client's connection, by the port its bytes come to the TLS server from. */
  const clients = new Map<number, Socket>();
  const open = new Set<{ client: Socket; dropped: boolean; upstream: Socket }>();

  // TLS, terminated here; the requests go on to the sandbox in the clear.
  const tls = createTlsServer({ key: options.tls.key, cert: options.tls.cert });
  tls.on('tlsClientError', () => {});
  tls.on('secureConnection', (secure: TLSSocket) => {
    counters.handshakes++;
    const client = clients.get(secure.remotePort ?? -1);
    const upstream = connect({ host: '127.0.0.1', port: options.target });
    const connection = { client: client ?? secure, dropped: false, upstream };
    open.add(connection);
    secure.on('data', (chunk: Buffer) => {
      if (!connection.dropped) {
        upstream.write(chunk);
        return;
      }
      // Bytes on a connection PayHere dropped: a reset, and the request is lost.
      counters.failedCalls++;
      open.delete(connection);
      connection.client.resetAndDestroy();
      secure.destroy();
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!connection.dropped) secure.write(chunk);
    });
    // The sandbox closing its side (its keep-alive) closes the client's.
    upstream.on('end', () => {
      if (!connection.dropped) secure.end();
    });
    for (const side of [secure, upstream]) side.on('error', () => {});
    secure.on('close', () => {
      open.delete(connection);
      upstream.destroy();
    });
  });
  await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
  const tlsPort = (tls.address() as AddressInfo).port;

  // What the client connects to: TCP's round trip from the moment its connection is accepted,
  // then TLS's, once its hello is in, before the hello goes on to the TLS server.
  const rtt = model.payhereRttMs;
  const server: Server = createServer((client) => {
    counters.connections++;
    const accepted = performance.now();
    client.on('error', () => {});
    client.once('data', (hello: Buffer) => {
      client.pause();
      const tcpDone = accepted + (model.handshakeRoundTrips > 0 ? rtt : 0);
      const wait =
        Math.max(0, tcpDone - performance.now()) + Math.max(0, model.handshakeRoundTrips - 1) * rtt;
      setTimeout(() => {
        if (client.destroyed) return;
        const inner = connect({ host: '127.0.0.1', port: tlsPort }, () => {
          clients.set(inner.localPort!, client);
          inner.write(hello);
          client.pipe(inner);
          inner.pipe(client);
          client.resume();
        });
        inner.on('error', () => client.destroy());
        inner.on('close', () => {
          if (inner.localPort !== undefined) clients.delete(inner.localPort);
          client.destroy();
        });
        client.on('close', () => inner.destroy());
      }, wait);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const control: HttpServer = createHttpServer((req, res) => {
    if (req.method === 'POST' && req.url === '/drop') {
      drop();
      res.end('{}');
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(counters));
  });
  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));

  function drop(): void {
    for (const connection of open) {
      connection.dropped = true;
      connection.upstream.destroy();
    }
  }

  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    controlUrl: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
    counters: () => ({ ...counters }),
    drop,
    close: async () => {
      for (const connection of open) connection.client.destroy();
      for (const client of clients.values()) client.destroy();
      control.closeAllConnections();
      await Promise.all([
        new Promise((resolve) => server.close(resolve)),
        new Promise((resolve) => tls.close(resolve)),
        new Promise((resolve) => control.close(resolve)),
      ]);
    },
  };
}
