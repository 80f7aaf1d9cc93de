import { createHash } from 'node:crypto';
import type { APIGatewayProxyResult, Context } from 'aws-lambda';
import { errorResponse } from '../envelope/error-response.ts';
import {
  GatewayUnavailableError,
  IdempotencyInProgressError,
  IdempotencyKeyReusedError,
  OutcomeUnknownError,
} from '../envelope/errors.ts';
import { describeError, log } from '../log/log.ts';
import { classifyFailure } from './failure.ts';
import { requestFingerprint } from './fingerprint.ts';
import type { IdempotencyRecord, IdempotencyStore, StoredResponse } from './store.ts';

type Result = APIGatewayProxyResult;

export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** What the wrapper needs of a validated request (lib/http/route.ts's ValidRequest has all of it). */
export interface IdempotentRequest {
  body: unknown;
  path: unknown;
  /** Keys are scoped to the caller's identity. */
  caller: { sub: string };
  /** The customer a merchant acts for: part of what makes two requests the same. */
  onBehalfOf?: string;
  context: Context;
}

export interface IdempotencyOptions<Request extends IdempotentRequest> {
  /** Names the route in every record key: renaming it for a deployed route forgets its keys. */
  operation: string;
  store: IdempotencyStore;
  /**
   * The request as it will be sent upstream, for its fingerprint: two requests PayHere receives
   * identically are the same request (`description` for `deduction_details`, a payment id as a
   * number or a digit string, a subscription id with a leading zero). By default, body and path.
   */
  upstream?: (request: Request) => unknown;
  /**
   * Settles a request whose earlier attempt may have reached the gateway without a usable answer,
   * without sending it again (a charge searches its order's payments from `startedAt`). It returns
   * the answer or throws OutcomeUnknownError. Routes without it replay their outcome_unknown answer.
   */
  reconcile?: (request: Request, startedAt: number) => Promise<Result>;
  /**
   * What the settle job needs to settle the request without it (lib/settle/): kept on the record,
   * as JSON, until it is complete.
   */
  subject?: (request: Request) => unknown;
  /** The key may be left out (a DELETE, which was sent without one before): then the request runs as is. */
  optional?: true;
  /** How a failed release waits before it is tried once more (real time by default; tests pass a virtual one). */
  pause?: (ms: number) => Promise<void>;
}

/** How often a request races a record that changes under it before answering 409 (in practice: never). */
const MAX_ROUNDS = 3;
/** Most requests finish within a second or two; the lock itself may last the Lambda's whole timeout. */
const MAX_RETRY_AFTER_SECONDS = 2;

const INTERRUPTED =
  'An earlier request with this Idempotency-Key was interrupted and may have reached the payment gateway. ' +
  'Do not send it again with a new key: check its outcome before acting.';

/**
 * Runs `execute` at most once per (operation, caller, key): a repeat gets the stored answer, a
 * different request under the same key 422, a repeat while the first runs 409. The record's
 * transitions:
 *
 *   absent ──begin──▶ in_progress ──answer / refusal──▶ complete (replayed)
 *                         │   └──────may have been sent──▶ outcome_unknown ──repeat──▶ reconcile
 *                         └──provably not sent──▶ deleted (the key may be used again)
 *   in_progress past its deadline (the holder died) ──repeat──▶ treated as outcome_unknown
 *
 * Record-keeping failures after the gateway answered never hide the answer from the client.
 */
export async function runIdempotent<Request extends IdempotentRequest>(
  options: IdempotencyOptions<Request>,
  idempotencyKey: string,
  request: Request,
  execute: () => Promise<Result>,
): Promise<Result> {
  const { store } = options;
  const key = recordKey(options.operation, request.caller.sub, idempotencyKey);
  const fingerprint = requestFingerprint(
    options.upstream
      ? {
          body: options.upstream(request),
          path: null,
          ...(request.onBehalfOf === undefined ? {} : { onBehalfOf: request.onBehalfOf }),
        }
      : request,
  );
  const lockedUntil = store.now() + remainingMs(request.context);
  // Due for the settle job once the request's own time is over and the settle delay has passed.
  const settlement = options.subject
    ? { subject: JSON.stringify(options.subject(request)), at: lockedUntil + store.settleDelayMs }
    : undefined;

  for (let round = 0; round < MAX_ROUNDS; round++) {
    const begun = await beforeSending(() => store.begin(key, fingerprint, lockedUntil, settlement));
    if ('acquired' in begun) return attempt(options, begun.acquired, execute);
    const existing = begun.existing;
    if (!existing) continue; // released or expired between the write and the read
    if (existing.fingerprint !== fingerprint) {
      log.info('idempotency key reused', { operation: options.operation });
      throw new IdempotencyKeyReusedError();
    }
    if (existing.state === 'complete' || (existing.state === 'outcome_unknown' && !options.reconcile)) {
      log.info('idempotent replay', { operation: options.operation, state: existing.state });
      return replay(existing);
    }
    // A repeat soon after its outcome was looked for at PayHere gets that answer again: the look
    // costs PayHere's budget, and what it said is at most `lookAgainMs` old.
    const lookedAgoMs = store.now() - (existing.triedAt ?? Number.NEGATIVE_INFINITY);
    if (existing.state === 'outcome_unknown' && lookedAgoMs < store.lookAgainMs) {
      log.info('idempotent replay of an unknown outcome looked for lately', { operation: options.operation });
      const replayed = replay(existing);
      const retryAfter = Math.max(1, Math.ceil((store.lookAgainMs - lookedAgoMs) / 1000));
      return { ...replayed, headers: { ...replayed.headers, 'Retry-After': String(retryAfter) } };
    }
    if (existing.state === 'in_progress' && existing.notSent) {
      // Its attempt provably sent nothing and could not delete the record: this one sends it.
      const claimed = await beforeSending(() => store.claim(existing, lockedUntil));
      if (claimed) return attempt(options, claimed, execute);
      continue;
    }
    const now = store.now();
    if (existing.state === 'in_progress' && (existing.lockedUntil ?? 0) > now) {
      throw new IdempotencyInProgressError(retryAfterSeconds(existing.lockedUntil! - now));
    }
    // outcome_unknown on a route that can reconcile, or in_progress whose holder died: the money
    // request may have been sent, so it is settled without sending it again.
    const claimed = await beforeSending(() => store.claim(existing, lockedUntil));
    if (claimed) return settle(options, claimed, request, existing.state);
  }
  throw new IdempotencyInProgressError(1);
}

/** The first attempt: run the handler and record what its outcome means. */
async function attempt<Request extends IdempotentRequest>(
  options: IdempotencyOptions<Request>,
  held: IdempotencyRecord,
  execute: () => Promise<Result>,
): Promise<Result> {
  let response: Result;
  try {
    response = await execute();
  } catch (error) {
    const kind = classifyFailure(error);
    if (kind === 'not_sent') {
      await release(options, held);
      throw error;
    }
    const answer = kind === 'answered' ? error : asOutcomeUnknown(error, undefined);
    const rendered = errorResponse(answer);
    await finish(options, held, kind === 'answered' ? 'complete' : 'outcome_unknown', rendered);
    return rendered;
  }
  await finish(options, held, 'complete', response);
  return response;
}

/** A repeat of a request whose outcome is unknown: reconcile if the route can, never resend. */
async function settle<Request extends IdempotentRequest>(
  options: IdempotencyOptions<Request>,
  held: IdempotencyRecord,
  request: Request,
  previousState: IdempotencyRecord['state'],
): Promise<Result> {
  const { reconcile } = options;
  const answer = await settleHeld(
    options.store,
    options.operation,
    held,
    previousState,
    reconcile && ((startedAt) => reconcile(request, startedAt)),
  );
  return answer.response;
}

/**
 * Settle a record `held` (claimed from `previousState`, unknown or abandoned) with `reconcile`,
 * which only reads, never resends: its answer is stored as complete; if it cannot tell, the request
 * stays unknown (stored as outcome_unknown, looked at again by the settle job at `settleAt`). The
 * repeat of a key and the settle job both come here.
 */
export async function settleHeld(
  store: IdempotencyStore,
  operation: string,
  held: IdempotencyRecord,
  previousState: IdempotencyRecord['state'],
  reconcile: ((startedAt: number) => Promise<Result>) | undefined,
  settleAt?: number,
): Promise<{ response: Result; settled: boolean }> {
  const options = { operation, store };
  log.info('settling an unknown outcome', { operation, previousState });
  try {
    if (!reconcile) throw new OutcomeUnknownError(INTERRUPTED);
    const response = await reconcile(held.startedAt);
    await finish(options, held, 'complete', response);
    return { response, settled: true };
  } catch (error) {
    // Reconciliation only reads, so whatever failed, the original request's outcome stays unknown.
    const rendered = errorResponse(
      asOutcomeUnknown(error, previousState === 'in_progress' ? INTERRUPTED : undefined),
    );
    await finish(options, held, 'outcome_unknown', rendered, settleAt);
    return { response: rendered, settled: false };
  }
}

function asOutcomeUnknown(error: unknown, message: string | undefined): OutcomeUnknownError {
  if (error instanceof OutcomeUnknownError) return error;
  return new OutcomeUnknownError(
    message ??
      'The request may have reached the payment gateway, but its outcome could not be determined. ' +
        'Do not send it again with a new key: retry with the same Idempotency-Key later to check its outcome.',
    error,
  );
}

/**
 * A store failure before the money request is sent leaves the client free to retry: 503, nothing
 * sent (docs/contract.md "Failures": a dependency such as the table cannot be reached).
 */
async function beforeSending<T>(storeCall: () => Promise<T>): Promise<T> {
  try {
    return await storeCall();
  } catch (error) {
    throw new GatewayUnavailableError(
      'The payment service cannot record this request right now, so nothing was sent to the gateway; ' +
        'retry later with the same Idempotency-Key.',
      error,
    );
  }
}

/**
 * Store the answer. If that fails the client still gets the answer (the money has moved); the
 * record stays in_progress until its deadline, after which a repeat treats it as outcome_unknown.
 */
async function finish(
  options: { operation: string; store: IdempotencyStore },
  held: IdempotencyRecord,
  state: 'complete' | 'outcome_unknown',
  response: Result,
  settleAt?: number,
): Promise<void> {
  try {
    const stored = await options.store.finish(held, state, toStored(response), settleAt);
    if (!stored)
      log.warn('idempotency record was taken over before this attempt finished', {
        operation: options.operation,
      });
  } catch (error) {
    log.error('could not store the idempotent answer', {
      operation: options.operation,
      state,
      error: describeError(error),
    });
  }
}

/** How long a failed release waits before it is tried once more. */
const RELEASE_RETRY_MS = 200;

const realPause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Delete the record of an attempt that provably sent nothing, so its key can be used again. A
 * failure is tried once more; failing that, the record is marked not sent, so that a repeat sends
 * the request rather than treating the key as an unknown outcome. If even that fails, the record
 * stays in_progress: a repeat after its deadline reconciles it (never sends it), and the log says why.
 */
async function release<Request extends IdempotentRequest>(
  options: IdempotencyOptions<Request>,
  held: IdempotencyRecord,
): Promise<void> {
  const { store } = options;
  for (let tries = 0; tries < 2; tries++) {
    try {
      await store.release(held);
      return;
    } catch (error) {
      log.warn('could not release the idempotency record', {
        operation: options.operation,
        error: describeError(error),
      });
      if (tries === 0) await (options.pause ?? realPause)(RELEASE_RETRY_MS);
    }
  }
  try {
    if (await store.markNotSent(held)) return;
  } catch (error) {
    log.error('could not release nor mark the idempotency record of a request that was not sent', {
      operation: options.operation,
      error: describeError(error),
    });
  }
}

function replay(record: IdempotencyRecord): Result {
  const stored = record.response!;
  return {
    statusCode: stored.statusCode,
    headers: { ...stored.headers, [REPLAYED_HEADER]: 'true' },
    body: stored.body,
  };
}

function toStored(response: Result): StoredResponse {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers ?? {})) headers[name] = String(value);
  return { statusCode: response.statusCode, headers, body: response.body };
}

/**
 * The table key: route, caller, client key. The caller's identity is hashed so the key has a
 * bounded length and holds no personal data; `#` cannot occur in an operation, a hash or a valid key.
 */
export function recordKey(operation: string, sub: string, idempotencyKey: string): string {
  const caller = createHash('sha256').update(sub).digest('base64url');
  return `${operation}#${caller}#${idempotencyKey}`;
}

/** A context without a clock (never in Lambda or serverless-offline) holds the key this long. */
const DEFAULT_LOCK_MS = 25_000;

/** Until when this invocation can hold the key: the Lambda's own hard deadline. */
function remainingMs(context: Context): number {
  return context.getRemainingTimeInMillis?.() ?? DEFAULT_LOCK_MS;
}

function retryAfterSeconds(lockRemainingMs: number): number {
  return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(lockRemainingMs / 1000)));
}
