import httpJsonBodyParser from '@middy/http-json-body-parser';
import fc from 'fast-check';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { errorResponse } from '../../lib/envelope/error-response.ts';
import {
  ConflictError,
  GatewayTimeoutError,
  IdempotencyInProgressError,
  InvalidRequestError,
  OutcomeUnknownError,
  RateLimitedError,
  UnauthorizedError,
} from '../../lib/envelope/errors.ts';

// errorResponse logs one JSON line per call; keep the test output readable.
beforeEach(() => {
  vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
});

interface Body {
  status: number;
  msg: string;
  data: { code: string; [key: string]: unknown };
}

function body(result: { body: string }): Body {
  return JSON.parse(result.body) as Body;
}

/** The error middy's own JSON body parser throws for this event. */
async function middyParserError(event: { headers: Record<string, string>; body?: string }): Promise<unknown> {
  const before = httpJsonBodyParser().before;
  try {
    await before?.({ event, context: {}, response: undefined, error: undefined, internal: {} } as never);
  } catch (error) {
    return error;
  }
  throw new Error('the body parser accepted the event');
}

describe('errorResponse', () => {
  it('renders an ApiError as the envelope with its HTTP status, status and code', () => {
    // Act
    const result = errorResponse(new ConflictError('The authorization was already captured.'));

    // Assess
    expect(result.statusCode).toBe(409);
    expect(result.headers?.['Content-Type']).toBe('application/json');
    expect(body(result)).toEqual({
      status: -1,
      msg: 'The authorization was already captured.',
      data: { code: 'conflict' },
    });
  });

  it('puts the details of an invalid request next to the code', () => {
    // Prepare
    const errors = [
      { path: 'amount', message: 'must be greater than 0' },
      { path: 'extra', message: 'is not a known field' },
    ];

    // Act
    const result = errorResponse(new InvalidRequestError(errors));

    // Assess
    expect(result.statusCode).toBe(400);
    expect(body(result).status).toBe(-1);
    expect(body(result).data).toEqual({ code: 'invalid_request', errors });
  });

  it.each([
    ['in progress', new IdempotencyInProgressError(5), 409, '5'],
    ['rate limited', new RateLimitedError('Too many requests.', 12), 429, '12'],
  ])('sets Retry-After when %s', (_, error, httpStatus, retryAfter) => {
    // Act
    const result = errorResponse(error);

    // Assess
    expect(result.statusCode).toBe(httpStatus);
    expect(result.headers).toMatchObject({ 'Content-Type': 'application/json', 'Retry-After': retryAfter });
  });

  it('answers 401 with status -2 and WWW-Authenticate when unauthorized', () => {
    // Act
    const result = errorResponse(new UnauthorizedError());

    // Assess
    expect(result.statusCode).toBe(401);
    expect(result.headers?.['WWW-Authenticate']).toBe('Bearer');
    expect(body(result).status).toBe(-2);
    expect(body(result).data.code).toBe('unauthorized');
  });

  it('answers an unknown outcome with 202 and status 0', () => {
    // Act
    const result = errorResponse(
      new OutcomeUnknownError('The charge may have happened; retry with the same key.'),
    );

    // Assess
    expect(result.statusCode).toBe(202);
    expect(body(result)).toEqual({
      status: 0,
      msg: 'The charge may have happened; retry with the same key.',
      data: { code: 'outcome_unknown' },
    });
  });

  it('never puts the cause of an ApiError in the body', () => {
    // Act
    const result = errorResponse(
      new GatewayTimeoutError(undefined, new Error('headers timeout after 4000 ms')),
    );

    // Assess
    expect(result.statusCode).toBe(504);
    expect(result.body).not.toContain('headers timeout');
    expect(Object.keys(body(result))).toEqual(['status', 'msg', 'data']);
  });

  it("turns middy's wrong-content-type error into 415 unsupported_media_type", async () => {
    // Prepare
    const error = await middyParserError({ headers: { 'content-type': 'text/plain' }, body: 'amount=10' });

    // Act
    const result = errorResponse(error);

    // Assess
    expect(result.statusCode).toBe(415);
    expect(body(result).status).toBe(-1);
    expect(body(result).data).toEqual({ code: 'unsupported_media_type' });
    expect(body(result).msg).toMatch(/application\/json/);
  });

  it("turns middy's malformed-JSON error into 400 invalid_json", async () => {
    // Prepare
    const error = await middyParserError({
      headers: { 'content-type': 'application/json' },
      body: '{"amount": 10,',
    });

    // Act
    const result = errorResponse(error);

    // Assess
    expect(result.statusCode).toBe(400);
    expect(body(result).status).toBe(-1);
    expect(body(result).data).toEqual({ code: 'invalid_json' });
    expect(result.body).not.toContain('{\\"amount');
  });

  it("turns middy's missing-body error into 400 invalid_json", async () => {
    // Prepare
    const error = await middyParserError({ headers: { 'content-type': 'application/json' } });

    // Act
    const result = errorResponse(error);

    // Assess
    expect(result.statusCode).toBe(400);
    expect(body(result).data.code).toBe('invalid_json');
  });

  it.each([
    ['Unsupported Media Type', 415, 'unsupported_media_type'],
    ['Invalid or malformed JSON was provided', 400, 'invalid_json'],
  ])('maps a body-parser error with message %j to %i %s', (message, httpStatus, code) => {
    // Prepare
    const error = new Error(message, { cause: { package: '@middy/http-json-body-parser' } });

    // Act
    const result = errorResponse(error);

    // Assess
    expect(result.statusCode).toBe(httpStatus);
    expect(body(result).data.code).toBe(code);
  });

  it('does not mistake another package’s error for a body-parser error', () => {
    // Prepare
    const error = new Error('Unsupported Media Type', {
      cause: { package: '@middy/http-urlencode-body-parser' },
    });

    // Act
    const result = errorResponse(error);

    // Assess
    expect(result.statusCode).toBe(500);
    expect(body(result).data.code).toBe('internal_error');
  });

  it('answers any other error with 500 internal_error and a generic message', () => {
    // Prepare
    const error = new TypeError("Cannot read properties of undefined (reading 'app_secret')");

    // Act
    const result = errorResponse(error);

    // Assess
    expect(result.statusCode).toBe(500);
    expect(result.headers?.['Content-Type']).toBe('application/json');
    expect(body(result)).toEqual({ status: -1, msg: expect.any(String), data: { code: 'internal_error' } });
    expect(result.body).not.toContain('app_secret');
    expect(result.body).not.toContain('TypeError');
  });

  it('reveals nothing of any thrown non-ApiError in the response', () => {
    const marker = fc.string({ minLength: 1, maxLength: 40 }).map((s) => `leak-${s}`);
    const thrown = fc.oneof(
      marker.map((m) => new Error(m)),
      marker.map((m) => new RangeError(m)),
      marker.map((m) =>
        Object.assign(new Error(m), { code: 'ECONNRESET', stack: `Error: ${m}\n    at secret.ts:1:1` }),
      ),
      marker.map((m) => new Error(m, { cause: new Error(m) })),
      marker,
      marker.map((m) => ({ message: m })),
      fc.constantFrom(null, undefined, 0, false),
    );
    fc.assert(
      fc.property(thrown, (error) => {
        const result = errorResponse(error);
        const parsed = body(result);
        expect(result.statusCode).toBe(500);
        expect(parsed.status).toBe(-1);
        expect(parsed.data).toEqual({ code: 'internal_error' });
        expect(parsed.msg.length).toBeGreaterThan(0);
        expect(result.body).not.toContain('leak-');
        expect(result.body).not.toContain('secret.ts');
      }),
    );
  });
});
