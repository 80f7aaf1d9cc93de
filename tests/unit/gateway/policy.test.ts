import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Failure,
  MAX_READ_RETRIES,
  parseRetryAfter,
  retryDelayMs,
  shouldRetryGatewayCall,
} from '../../../lib/gateway/policy.ts';
import { classifyTransportError, type TransportFailureKind } from '../../../lib/gateway/transport.ts';

const NOW = Date.UTC(2024, 5, 1, 4, 30, 0);

/** A transport failure as undici would report it, through the real classifier. */
function transport(code: string): Failure {
  return { transport: classifyTransportError(Object.assign(new Error(code), { code })) };
}

const CONNECT = transport('ECONNREFUSED');
const TIMEOUT = transport('UND_ERR_HEADERS_TIMEOUT');
const RESET = transport('ECONNRESET');
const PROTOCOL = transport('HPE_INVALID_CONSTANT');

describe('shouldRetryGatewayCall', () => {
  it('sees the transport failures as the kinds they are', () => {
    const kinds = [CONNECT, TIMEOUT, RESET, PROTOCOL].map((f) =>
      'transport' in f ? f.transport.kind : undefined,
    );
    expect(kinds).toEqual<TransportFailureKind[]>(['connect', 'timeout', 'reset', 'protocol']);
  });

  describe('a read', () => {
    it.each([
      ['a connect error', CONNECT],
      ['a timeout', TIMEOUT],
      ['a reset', RESET],
    ])('is retried after %s', (_, failure) => {
      expect(shouldRetryGatewayCall(failure, false, 0)).toBe(true);
    });

    it.each([429, 502, 503, 504])('is retried after HTTP %i', (status) => {
      expect(shouldRetryGatewayCall({ status }, false, 0)).toBe(true);
    });

    it.each([400, 401, 403, 404, 409, 422, 500, 501])('is not retried after HTTP %i', (status) => {
      expect(shouldRetryGatewayCall({ status }, false, 0)).toBe(false);
    });

    it('is not retried after a protocol error', () => {
      expect(shouldRetryGatewayCall(PROTOCOL, false, 0)).toBe(false);
    });

    it(`is retried at most ${MAX_READ_RETRIES} times`, () => {
      // Act
      const answers = [0, 1, 2, 3].map((retries) => shouldRetryGatewayCall({ status: 503 }, false, retries));

      // Assess
      expect(MAX_READ_RETRIES).toBe(2);
      expect(answers).toEqual([true, true, false, false]);
    });
  });

  describe('a money request', () => {
    it('is retried when the connection was never made (nothing sent)', () => {
      expect(shouldRetryGatewayCall(CONNECT, true, 0)).toBe(true);
    });

    it.each([
      ['a timeout', TIMEOUT],
      ['a reset', RESET],
      ['a protocol error', PROTOCOL],
    ])('is never retried after %s (it may have been sent)', (_, failure) => {
      expect(shouldRetryGatewayCall(failure, true, 0)).toBe(false);
    });

    it.each([429, 500, 502, 503, 504])('is never retried after HTTP %i', (status) => {
      expect(shouldRetryGatewayCall({ status }, true, 0)).toBe(false);
    });

    it(`is retried at most ${MAX_READ_RETRIES} times even when nothing was sent`, () => {
      expect([0, 1, 2, 3].map((retries) => shouldRetryGatewayCall(CONNECT, true, retries))).toEqual([
        true,
        true,
        false,
        false,
      ]);
    });
  });

  it('never retries anything once the retries are used up', () => {
    const failure = fc.oneof(
      fc.constantFrom(CONNECT, TIMEOUT, RESET, PROTOCOL),
      fc.integer({ min: 100, max: 599 }).map((status): Failure => ({ status })),
    );
    fc.assert(
      fc.property(
        failure,
        fc.boolean(),
        fc.integer({ min: MAX_READ_RETRIES, max: 50 }),
        (f, money, retries) => {
          return !shouldRetryGatewayCall(f, money, retries);
        },
      ),
    );
  });

  it('never retries a money request that may have reached the gateway', () => {
    const failure = fc.oneof(
      fc.constantFrom(TIMEOUT, RESET, PROTOCOL),
      fc.integer({ min: 100, max: 599 }).map((status): Failure => ({ status })),
    );
    fc.assert(fc.property(failure, fc.nat(5), (f, retries) => !shouldRetryGatewayCall(f, true, retries)));
  });
});

describe('retryDelayMs', () => {
  it('grows the ceiling exponentially from 100 ms and caps it at 2 s', () => {
    // Prepare
    const almostOne = () => 0.999_999_9;

    // Act
    const ceilings = [0, 1, 2, 3, 4, 5, 6, 10].map((n) => retryDelayMs(n, undefined, almostOne));

    // Assess
    expect(ceilings).toEqual([99, 199, 399, 799, 1599, 1999, 1999, 1999]);
  });

  it('can wait no time at all (full jitter)', () => {
    expect(retryDelayMs(3, undefined, () => 0)).toBe(0);
  });

  it('stays in [0, min(2000, 100 * 2^n)) for any random draw', () => {
    fc.assert(
      fc.property(fc.nat(30), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (n, r) => {
        const delay = retryDelayMs(n, undefined, () => r);
        return Number.isInteger(delay) && delay >= 0 && delay < Math.min(2000, 100 * 2 ** n);
      }),
    );
  });

  it('never waits less than Retry-After', () => {
    fc.assert(
      fc.property(
        fc.nat(30),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.integer({ min: 0, max: 120_000 }),
        (n, r, retryAfter) => retryDelayMs(n, retryAfter, () => r) >= retryAfter,
      ),
    );
  });

  it('waits exactly Retry-After when it is longer than the backoff', () => {
    expect(retryDelayMs(0, 3_000, () => 0.5)).toBe(3_000);
  });

  it('keeps the jittered backoff when Retry-After is shorter', () => {
    expect(retryDelayMs(4, 100, () => 0.5)).toBe(800);
  });
});

describe('parseRetryAfter', () => {
  it.each([
    ['0', 0],
    ['1', 1_000],
    ['120', 120_000],
    [' 3 ', 3_000],
  ])('reads delay-seconds %j', (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });

  it('reads an HTTP date as the time left until it', () => {
    // Prepare
    const at = new Date(NOW + 30_000).toUTCString();

    // Act
    const ms = parseRetryAfter(at, NOW);

    // Assess
    expect(ms).toBe(30_000);
  });

  it('reads an HTTP date in the past as no wait', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', NOW)).toBe(0);
  });

  it('reads the first value of a repeated header', () => {
    expect(parseRetryAfter(['2', '60'], NOW)).toBe(2_000);
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['blank', '   '],
    ['a word', 'soon'],
    ['a number and a word', '5 apples'],
    ['a number type', 5],
    ['null', null],
    ['an empty array', []],
  ])('ignores a value that is %s', (_, value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });

  // RFC 9110 allows delay-seconds (digits) or an HTTP-date only. Date.parse is far more lenient:
  // it reads "Friday 2099" as a date 75 years ahead, which would reach the caller as Retry-After.
  it('ignores a value that is neither delay-seconds nor an HTTP date', () => {
    expect(parseRetryAfter('Friday 2099', NOW)).toBeUndefined();
  });
});
