import type { buildConnector, Dispatcher, Pool } from 'undici';
import { type CountMetric, countMetric, timeMetric } from '../log/metrics.ts';
import { nextTurn } from '../net/background.ts';
import { errorCode, networkFailureKind } from '../net/failure.ts';
import { allWritten } from '../net/outbound.ts';
import { withinMs } from '../net/time-limit.ts';
import { type ConnectCallback, EarlyConnection, takeStarted } from './early-connection.ts';

export interface UpstreamRequest {
  method: 'GET' | 'POST';
  /** Path and query below the base URL, e.g. `/merchant/v1/payment/charge`. */
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Epoch milliseconds after which the call is abandoned. */
  deadline: number;
  /**
   * The request must not be repeated (it moves money): it never goes on a keep-alive socket that
   * has been idle long enough to be dead (after a Lambda freeze, say), where a reset would leave
   * its outcome unknown although it never left.
   */
  unsafeToRepeat?: boolean;
}

/** Idle time after which a pooled socket may be dead without anyone having noticed. */
export const STALE_AFTER_IDLE_MS = 1_000;

/**
 * How long undici keeps an idle socket (the pool's keepAliveTimeout). A socket idle longer is one
 * undici would have closed had the process run: only a frozen container (a Lambda between two
 * invocations) still holds one, and its far end has likely closed it meanwhile. No call uses it.
 */
export const KEEP_ALIVE_MS = 4_000;

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** How a call failed below HTTP. */
export type TransportFailureKind = 'connect' | 'timeout' | 'reset' | 'protocol';

/**
 * A call that got no HTTP answer. `reach` is what only the transport knows: `not_sent` when no byte
 * can have reached the gateway (the connection was never established, or the call was abandoned
 * before it was written: its deadline had passed), else `lost`. Only a `not_sent` money request may
 * be tried again.
 */
export class TransportError extends Error {
  readonly kind: TransportFailureKind;
  readonly reach: 'not_sent' | 'lost';
  readonly code: string | undefined;

  constructor(
    kind: TransportFailureKind,
    code: string | undefined,
    cause: unknown,
    reach?: 'not_sent' | 'lost',
  ) {
    super(`upstream ${kind} failure${code ? ` (${code})` : ''}`, { cause });
    this.name = 'TransportError';
    this.kind = kind;
    this.reach = reach ?? (kind === 'connect' ? 'not_sent' : 'lost');
    this.code = code;
  }
}

/** Classify an error thrown by undici by its stable `code` (or the abort reason), never by class. */
export function classifyTransportError(error: unknown): TransportError {
  if (error instanceof TransportError) return error;
  const code = errorCode(error);
  const kind = networkFailureKind(code);
  const name = (error as { name?: unknown } | null)?.name;
  if (kind === 'connect') return new TransportError('connect', code, error);
  if (kind === 'timeout' || name === 'TimeoutError' || name === 'AbortError') {
    return new TransportError('timeout', code ?? String(name), error);
  }
  if (kind === 'reset') return new TransportError('reset', code, error);
  return new TransportError('protocol', code, error);
}

export interface TransportOptions {
  connectTimeoutMs: number;
  /** Clock of the idle times (tests move it by hand). */
  now?: () => number;
}

/**
 * Answers larger than this are abandoned. Every PayHere answer is one order's, one payment's or one
 * subscription's, but one: its list of every subscription grows with the merchant and comes whole
 * (PayHere does not page it), so this is sized for a merchant with tens of thousands of them, read
 * once per listing and paged by the service (docs/contract.md "Subscription lists").
 */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

function statusMetric(status: number): CountMetric {
  if (status === 429) return 'UpstreamStatus429';
  if (status >= 500) return 'UpstreamStatus5xx';
  return status >= 400 ? 'UpstreamStatus4xx' : 'UpstreamStatus2xx';
}

/**
 * undici's Pool, the one dispatcher the client uses, loaded by the first call that needs it rather
 * than at import: a container whose first requests are answered without PayHere (shared reads,
 * replays, refusals) never pays for it. Its own module, not undici's main entry, which evaluates
 * fetch, WebSocket, the caches and the mocks besides, most of what it would cost (docs/performance.md
 * "A cold container's first answer"); nor its `request`, whose answer is a stream (see exchange).
 * esbuild keeps it in the function's one bundle.
 */
