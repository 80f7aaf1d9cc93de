import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  GatewayError,
  GatewayRejectedError,
  GatewayTimeoutError,
  GatewayUnavailableError,
  InternalError,
  NotFoundError,
  notSent,
  OutcomeUnknownError,
  RateLimitedError,
  reached,
} from '../../lib/envelope/errors.ts';
import { classifyFailure } from '../../lib/idempotency/failure.ts';

describe('classifyFailure', () => {
  it.each([
    ['a connect failure (503 gateway_unavailable)', notSent(new GatewayUnavailableError())],
    ['our own rate limit or PayHere’s 429', notSent(new RateLimitedError('slow down', 3))],
    ['a gateway error marked as refused before processing', notSent(new GatewayError())],
  ])('releases the key after %s: nothing was sent', (_, error) => {
    expect(classifyFailure(error)).toBe('not_sent');
  });

  it('keeps an unmarked 503 gateway_unavailable as outcome_unknown: only the gateway client can prove nothing was sent', () => {
    expect(classifyFailure(new GatewayUnavailableError())).toBe('unknown');
  });

  it.each([
    ['409 conflict', reached(new ConflictError('Authorization is already CAPTURED'), 'answered')],
    ['422 gateway_rejected', reached(new GatewayRejectedError('Invalid token'), 'answered')],
    ['404 not_found', reached(new NotFoundError('Subscription 1 was not found.'), 'answered')],
  ])('stores %s that PayHere answered as the answer: the gateway decided', (_, error) => {
    expect(classifyFailure(error)).toBe('answered');
  });

  it.each([
    ['409 conflict', new ConflictError('Authorization is already CAPTURED')],
    ['404 not_found', new NotFoundError('Subscription 1 was not found.')],
  ])(
    'keeps a %s that says nothing of where its request got as outcome_unknown (never inferred from its class)',
    (_, error) => {
      expect(classifyFailure(error)).toBe('unknown');
    },
  );

  it('keeps a lost answer as outcome_unknown, whatever its class', () => {
    expect(classifyFailure(reached(new GatewayRejectedError('x'), 'lost'))).toBe('unknown');
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
