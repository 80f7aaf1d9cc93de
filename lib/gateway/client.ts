// About 460 lines, one file: GatewayClient.call is one loop (share, slot, send, classify, retry,
// token renewal, release), and every branch of it reads the same attempt's state; split, a retry's
// rules would live away from the loop that applies them.
import { type CallerShares, callers, type ShareTaken } from '../budget/caller-shares.ts';
import type { AcquireOptions, GatewayLimiter, Permit } from '../budget/limiter.ts';
import { defaultSleep } from '../budget/window-limiter.ts';
import type { CredentialsProvider } from '../config/config.ts';
import {
  ApiError,
  CallerRateLimitedError,
  GatewayError,
  GatewayTimeoutError,
  GatewayUnavailableError,
  notSent,
  RateLimitedError,
  reached,
} from '../envelope/errors.ts';
import { log } from '../log/log.ts';
import { inBackground } from '../net/background.ts';
import { type Failure, parseRetryAfter, retryDelayMs, shouldRetryGatewayCall } from './policy.ts';
import { Reservation } from './reservation.ts';
import { OAuthError, TokenAnswer, UpstreamEnvelope } from './schemas.ts';
import { type IssuedToken, TokenCache, type TokenSource } from './token.ts';
import { type Transport, TransportError, type UpstreamResponse } from './transport.ts';

export interface GatewayCall {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  /**
   * A request that changes state at the gateway (a charge, capture, refund, retry or cancel): sent
   * at most once, never on a possibly dead socket, never again after any HTTP answer.
   */
  money: boolean;
  /** Epoch milliseconds. */
  deadline: number;
  /** A bare 404 (no envelope) is an answer for this call ("no such record"), not a wrong path. */
  allowNotFound?: boolean;
  /**
   * A read that settles a money request (a lost charge's search): a money call to the budget, so
   * that reads cannot starve it (it may use the reserved share unless a customer's, and reads leave
   * it the slot of the shared part it waits for).
   */
  reconciliation?: boolean;
  /** The share and slot its first attempt uses, taken before (GatewayClient.reserve); a read's only. */
  reservation?: Reservation;
}

export interface GatewayAnswer {
  httpStatus: number;
  envelope: UpstreamEnvelope;
  /** The 404 came without PayHere's envelope (its router's, for an `allowNotFound` call). */
  bare?: true;
}

/**
 * A money request may have reached the gateway but no usable answer came back. Only the operation
 * knows how to settle it (a charge searches its order), so this is not an ApiError.
 */
export class LostAnswerError extends Error {
  constructor(cause: unknown) {
    super('the answer to a money request was lost', { cause });
    this.name = 'LostAnswerError';
  }
}

export interface GatewayClientOptions {
  transport: Transport;
  credentials: CredentialsProvider;
  limiter: GatewayLimiter;
  /** Each caller's share of the budget, counted before its calls (none: no caller is limited). */
  shares?: CallerShares;
  /** Where the access token comes from; by default a token of this container's own. */
  tokens?: (fetchToken: (deadline: number) => Promise<IssuedToken>) => TokenSource;
  /** The clock a retry's pause is waited and measured on against the deadline (real time by default). */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** How long everyone waits after a 429 from PayHere that named no Retry-After. */
export const PAUSE_AFTER_429_MS = 10_000;

/** What a caller learns of the service's own configuration; the operator finds the rest in the log. */
const MISCONFIGURED = 'The payment service is misconfigured; try again later.';

/** PayHere's documented envelope for a refused token (docs/payhere.md "Envelope and generic errors"). */
const AUTHENTICATION_ERROR = 'authentication error';

/** Why an attempt gave nothing usable; decides between a retry and the error for the caller. */
type Unusable = { failure: Failure; error: ApiError; retryAfterMs?: number };

/**
 * `oauth`: refused by the OAuth resource server's bearer check (HTTP 401 `invalid_token`), which
 * runs before any request is processed.
 */
type Attempt = { answer: GatewayAnswer } | { tokenRejected: true; oauth: boolean } | { unusable: Unusable };

/**
 * Sends Merchant API calls. Every failure leaves here with its `reach` (lib/envelope/errors.ts):
 * `not_sent` when the transport or PayHere's own refusal before processing proves nothing happened,
 * `lost` (as LostAnswerError) when a money request may have been processed without a usable answer.
 */
export class GatewayClient {
  readonly #transport: Transport;
  readonly #credentials: CredentialsProvider;
  readonly #limiter: GatewayLimiter;
  readonly #shares: CallerShares | undefined;
  readonly #tokens: TokenSource;
  readonly #pauses: Pauses;

