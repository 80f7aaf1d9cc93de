import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** PayHere's connect budget: a handshake that takes longer than this will not finish usefully. */
export const CONNECT_TIMEOUT_MS = 3_000;

/** What undici's connector is called with, and calls back (lib/gateway/transport.ts's Pool). */
export type ConnectCallback = (error: Error | null, socket: Socket | null) => void;

/**
 * One connection to PayHere opened ahead of the call that will use it, so that the TCP and TLS
 * handshakes run while the request does its other work (the DynamoDB round trips, undici's
 * evaluation) instead of after it. Only a socket: no byte of any request is written on it until
 * undici's pool takes it (Transport's connector) for a call. Opened as undici's connector opens
 * one (HTTP/1.1 by ALPN, keep-alive, no Nagle), and unreferenced until taken, so that it keeps no
 * process alive. Its failure is its own: a call whose connection failed (before it was taken or
 * while the call waited for it) connects as it would have without it, and fails, if it does, as
 * undici says.
 */
export class EarlyConnection {
  readonly socket: Socket;
  /** Settles once the handshakes are done (true) or failed (false); never rejects. */
  readonly #ready: Promise<boolean>;
  #failed = false;
  #settled = false;
  readonly #ignoreErrors = () => {};
  readonly #timeoutMs: number;
  /** When the handshakes finished (epoch ms on the transport's clock). */
  #connectedAt: number | undefined;
  /** When the connection was opened (the same clock). */
  readonly #openedAt: number;
  /** Settles once connect(2) was issued (after the name's lookup, for a host name) or the socket closed. */
  readonly #attempted: Promise<void>;

  constructor(origin: URL, timeoutMs: number, now: () => number) {
    this.#openedAt = now();
    this.#timeoutMs = timeoutMs;
    const https = origin.protocol === 'https:';
    const hostname = origin.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = Number(origin.port) || (https ? 443 : 80);
    this.socket = https
      ? tlsConnect({
          host: hostname,
          port,
          // No SNI for an address (as undici sends none): the certificate is checked for it.
          ...(isIP(hostname) ? {} : { servername: hostname }),
          ALPNProtocols: ['http/1.1'],
        })
      : tcpConnect({ host: hostname, port });
    this.socket.setKeepAlive(true, 60_000).setNoDelay(true).unref();
    this.#attempted = new Promise((resolve) => {
      this.socket.once('connectionAttempt', () => resolve());
      this.socket.once('close', () => resolve());
    });
    const timer = setTimeout(() => this.socket.destroy(), timeoutMs);
    timer.unref();
    this.#ready = new Promise((resolve) => {
      const settle = (connected: boolean) => {
        if (this.#settled) return;
        this.#settled = true;
        clearTimeout(timer);
        // Finished later than its own time limit allows: only across a freeze, whose thaw processes
        // the handshake's last bytes before the overdue timer. The far end (or a NAT between) may
        // have forgotten the connection meanwhile, unseen: it is not used.
        const late = connected && now() - this.#openedAt > timeoutMs;
        if (late) this.socket.destroy();
        this.#failed = !connected || late;
        if (connected && !late) this.#connectedAt = now();
        resolve(connected && !late);
      };
      this.socket.once(https ? 'secureConnect' : 'connect', () => settle(true));
      this.socket.once('close', () => settle(false));
    });
    // Until undici takes it, a failure (refused, a bad certificate, the far end going away) is
    // this connection's alone: it ends as `close`, which settles it.
    this.socket.on('error', this.#ignoreErrors);
  }

  /**
   * Settles once connect(2) has been issued (Node issues it on a later turn of the event loop, after
   * the lookup for a host name), the socket closed, or `maxMs` passed; never rejects.
   */
  attempted(maxMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, maxMs);
      timer.unref();
      void this.#attempted.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * Whether the connection may still serve a call: not failed, not closed, and, once connected,
   * not idle past `maxIdleMs` (a socket that waited that long may have died unnoticed).
   */
  usable(now: number, maxIdleMs: number): boolean {
    if (this.#failed || this.socket.destroyed || !this.socket.writable) return false;
    // Still opening: as long as a handshake may take; connected: as long as a socket may sit idle.
    if (this.#connectedAt === undefined) return now - this.#openedAt <= this.#timeoutMs;
    return now - this.#connectedAt <= maxIdleMs;
  }

  /**
   * Hand the socket to undici's pool once connected; if the connect failed meanwhile, or the socket
   * closed, `otherwise` connects as the call would have.
   */
  handOver(callback: ConnectCallback, otherwise: (callback: ConnectCallback) => void): void {
    // A call waits for it now: it holds the process as the call's own connect would.
    this.socket.ref();
    void this.#ready.then((connected) => {
      if (!connected || this.socket.destroyed || !this.socket.writable) return otherwise(callback);
      this.socket.off('error', this.#ignoreErrors);
      callback(null, this.socket);
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

/** Connections opened as the container started (connectAtStart), by origin, until a transport takes one. */
const started = new Map<string, EarlyConnection>();

/** How long a container's start waits for its early connection's connect(2) to be issued (a name's lookup). */
export const ATTEMPT_WAIT_MS = 20;

/**
 * Open a connection to `baseUrl`'s origin now, before the container's code is evaluated, for the
 * first transport of that origin to take (takeStarted). Settles once its connect(2) has been issued
 * (at most ATTEMPT_WAIT_MS): Node issues it on a later turn of the event loop, which a module's
 * evaluation never gives, so a start that did not wait would send TCP's first packet only once the
 * whole bundle is evaluated, and the handshakes would follow the import instead of overlapping it.
 * A base URL that does not parse, or is not HTTP, opens nothing: the configuration says what is
 * wrong with it when it is read.
 */
export function connectAtStart(baseUrl: string | undefined): Promise<void> {
  let origin: URL;
  try {
    origin = new URL(new URL(baseUrl ?? '').origin);
  } catch {
    return Promise.resolve();
  }
  if (origin.protocol !== 'https:' && origin.protocol !== 'http:') return Promise.resolve();
  let connection = started.get(origin.origin);
  if (!connection) {
    connection = new EarlyConnection(origin, CONNECT_TIMEOUT_MS, Date.now);
    started.set(origin.origin, connection);
  }
  return connection.attempted(ATTEMPT_WAIT_MS);
}

/** The connection opened at the container's start for `origin`, once: the first transport takes it. */
export function takeStarted(origin: string): EarlyConnection | undefined {
  const connection = started.get(origin);
  started.delete(origin);
  return connection;
}
