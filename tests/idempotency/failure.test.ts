import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  ForbiddenError,
  GatewayError,
  GatewayRejectedError,
  GatewayTimeoutError,
  GatewayUnavailableError,
  InternalError,
  NotFoundError,
  OutcomeUnknownError,
  RateLimitedError,
  UnauthorizedError,
} from '../../lib/errors.ts';
import { classifyFailure } from '../../lib/idempotency/failure.ts';

describe('classifyFailure', () => {
  it.each([
    ['a connect failure (503 gateway_unavailable)', new GatewayUnavailableError()],
    ['our own rate limit or PayHere’s 429', new RateLimitedError('slow down', 3)],
    ['a refused caller (401)', new UnauthorizedError()],
    ['a caller without the scope (403)', new ForbiddenError('payments:write')],
  ])('releases the key after %s: nothing was sent', (_, error) => {
    expect(classifyFailure(error)).toBe('not_sent');
  });

  it.each([
    ['409 conflict', new ConflictError('Authorization is already CAPTURED')],
    ['422 gateway_rejected', new GatewayRejectedError('Invalid token')],
    ['404 not_found', new NotFoundError('Subscription 1 was not found.')],
  ])('stores %s as the answer: the gateway decided', (_, error) => {
    expect(classifyFailure(error)).toBe('answered');
  });

  it.each([
    ['outcome_unknown', new OutcomeUnknownError('lost')],
    ['502 gateway_error', new GatewayError()],
    ['504 gateway_timeout', new GatewayTimeoutError()],
    ['500 internal_error', new InternalError()],
    ['a bug (TypeError)', new TypeError('x is undefined')],
    ['something thrown that is not an Error', 'boom'],
  ])('keeps %s as outcome_unknown: it cannot prove nothing was sent', (_, error) => {
    expect(classifyFailure(error)).toBe('unknown');
  });
});