  constructor(options: GatewayClientOptions) {
    this.#transport = options.transport;
    this.#credentials = options.credentials;
    this.#limiter = options.limiter;
    this.#shares = options.shares;
    this.#pauses = { now: options.now ?? Date.now, sleep: options.sleep ?? defaultSleep };
    const fetchToken = (deadline: number) => this.#fetchToken(deadline);
    this.#tokens = options.tokens ? options.tokens(fetchToken) : new TokenCache(fetchToken);
  }

  /** Open PayHere's connection ahead of the calls to come (Transport.connectEarly). */
  connectEarly(): void {
    this.#transport.connectEarly();
  }

  /** A call may follow (a read looking for a shared answer first): see TokenSource.preload. */
  prepare(): void {
    this.#tokens.preload?.();
  }

  /**
   * A read whose shared answer is probably missing takes its caller's share and a slot of the
   * budget now, beside its lookup, rather than after it (one round trip before PayHere's call, not
   * three), and loads undici meanwhile. None for a caller this container saw refused in a window
   * still running: its share is checked alone first, so that it cannot make the service take slots;
   * nor for one it saw beyond its share: its slot is a spare one, taken once its share is counted.
   */
  reserve(deadline: number): Reservation | undefined {
    if (this.#shares?.likelyRefused() || this.#shares?.likelyBeyondShare()) return undefined;
    this.prepare();
    const share = this.#share(false);
    const unwanted = new AbortController();
    const slot = this.#slot('read', deadline, undefined, { signal: unwanted.signal });
    void this.#transport.preload();
    return new Reservation(share, slot, unwanted);
  }

  /**
   * Send one Merchant API call and return its envelope, whatever its `status` (the operation
   * interprets business results). Throws an ApiError for transport and protocol failures, or
   * LostAnswerError for a money request whose answer is unusable.
   */
  async call(call: GatewayCall): Promise<GatewayAnswer> {
    try {
      return await this.#call(call);
    } finally {
      // Not used by an attempt (no token, say): given back.
      call.reservation?.cancel();
    }
  }

  async #call(call: GatewayCall): Promise<GatewayAnswer> {
    let token = await this.#token(call.deadline);
    let refreshed = false;
    let replacements = 0;
    let resent = false;
    let failed: Unusable | undefined;
    for (let retries = 0, attempts = 0; ; retries++, attempts++) {
      // A money request counts as one against its caller's money share, with its first attempt.
      const money = call.money && attempts === 0;
      const reservation =
        attempts === 0 && !call.money && !call.reconciliation ? call.reservation : undefined;
      const outcome = await this.#attempt(call, token, failed && givenUp(call, failed), money, reservation);
      if ('answer' in outcome) return outcome.answer;
      if ('tokenRejected' in outcome) {
        // Refused before processing. A money request refused by OAuth's bearer check (a revoked
        // or expired token) goes out once more, on a token fetched here and now, so its caller
        // gets the request's own answer; refused otherwise, or again, it is reported as not sent,
        // and its caller may repeat it with the same key. A read is repeated with a fresh token; a
        // replacement another container fetched earlier may be stale too (all tokens expired at
        // once): it is replaced in turn, and only a token fetched here after a refusal, refused
        // again, says the credentials are wrong.
        if (call.money) {
          if (!outcome.oauth || resent) {
            await this.#tokens.invalidate(token);
            throw notSent(tokenRefused());
          }
          token = await this.#renewedToken(token, call.deadline);
          resent = true;
          retries--;
          continue;
        }
        await this.#tokens.invalidate(token);
        if (refreshed && (this.#tokens.fetchedHere(token) || replacements >= 2)) {
          throw notSent(credentialsRejected());
        }
        token = await this.#token(call.deadline);
        refreshed = true;
        replacements++;
        retries--;
        continue;
      }
      const { unusable } = outcome;
      if (!(await backoff(this.#pauses, call.money, call.deadline, unusable, retries)))
        throw givenUp(call, unusable);
      failed = unusable;
    }
  }

  /** The access token; whatever goes wrong getting it, the call itself was never sent. */
  async #token(deadline: number): Promise<string> {
    try {
      return await this.#tokens.get(deadline);
    } catch (error) {
      throw error instanceof ApiError ? notSent(error) : error;
    }
  }

  /** A token fetched here after `rejected` was refused; failing that, the call was never sent. */
  async #renewedToken(rejected: string, deadline: number): Promise<string> {
    try {
      return await this.#tokens.renew(rejected, deadline);
    } catch (error) {
      throw error instanceof ApiError ? notSent(error) : error;
    }
  }

  /**
   * A slot of PayHere's budget; refused, the call was never sent. A retry the budget cannot fit
   * before the deadline throws `retryOf`, the failure that asked for it: the caller hears what went
   * wrong (a timeout, a 503), not that PayHere's budget is spent.
   */
  async #slot(
    kind: 'read' | 'money' | 'token',
    deadline: number,
    retryOf?: Error,
    options: AcquireOptions = {},
  ): Promise<Permit> {
    try {
      return await this.#limiter.acquire(kind, deadline - Date.now(), options);
    } catch (error) {
      if (retryOf && error instanceof RateLimitedError) throw retryOf;
      throw error instanceof ApiError ? notSent(error) : error;
    }
  }

  /** PayHere answered 429: every container waits its Retry-After (or 10 s) before sending again. */
  async #pauseOn429(response: UpstreamResponse): Promise<void> {
    if (response.status !== 429) return;
    const retryAfterMs = parseRetryAfter(response.headers['retry-after'], Date.now());
    await this.#limiter.pause(retryAfterMs ?? PAUSE_AFTER_429_MS);
  }

