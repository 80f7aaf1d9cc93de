import type { Dispatcher, Pool } from 'undici';
import { type CountMetric, countMetric, timeMetric } from '../log/metrics.ts';
import { nextTurn } from '../net/background.ts';
import { errorCode, networkFailureKind } from '../net/failure.ts';
import { allWritten } from '../net/outbound.ts';

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
 * "A cold container's first answer"). esbuild keeps it in the function's one bundle.
 */
let undici: Promise<Undici> | undefined;
/** undici's Pool, and its `request` (what undici's main entry puts on every dispatcher), called on a pool. */
interface Undici {
  Pool: typeof Pool;
  request: (this: Pool, options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;
}
const loadUndici = () => {
  // A load that failed is not kept: the next call tries again.
  undici ??= Promise.all([
    import('undici/lib/dispatcher/pool.js'),
    import('undici/lib/api/api-request.js'),
  ]).then(
    ([pool, request]) => ({ Pool: pool.default, request: request.default }),
    (error: unknown) => {
      undici = undefined;
      throw error;
    },
  );
  return undici;
};

/** One keep-alive pool for the gateway's origin; every call carries its own deadline. */
export class Transport {
  readonly #origin: string;
  readonly #basePath: string;
  readonly #options: { connect: { timeout: number }; maxResponseSize: number };
  /** Made by the first call: see loadUndici. */
  #pool: Pool | undefined;
  /** When the pool last finished an exchange, or was made: its sockets were alive then. */
  #lastExchangeAt = 0;

  constructor(baseUrl: string, options: TransportOptions) {
    const url = new URL(baseUrl);
    this.#origin = url.origin;
    this.#basePath = url.pathname.replace(/\/+$/, '');
    this.#options = { connect: { timeout: options.connectTimeoutMs }, maxResponseSize: MAX_RESPONSE_BYTES };
  }

  /**
   * The pool for the next call: a new one for the first call, and for a call that must not be
   * repeated when the pool's sockets have sat idle long enough to be dead (after a Lambda freeze,
   * say): one handshake is cheaper than a charge whose outcome is unknown. The new pool's
   * connection then serves the calls that follow.
   */
  async #poolFor(request: UpstreamRequest): Promise<Pool> {
    const { Pool } = await loadUndici();
    const stale = request.unsafeToRepeat && Date.now() - this.#lastExchangeAt > STALE_AFTER_IDLE_MS;
    if (this.#pool && !stale) return this.#pool;
    void this.#pool?.close().catch(() => {});
    // HTTP/1.1 only: no `allowH2`, whose client is left out of the bundles (plugins/esbuild.cjs).
    this.#pool = new Pool(this.#origin, {
      ...this.#options,
      connections: 16,
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 30_000,
    });
    // No socket of the new pool can have died idle yet.
    this.#lastExchangeAt = Date.now();
    return this.#pool;
  }

  /**
   * A call is coming: load undici now, once the requests already on their way (the budget's writes)
   * have been written, so that its evaluation overlaps their round trips instead of delaying them:
   * a cold container's connections are new, and they connect only while the event loop is free.
   * Resolves when undici is loaded (or its load failed: the call will try again).
   */
  async preload(): Promise<void> {
    if (this.#pool) return;
    // The requests the caller starts in this turn exist by the next one, and are written after.
    await nextTurn();
    await allWritten();
    await loadUndici().catch(() => {});
  }

  async send(request: UpstreamRequest): Promise<UpstreamResponse> {
    const pool = await this.#poolFor(request);
    const { request: send } = await loadUndici();
    const remaining = Math.floor(request.deadline - Date.now());
    // Abandoned before a byte was written: whatever waited too long before (a secret, the limiter,
    // a table, undici's load), this request certainly did not reach the gateway.
    if (remaining <= 0) throw new TransportError('timeout', 'DEADLINE_EXCEEDED', undefined, 'not_sent');
    const started = performance.now();
    try {
      const response = await send.call(pool, {
        method: request.method,
        path: this.#basePath + request.path,
        headers: request.headers,
        body: request.body ?? null,
        headersTimeout: remaining,
        bodyTimeout: remaining,
        signal: AbortSignal.timeout(remaining),
      });
      const body = await response.body.text();
      this.#lastExchangeAt = Date.now();
      timeMetric('UpstreamLatency', performance.now() - started);
      countMetric(statusMetric(response.statusCode));
      return { status: response.statusCode, headers: response.headers, body };
    } catch (error) {
      countMetric('UpstreamNoAnswer');
      throw classifyTransportError(error);
    }
  }

  async close(): Promise<void> {
    await this.#pool?.close();
  }
}
