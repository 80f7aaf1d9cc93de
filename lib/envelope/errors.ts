import type { EnvelopeStatus } from './envelope.ts';

/** Whether a request reached PayHere (ApiError.reach). */
export type Reach = 'not_sent' | 'answered' | 'lost';

/** A failure of docs/contract.md "Failures": HTTP status, envelope status, stable machine-readable code. */
export class ApiError extends Error {
  readonly httpStatus: number;
  readonly status: EnvelopeStatus;
  readonly code: string;
  /** Extra fields placed next to `code` in `data` (never secrets, never upstream raw bodies). */
  readonly details: Record<string, unknown>;
  readonly headers: Record<string, string>;
  /**
   * Whether the request this failure belongs to reached PayHere: `not_sent` (provably not: refused
   * before sending, or by PayHere before processing), `answered` (PayHere answered; this is its
   * refusal), `lost` (it may have been processed, the answer was lost). Decided where it is known
   * (the transport, the gateway client, the operation, a check before sending) and carried up
   * unchanged; undefined says nothing, so the request must be taken as possibly sent.
   */
  reach: Reach | undefined;

  constructor(
    httpStatus: number,
    status: EnvelopeStatus,
    code: string,
    message: string,
    options: { details?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.httpStatus = httpStatus;
    this.status = status;
    this.code = code;
    this.details = options.details ?? {};
    this.headers = options.headers ?? {};
    this.reach = undefined;
  }
}

export interface FieldError {
  path: string;
  message: string;
}

export class InvalidRequestError extends ApiError {
  constructor(errors: FieldError[], message = describeFieldErrors(errors)) {
    super(400, -1, 'invalid_request', message, { details: { errors } });
  }
}

function describeFieldErrors(errors: FieldError[]): string {
  const names = [...new Set(errors.map((e) => e.path))];
  return `The request is invalid: check ${names.join(', ')}.`;
}

export class InvalidJsonError extends ApiError {
  constructor() {
    super(400, -1, 'invalid_json', 'The request body is not valid JSON.');
  }
}

export class UnsupportedMediaTypeError extends ApiError {
  constructor(message = 'Send the request body as JSON with Content-Type: application/json.') {
    super(415, -1, 'unsupported_media_type', message);
  }
}

export class PayloadTooLargeError extends ApiError {
  constructor(limitBytes: number) {
    super(413, -1, 'payload_too_large', `The request body is larger than ${limitBytes} bytes.`);
  }
}

export class UnauthorizedError extends ApiError {
  constructor(message = 'Authentication is required: send a valid bearer token.') {
    super(401, -2, 'unauthorized', message, { headers: { 'WWW-Authenticate': 'Bearer' } });
  }
}

/** A notification whose md5sig does not verify, or that names another merchant. */
export class InvalidSignatureError extends ApiError {
  constructor() {
    super(401, -2, 'invalid_signature', 'The notification signature does not verify.');
  }
}

export class ForbiddenError extends ApiError {
  constructor(message: string) {
    super(403, -2, 'forbidden', message);
  }
}

/** The order cannot take this request: it already has a payment, or the body disagrees with its price. */
export class OrderConflictError extends ApiError {
  constructor(message: string, errors?: FieldError[]) {
    super(409, -1, 'order_conflict', message, errors ? { details: { errors } } : {});
  }
}

export class NotFoundError extends ApiError {
  constructor(message: string) {
    super(404, -1, 'not_found', message);
  }
}

/**
 * The gateway refused because of the state of the payment or subscription, or another refund of
 * the payment is in flight; `idempotencyKey` names that refund's key to its own caller.
 */
export class ConflictError extends ApiError {
  constructor(message: string, idempotencyKey?: string) {
    super(
      409,
      -1,
      'conflict',
      message,
      idempotencyKey ? { details: { idempotency_key: idempotencyKey } } : {},
    );
  }
}

/** The gateway refused the content of the request. */
export class GatewayRejectedError extends ApiError {
  constructor(message: string) {
    super(422, -1, 'gateway_rejected', message);
  }
}

export class IdempotencyInProgressError extends ApiError {
  constructor(retryAfterSeconds: number) {
    super(
      409,
      -1,
      'idempotency_in_progress',
      'A request with this Idempotency-Key is still being processed; retry it later with the same key.',
      { headers: { 'Retry-After': String(retryAfterSeconds) } },
    );
  }
}

export class IdempotencyKeyReusedError extends ApiError {
  constructor() {
    super(
      422,
      -1,
      'idempotency_key_reused',
      'This Idempotency-Key was already used with a different request; use a new key for a new request.',
    );
  }
}

export class RateLimitedError extends ApiError {
  constructor(message: string, retryAfterSeconds?: number) {
    super(429, -1, 'rate_limited', message, {
      headers: retryAfterSeconds === undefined ? {} : { 'Retry-After': String(retryAfterSeconds) },
    });
  }
}

/**
 * This caller used its share of PayHere's budget, or this order its failed attempts: the others'
 * shares are untouched (docs/contract.md "PayHere's budget").
 */
export class CallerRateLimitedError extends ApiError {
  constructor(message: string, retryAfterSeconds: number) {
    super(429, -1, 'caller_rate_limited', message, {
      headers: { 'Retry-After': String(retryAfterSeconds) },
    });
  }
}

/** The gateway answered something the service cannot use. */
export class GatewayError extends ApiError {
  constructor(
    message = 'The payment gateway answered with an unusable response; try again later.',
    cause?: unknown,
  ) {
    super(502, -1, 'gateway_error', message, { cause });
  }
}

export class GatewayUnavailableError extends ApiError {
  constructor(
    message = 'The payment gateway cannot be reached right now; try again later.',
    cause?: unknown,
  ) {
    super(503, -1, 'gateway_unavailable', message, { cause });
  }
}

export class GatewayTimeoutError extends ApiError {
  constructor(message = 'The payment gateway did not answer in time; try again later.', cause?: unknown) {
    super(504, -1, 'gateway_timeout', message, { cause });
  }
}

/**
 * A money request reached the gateway but its answer was lost and could not be reconciled:
 * it may or may not have happened. Not a failure: status 0, HTTP 202.
 */
export class OutcomeUnknownError extends ApiError {
  constructor(message: string, cause?: unknown) {
    super(202, 0, 'outcome_unknown', message, { cause });
  }
}

/**
 * A money request whose answer was lost, settled for good without knowing whether it was done:
 * PayHere's records cannot tell (a refund of a payment refunded in part before). A final answer,
 * never a success: someone must check PayHere's portal.
 */
export class OutcomeUndeterminableError extends ApiError {
  constructor(message: string) {
    super(409, -1, 'outcome_undeterminable', message);
  }
}

export class InternalError extends ApiError {
  constructor(cause?: unknown) {
    super(500, -1, 'internal_error', 'Something went wrong on our side; try again later.', { cause });
  }
}

/** Say where `error`'s request got to (see ApiError.reach); the one way to set it. */
export function reached<E extends ApiError>(error: E, reach: Reach): E {
  error.reach = reach;
  return error;
}

/** `error` was raised before its request could be sent, or refused by PayHere before processing. */
export function notSent<E extends ApiError>(error: E): E {
  return reached(error, 'not_sent');
}