let undici: Promise<Undici> | undefined;
/** undici once loaded. */
let loadedUndici: Undici | undefined;
/** undici's Pool, and the connector a pool makes by default (the pool's module holds it already). */
interface Undici {
  Pool: typeof Pool;
  buildConnector: typeof buildConnector;
}
const loadUndici = () => {
  // A load that failed is not kept: the next call tries again.
  undici ??= Promise.all([
    import('undici/lib/dispatcher/pool.js'),
    import('undici/lib/core/connect.js'),
  ]).then(
    ([pool, connect]) => {
      loadedUndici = { Pool: pool.default, buildConnector: connect.default };
      return loadedUndici;
    },
    (error: unknown) => {
      undici = undefined;
      throw error;
    },
  );
  return undici;
};

/** One keep-alive pool for the gateway's origin; every call carries its own deadline. */
export class Transport {
  readonly #origin: URL;
  readonly #basePath: string;
  readonly #connectTimeoutMs: number;
  readonly #now: () => number;
  /** Made by the first call: see loadUndici. */
  #pool: Pool | undefined;
  /** undici's own connector, for every connection not opened ahead of its call. */
  #connector: buildConnector.connector | undefined;
  /** A connection opened ahead of the call that will take it (EarlyConnection). */
  #early: EarlyConnection | undefined;
  /** When the pool last finished an exchange, or was made: its sockets were alive then. */
  #lastExchangeAt = 0;

  constructor(baseUrl: string, options: TransportOptions) {
    const url = new URL(baseUrl);
    this.#origin = new URL(url.origin);
    this.#basePath = url.pathname.replace(/\/+$/, '');
    this.#connectTimeoutMs = options.connectTimeoutMs;
    this.#now = options.now ?? Date.now;
    // Opened as the container started (lib/gateway/connect-at-start.ts), if it was.
    this.#early = takeStarted(this.#origin.origin);
  }

