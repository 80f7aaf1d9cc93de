import { describe, expect, it } from 'vitest';
import {
  ApiError,
  ConflictError,
  ForbiddenError,
  GatewayError,
  GatewayRejectedError,
  GatewayTimeoutError,
  GatewayUnavailableError,
  IdempotencyInProgressError,
  IdempotencyKeyReusedError,
  InternalError,
  InvalidJsonError,
  InvalidRequestError,
  NotFoundError,
  OutcomeUnknownError,
  RateLimitedError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
} from '../../lib/envelope/errors.ts';

// docs/contract.md "Failures": HTTP status, envelope status, code.
const table: [string, () => ApiError, number, number, string][] = [
  [
    'InvalidRequestError',
    () => new InvalidRequestError([{ path: 'amount', message: 'is required' }]),
    400,
    -1,
    'invalid_request',
  ],
  ['InvalidJsonError', () => new InvalidJsonError(), 400, -1, 'invalid_json'],
  ['UnsupportedMediaTypeError', () => new UnsupportedMediaTypeError(), 415, -1, 'unsupported_media_type'],
  ['UnauthorizedError', () => new UnauthorizedError(), 401, -2, 'unauthorized'],
  [
    'ForbiddenError',
    () => new ForbiddenError('The token lacks the scope payments:charge.'),
    403,
    -2,
    'forbidden',
  ],
  ['NotFoundError', () => new NotFoundError('No payments for order ORD-1.'), 404, -1, 'not_found'],
  ['ConflictError', () => new ConflictError('The authorization was already captured.'), 409, -1, 'conflict'],
  ['IdempotencyInProgressError', () => new IdempotencyInProgressError(2), 409, -1, 'idempotency_in_progress'],
  ['IdempotencyKeyReusedError', () => new IdempotencyKeyReusedError(), 422, -1, 'idempotency_key_reused'],
  [
    'GatewayRejectedError',
    () => new GatewayRejectedError('Invalid customer token.'),
    422,
    -1,
    'gateway_rejected',
  ],
  ['RateLimitedError', () => new RateLimitedError('Too many requests.', 4), 429, -1, 'rate_limited'],
  [
    'OutcomeUnknownError',
    () => new OutcomeUnknownError('The charge may have happened.'),
    202,
    0,
    'outcome_unknown',
  ],
  ['GatewayError', () => new GatewayError(), 502, -1, 'gateway_error'],
  ['GatewayUnavailableError', () => new GatewayUnavailableError(), 503, -1, 'gateway_unavailable'],
  ['GatewayTimeoutError', () => new GatewayTimeoutError(), 504, -1, 'gateway_timeout'],
  ['InternalError', () => new InternalError(new Error('boom')), 500, -1, 'internal_error'],
];

describe('ApiError subclasses', () => {
  it.each(table)('%s is HTTP %i, status %i, code %s', (name, make, httpStatus, status, code) => {
    // Act
    const error = make();

    // Assess
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe(name);
    expect(error.httpStatus).toBe(httpStatus);
    expect(error.status).toBe(status);
    expect(error.code).toBe(code);
    expect(error.message.trim()).not.toBe('');
  });

  it('gives every failure a distinct code', () => {
    const codes = table.map(([, make]) => make().code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('carries the field errors of an invalid request in its details and names them in its message', () => {
    // Prepare
    const errors = [
      { path: 'amount', message: 'must be greater than 0' },
      { path: 'currency', message: 'must be one of LKR, USD' },
      { path: 'amount', message: 'must have at most 2 decimals' },
    ];

    // Act
    const error = new InvalidRequestError(errors);

    // Assess
    expect(error.details).toEqual({ errors });
    expect(error.message).toContain('amount');
    expect(error.message).toContain('currency');
  });

  it('sets Retry-After on an idempotency request still in progress', () => {
    expect(new IdempotencyInProgressError(7).headers).toEqual({ 'Retry-After': '7' });
  });

  it('sets Retry-After on a rate limit only when the wait is known', () => {
    expect(new RateLimitedError('slow down', 3).headers).toEqual({ 'Retry-After': '3' });
    expect(new RateLimitedError('slow down').headers).toEqual({});
  });

  it('asks for a bearer token when unauthorized', () => {
    expect(new UnauthorizedError().headers).toEqual({ 'WWW-Authenticate': 'Bearer' });
  });

  it('says why when forbidden', () => {
    expect(new ForbiddenError('Only a merchant token may act on behalf of a customer.').message).toBe(
      'Only a merchant token may act on behalf of a customer.',
    );
  });

  it('keeps the cause of a gateway failure for the log without putting it in the message', () => {
    // Prepare
    const cause = new Error('socket hang up at 10.0.0.1');

    // Act
    const error = new GatewayUnavailableError(undefined, cause);

    // Assess
    expect(error.cause).toBe(cause);
    expect(error.message).not.toContain('socket hang up');
  });

  it('gives an internal error a generic message whatever its cause says', () => {
    // Act
    const error = new InternalError(new Error('Cannot read properties of undefined (reading app_secret)'));

    // Assess
    expect(error.message).not.toContain('app_secret');
    expect(error.message).not.toContain('undefined');
  });
});
