import {
  type ApiError,
  CallerRateLimitedError,
  ForbiddenError,
  GatewayError,
  GatewayTimeoutError,
  GatewayUnavailableError,
  IdempotencyInProgressError,
  IdempotencyKeyReusedError,
  InternalError,
  InvalidJsonError,
  OutcomeUnknownError,
  PayloadTooLargeError,
  RateLimitedError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
} from '../lib/envelope/errors.ts';
import { FORM_MEDIA_TYPE } from '../lib/http/form-route.ts';
import { MAX_BODY_BYTES } from '../lib/http/request-guard.ts';

/**
 * Every `data.code` a failure can carry, with its "when" (docs/contract.md "Failures"). The HTTP
 * and envelope status of a code are not written here: they come from the error classes the functions throw
 * (lib/envelope/errors.ts), through the example instances the route table lists.
 */
export const FAILURE_WHEN = {
  invalid_request:
    'The body, a path parameter or a header fails validation (or API Gateway refused the request). `data.errors` names every bad field.',
  invalid_json: 'The body is not JSON.',
  unsupported_media_type: 'A body-carrying request is not `application/json`.',
  payload_too_large: `The request body is larger than ${MAX_BODY_BYTES} bytes.`,
  unauthorized: 'No bearer token, or one that is not valid (signature, issuer, audience, expiry).',
  invalid_signature:
    "A notification's `md5sig` does not verify, or it names another merchant: nothing is recorded.",
  forbidden:
    'The token is valid but lacks what the route needs (its scope, or `merchant` where only the merchant may act).',
  not_found:
    "The object does not exist, or the caller does not own it (a customer is never told that someone else's object exists).",
  conflict:
    'The gateway refuses because of the state of the object: already captured, refunded, cancelled or completed; not eligible for retry. Or another refund of the payment is still in flight: nothing was sent, and its own caller finds its Idempotency-Key in `data.idempotency_key`.',
  order_conflict:
    'The order already has a successful, pending or unknown payment or hold, or the body disagrees with the order the merchant priced (`data.errors` names the fields).',
  idempotency_in_progress:
    'A request with the same Idempotency-Key is still being processed: repeat it with the same key after `Retry-After` seconds.',
  idempotency_key_reused:
    'The same Idempotency-Key came with a different request: use a new key for a new request.',
  gateway_rejected:
    'The gateway refused the content: unknown customer token, currency or amount; a capture above the authorized amount; a refund that is not possible.',
  rate_limited:
    "Too many requests: the service's own limit, PayHere's budget or API Gateway's throttling. Retry after `Retry-After` seconds when it is sent.",
  caller_rate_limited:
    "This caller used its share of PayHere's budget (PayHere calls per 10 s, money requests a minute), or the order refused another charge after too many declined ones. Nothing was sent. Retry after `Retry-After` seconds.",
  outcome_unknown:
    'The money request reached the gateway but its answer was lost and could not be settled yet. Never send it again with a new key: repeat it with the same Idempotency-Key (DELETE: simply again) to learn the outcome.',
  outcome_undeterminable:
    "A lost refund settled for good without PayHere's records being able to show whether it was made (a payment refunded before, or one the service's ledger does not know): not a success. Check the payment's refunds in PayHere's portal before refunding it again.",
  gateway_error:
    'The gateway answered something unusable (5xx, not JSON, the wrong shape, or it refused the service’s own credentials).',
  gateway_unavailable:
    'The gateway or a dependency (secrets, tables) cannot be reached; nothing was done. Try again later.',
  gateway_timeout: 'The gateway (or the function, for API Gateway) did not answer in time.',
  internal_error: 'A bug on our side. `msg` is generic and reveals nothing.',
} as const;

export type FailureCode = keyof typeof FAILURE_WHEN;

export const FAILURE_CODES = Object.keys(FAILURE_WHEN) as FailureCode[];

/** Codes whose `data` also carries `errors`: `[{path, message}]`. */
export const CODES_WITH_FIELD_ERRORS: readonly FailureCode[] = ['invalid_request', 'order_conflict'];

/** Codes whose `data` may also carry `idempotency_key`: the key of the request to repeat. */
export const CODES_WITH_IDEMPOTENCY_KEY: readonly FailureCode[] = ['conflict'];

/** What shapes a route's failures: which parts of route() it uses and what it talks to. */
export interface FailureTraits {
  /** The token scope the route requires; none for PayHere's notifications (signed instead). */
  scope: string | undefined;
  /** The body's media type, if the route takes a body. */
  body: 'json' | 'form' | undefined;
  idempotent: boolean;
  /** `payhere`: the route calls PayHere; `ledger`: it answers from the ledger (and the secret). */
  upstream: 'payhere' | 'ledger';
}

/**
 * The failures every route of a kind can answer, besides its own: authentication and the request
 * guard (lib/http/route.ts), API Gateway's own answers (serverless.yml's gateway responses: 413,
 * 429, 5xx), the body parser, the idempotency store, and the gateway client.
 */
export function commonFailures(traits: FailureTraits): ApiError[] {
  const failures: ApiError[] = [];
  if (traits.scope !== undefined) {
    failures.push(
      new UnauthorizedError('Authentication is required: send Authorization: Bearer <token>.'),
      new ForbiddenError(`The token is valid but lacks the scope ${traits.scope} that this route requires.`),
    );
  }
  failures.push(
    new PayloadTooLargeError(MAX_BODY_BYTES),
    new RateLimitedError('Too many requests: wait a moment, then retry.', 1),
    new InternalError(),
    new GatewayUnavailableError(),
    new GatewayTimeoutError(),
  );
  if (traits.body === 'json') failures.push(new InvalidJsonError(), new UnsupportedMediaTypeError());
  if (traits.body === 'form') {
    failures.push(
      new UnsupportedMediaTypeError(`Send the body as ${FORM_MEDIA_TYPE}, with that Content-Type.`),
    );
  }
  if (traits.idempotent) {
    failures.push(
      new IdempotencyInProgressError(1),
      new IdempotencyKeyReusedError(),
      new OutcomeUnknownError(
        'The gateway did not confirm the request; it may have been processed. Do not send it again with a new key: check its outcome before acting, or retry with the same Idempotency-Key.',
      ),
    );
  }
  if (traits.upstream === 'payhere') failures.push(new GatewayError());
  // A caller's share (lib/budget/caller-shares.ts); PayHere's notifications keep theirs to themselves.
  if (traits.upstream === 'payhere' && traits.scope !== undefined) {
    failures.push(
      new CallerRateLimitedError(
        "This caller used its share of the payment gateway's requests: wait, then retry.",
        8,
      ),
    );
  }
  return failures;
}