  /**
   * Idle time past which a pooled socket is not used for a call: one that must not be repeated
   * (a money request) risks no socket that may have died idle, whatever the cost of a handshake; a
   * read no socket undici itself would have closed by now (KEEP_ALIVE_MS).
   */
  #stale(unsafeToRepeat: boolean | undefined): boolean {
    return this.#now() - this.#lastExchangeAt > (unsafeToRepeat ? STALE_AFTER_IDLE_MS : KEEP_ALIVE_MS);
  }

  /**
   * The pool for the next call: a new one for the first call, and for a call whose idle pool may
   * hold dead sockets (#stale): after a Lambda freeze, say, its far end has likely closed them,
   * and one handshake is cheaper than a call written to a dead socket (a charge's outcome unknown,
   * a read's slot of PayHere's budget spent for nothing). The new pool's connection then serves
   * the calls that follow.
   */
  async #poolFor(request: UpstreamRequest): Promise<Pool> {
    const { Pool } = await loadUndici();
    if (this.#pool && !this.#stale(request.unsafeToRepeat)) return this.#pool;
    void this.#pool?.close().catch(() => {});
    // HTTP/1.1 only: no `allowH2`, whose client is left out of the bundles (plugins/esbuild.cjs).
    this.#pool = new Pool(this.#origin.origin, {
      connect: (options, callback) => this.#connect(options, callback as ConnectCallback),
      maxResponseSize: MAX_RESPONSE_BYTES,
      connections: 16,
      keepAliveTimeout: KEEP_ALIVE_MS,
      keepAliveMaxTimeout: 30_000,
    });
    // No socket of the new pool can have died idle yet.
    this.#lastExchangeAt = this.#now();
    return this.#pool;
  }

  /** The pool's connector: the connection opened ahead of the call if it is still good, else undici's. */
  #connect(options: buildConnector.Options, callback: ConnectCallback): void {
    const connect = (then: ConnectCallback) => {
      this.#connector ??= this.#undiciConnector();
      this.#connector(options, then as buildConnector.Callback);
    };
    const early = this.#early;
    this.#early = undefined;
    if (early?.usable(this.#now(), STALE_AFTER_IDLE_MS)) early.handOver(callback, connect);
    else {
      early?.close();
      connect(callback);
    }
  }

  #undiciConnector(): buildConnector.connector {
    // Loaded by then: only a pool, made once undici is, calls its connector.
    const { buildConnector } = loadedUndici!;
    return buildConnector({ timeout: this.#connectTimeoutMs });
  }

  /**
   * A call to PayHere is coming (`unsafeToRepeat`: a money request): open its connection now,
   * unless the pool holds a socket the call may use or one is already opening. The handshakes
   * then overlap what the request does before its call. Nothing is written on the connection: the
   * call's own request is its first. Called at a container's start (lib/gateway/index.ts) and when
   * a request begins its work towards a call (preload).
   */
  connectEarly(unsafeToRepeat = false): void {
    const pooled = this.#pool && !this.#stale(unsafeToRepeat) && this.#pool.stats.connected > 0;
    if (pooled) return;
    if (this.#early?.usable(this.#now(), STALE_AFTER_IDLE_MS)) return;
    this.#early?.close();
    this.#early = new EarlyConnection(this.#origin, this.#connectTimeoutMs, this.#now);
  }

  /**
   * A call is coming: open its connection (connectEarly) and load undici, once the requests already
   * on their way (the budget's writes) have been written, so that neither holds them up: a cold
   * container's connections are new, and they connect only while the event loop is free. The
   * connection goes first: its handshakes are mostly waiting, undici's evaluation is not. Resolves
   * when undici is loaded (or its load failed: the call will try again).
   */
  async preload(unsafeToRepeat = false): Promise<void> {
    if (this.#pool && !this.#stale(unsafeToRepeat) && this.#pool.stats.connected > 0) return;
    // The requests the caller starts in this turn exist by the next one, and are written after.
    await nextTurn();
    await allWritten();
    this.connectEarly(unsafeToRepeat);
    await loadUndici().catch(() => {});
  }

  async send(request: UpstreamRequest): Promise<UpstreamResponse> {
    const pool = await this.#poolFor(request);
    const remaining = Math.floor(request.deadline - Date.now());
    // Abandoned before a byte was written: whatever waited too long before (a secret, the limiter,
    // a table, undici's load), this request certainly did not reach the gateway.
    if (remaining <= 0) throw new TransportError('timeout', 'DEADLINE_EXCEEDED', undefined, 'not_sent');
    const started = performance.now();
    try {
      const response = await withinMs(remaining, (signal) =>
        exchange(
          pool,
          {
            method: request.method,
            path: this.#basePath + request.path,
            headers: request.headers,
            body: request.body ?? null,
            headersTimeout: remaining,
            bodyTimeout: remaining,
          },
          signal,
        ),
      );
      this.#lastExchangeAt = this.#now();
      timeMetric('UpstreamLatency', performance.now() - started);
      countMetric(statusMetric(response.status));
      return response;
    } catch (error) {
      countMetric('UpstreamNoAnswer');
      throw classifyTransportError(error);
    }
  }

  async close(): Promise<void> {
    this.#early?.close();
    this.#early = undefined;
    await this.#pool?.close();
  }
}

/**
 * One request on `pool`, its answer collected whole: what undici's `request` does for a caller
 * that reads the body as text, without the stream it makes of the body (its module, and building
 * and draining the stream, were a first answer's cost for nothing: every answer is read whole).
 * The same dispatch and the same failures: `signal` aborts the request (its reason is the error),
 * and every failure, before the answer or during its body, rejects. Aborted before undici is
 * about to write it (onConnect: still waiting for a connection, a handshake or a free socket of
 * the pool), the request rejects at once as not sent, and undici drops it unwritten when its turn
 * comes: the deadline holds whatever the connection does, and nothing reached the gateway.
 */
function exchange(
  pool: Pool,
  options: Dispatcher.DispatchOptions,
  signal: AbortSignal,
): Promise<UpstreamResponse> {
  return new Promise((resolve, reject) => {
    let abort: ((reason?: Error) => void) | undefined;
    let status = 0;
    let headers: UpstreamResponse['headers'] = {};
    const chunks: Buffer[] = [];
    const aborted = () => {
      if (abort) abort(signal.reason);
      else reject(new TransportError('timeout', 'DEADLINE_EXCEEDED', signal.reason, 'not_sent'));
    };
    signal.addEventListener('abort', aborted, { once: true });
    const settled = () => signal.removeEventListener('abort', aborted);
    try {
      pool.dispatch(options, {
        onConnect(abortRequest) {
          if (signal.aborted) abortRequest(signal.reason);
          else abort = abortRequest;
        },
        onHeaders(statusCode, rawHeaders) {
          // An interim answer (1xx): the final one follows.
          if (statusCode < 200) return true;
          status = statusCode;
          headers = headersOf(rawHeaders);
          return true;
        },
        onData(chunk) {
          chunks.push(chunk);
          return true;
        },
        onComplete() {
          settled();
          resolve({ status, headers, body: Buffer.concat(chunks).toString('utf8') });
        },
        onError(error) {
          settled();
          reject(error);
        },
      });
    } catch (error) {
      settled();
      reject(error);
    }
  });
}

/** An answer's raw headers (name, value, ...) by lower-case name; a repeated one as a list, in order. */
function headersOf(raw: readonly Buffer[]): UpstreamResponse['headers'] {
  const headers: UpstreamResponse['headers'] = Object.create(null);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1').toLowerCase();
    const value = raw[i + 1]!.toString('latin1');
    const seen = headers[name];
    headers[name] = seen === undefined ? value : [seen, value].flat();
  }
  return headers;
}