  /**
   * The caller's share first (one write; beyond its cap 429 caller_rate_limited, nothing sent), then
   * a slot of the budget, a spare one beyond the share. A retry the caller's cap cannot fit throws
   * `retryOf`, as a budget refusal does.
   */
  async #share(money: boolean, retryOf?: Error): Promise<ShareTaken | undefined> {
    try {
      return await this.#shares?.take(money);
    } catch (error) {
      if (retryOf && error instanceof CallerRateLimitedError) throw retryOf;
      throw error;
    }
  }

  async #attempt(
    call: GatewayCall,
    token: string,
    retryOf?: Error,
    money = false,
    reservation?: Reservation,
  ): Promise<Attempt> {
    // A reservation's slot, unless its call is beyond its caller's share: that slot went back, and
    // the call takes a spare one.
    let permit = reservation ? await reservation.use() : undefined;
    if (!permit) {
      let spare = reservation !== undefined;
      let counted: ShareTaken | undefined;
      if (!reservation) {
        const share = this.#share(money, retryOf);
        void this.#transport.preload(call.money);
        counted = await share;
        spare = counted?.beyond === true;
      }
      // Customers (and what notifications make the service confirm) never take the share reserved
      // for the merchant's money calls, the settle job's and the token's; reads still leave their
      // money calls the slots of the shared part they wait for.
      const caller = callers.getStore()?.kind;
      const reserve = caller !== 'customer' && caller !== 'notifications';
      const kind = call.money || call.reconciliation ? 'money' : 'read';
      try {
        permit = await this.#slot(kind, call.deadline, retryOf, { spare, reserve });
      } catch (error) {
        // No slot: the call is not made, and costs its caller nothing of its share.
        if (counted) inBackground(() => counted.giveBack());
        throw error;
      }
    }
    let response: UpstreamResponse;
    try {
      response = await this.#transport.send({
        method: call.method,
        path: call.path,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
        deadline: call.deadline,
        unsafeToRepeat: call.money,
      });
    } catch (error) {
      return { unusable: transportFailure(error) };
    } finally {
      releaseLater(permit);
    }
    await this.#pauseOn429(response);
    return interpretAnswer(response, call.allowNotFound === true);
  }

  async #fetchToken(deadline: number): Promise<{ value: string; expiresInSeconds: number }> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const credentials = await this.#credentials.get();
      const answer = await this.#tokenRequest(credentials.appId, credentials.appSecret, deadline);
      if (answer) return answer;
      // Rejected: the credentials may have rotated; look them up again once.
      this.#credentials.invalidate();
    }
    throw credentialsRejected();
  }

  /** One token request (reads' retry policy applies); undefined when the credentials were rejected. */
  async #tokenRequest(appId: string, appSecret: string, deadline: number) {
    const basic = Buffer.from(`${appId}:${appSecret}`).toString('base64');
    let failed: Unusable | undefined;
    for (let retries = 0; ; retries++) {
      const permit = await this.#slot('token', deadline, failed?.error);
      let unusable: Unusable;
      try {
        const response = await this.#transport.send({
          method: 'POST',
          path: '/merchant/v1/oauth/token',
          headers: {
            authorization: `Basic ${basic}`,
            'content-type': 'application/x-www-form-urlencoded',
            accept: 'application/json',
          },
          body: 'grant_type=client_credentials',
          deadline,
        });
        releaseLater(permit);
        await this.#pauseOn429(response);
        if (response.status === 400 || response.status === 401 || response.status === 403) return undefined;
        const token = response.status === 200 ? TokenAnswer.safeParse(parseJson(response.body)) : undefined;
        if (token?.success)
          return { value: token.data.access_token, expiresInSeconds: token.data.expires_in };
        unusable = statusFailure(response, false);
      } catch (error) {
        releaseLater(permit);
        unusable = transportFailure(error);
      }
      if (!(await backoff(this.#pauses, false, deadline, unusable, retries))) throw unusable.error;
      failed = unusable;
    }
  }
}

/**
 * Free a slot without holding up the answer, not even to make the write (lib/net/background.ts):
 * the caller has what it waited for, and the release only lowers when the slot frees (to the
 * answer's time from the request's deadline). Until it lands, the slot counts as busy until the
 * deadline: later than needed, never too early. So a PayHere call costs its caller one write to
 * the shared table, not two.
 */
function releaseLater(permit: Permit): void {
  inBackground(() => permit.release());
}

function credentialsRejected(): GatewayError {
  log.error('the payment gateway rejected the service credentials', {
    check: 'the app id and secret: the GATEWAY_SECRET_ID secret, or GATEWAY_APP_ID and GATEWAY_APP_SECRET',
  });
  return new GatewayError(MISCONFIGURED);
}

/**
 * A money request whose access token PayHere refused (its "Authentication error" envelope, or
 * OAuth's bearer check again after the one renewal): refused before processing. The token is
 * dropped, so the caller's repeat (with the same key, now released) goes out with a fresh one.
 */
function tokenRefused(): GatewayUnavailableError {
  return new GatewayUnavailableError(
    'The payment gateway refused the service’s access token before processing the request; nothing was processed. ' +
      'Retry with the same Idempotency-Key.',
  );
}

/** The last failure of a call that is not tried again: a money request's lost answer is reconciled. */
function givenUp(call: GatewayCall, unusable: Unusable): Error {
  return call.money && unusable.error.reach === 'lost' ? new LostAnswerError(unusable.error) : unusable.error;
}

/** How a retry waits, and the clock it checks the deadline on. */
interface Pauses {
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

/** Wait before a retry if the policy and the deadline allow one. */
async function backoff(
  pauses: Pauses,
  money: boolean,
  deadline: number,
  unusable: Unusable,
  retries: number,
): Promise<boolean> {
  if (!shouldRetryGatewayCall(unusable.failure, money, retries)) return false;
  const delay = retryDelayMs(retries, unusable.retryAfterMs, Math.random);
  if (pauses.now() + delay >= deadline) return false;
  await pauses.sleep(delay);
  return true;
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** No HTTP answer: the transport's reach is the request's. */
function transportFailure(error: unknown): Unusable {
  const transport =
    error instanceof TransportError ? error : new TransportError('protocol', undefined, error);
  const mapped =
    transport.kind === 'connect'
      ? new GatewayUnavailableError(undefined, transport)
      : transport.kind === 'timeout'
        ? new GatewayTimeoutError(undefined, transport)
        : new GatewayError(undefined, transport);
  return { failure: { transport }, error: reached(mapped, transport.reach) };
}

/** An HTTP answer without a usable envelope: a 429 was refused before processing; anything else may hide a processed request. */
function statusFailure(response: UpstreamResponse, lostIfMoney: boolean): Unusable {
  const retryAfterMs = parseRetryAfter(response.headers['retry-after'], Date.now());
  const error =
    response.status === 429
      ? notSent(
          new RateLimitedError(
            'The payment gateway is limiting requests right now; retry after a few seconds.',
            retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(retryAfterMs / 1000)),
          ),
        )
      : reached(new GatewayError(), lostIfMoney ? 'lost' : 'answered');
  return {
    failure: { status: response.status },
    error,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  };
}

const NOT_FOUND: UpstreamEnvelope = { status: -1, msg: 'Not found', data: null };

/**
 * The one place where an HTTP answer becomes an answer, a refused token or an unusable answer.
 * Refusals of the Bearer check (an OAuth `invalid_token`, PayHere's documented "Authentication
 * error" envelope), a 429, a bare 404 of PayHere's router and a 401/403 with an envelope ("Access
 * denied for the domain") all come before processing; every other unusable answer may hide a
 * processed request.
 */
function interpretAnswer(response: UpstreamResponse, allowNotFound: boolean): Attempt {
  const json = parseJson(response.body);
  const oauth = OAuthError.safeParse(json);
  if (oauth.success && oauth.data.error === 'invalid_token')
    return { tokenRejected: true, oauth: response.status === 401 };
  if (response.status === 429 || response.status >= 500) return { unusable: statusFailure(response, true) };
  const envelope = UpstreamEnvelope.safeParse(json);
  if (!envelope.success) {
    if (response.status !== 404) return { unusable: statusFailure(response, true) };
    if (allowNotFound) return { answer: { httpStatus: 404, envelope: NOT_FOUND, bare: true } };
    // A bare 404 is the gateway's router: a wrong base URL or path, nothing was processed.
    log.error('the payment gateway does not know this operation', { check: 'GATEWAY_BASE_URL' });
    throw notSent(new GatewayError(MISCONFIGURED));
  }
  const { status, msg } = envelope.data;
  if (status === -2 && (msg ?? '').trim().toLowerCase() === AUTHENTICATION_ERROR)
    return { tokenRejected: true, oauth: false };
  if (response.status === 401 || response.status === 403) {
    log.error('the gateway refused the service access: check the API key’s domains and IP allow-list', {
      httpStatus: response.status,
    });
    throw notSent(
      new GatewayError(
        'The payment gateway refused the service access; nothing was processed. Try again later.',
      ),
    );
  }
  return { answer: { httpStatus: response.status, envelope: envelope.data } };
}
