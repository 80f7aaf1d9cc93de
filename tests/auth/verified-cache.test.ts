import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ApiError } from '../../lib/envelope/errors.ts';
import { loadAuthConfig } from '../../lib/http/auth/config.ts';
import {
  CLOCK_TOLERANCE_SECONDS,
  createTokenVerifier,
  VERIFIED_TOKEN_TTL_MS,
} from '../../lib/http/auth/verify.ts';
import { TEST_AUTH_ENV, testToken } from '../helpers/auth.ts';

/**
 * A verified token is remembered by its exact text so the same token, sent again, skips the
 * signature check; its time claims still hold on every use. Counted at WebCrypto's verify.
 */
const verifier = () => createTokenVerifier(loadAuthConfig(TEST_AUTH_ENV));
const start = new Date('2026-11-21T06:00:00Z').getTime();

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(start);
});
afterEach(() => {
  vi.useRealTimers();
});

async function refusalOf(promise: Promise<unknown>): Promise<ApiError | undefined> {
  return promise.then(
    () => undefined,
    (error: unknown) => error as ApiError,
  );
}

describe('verified tokens', () => {
  it('check the signature of a token sent twice only once', async () => {
    const signatureChecks = vi.spyOn(crypto.subtle, 'verify');
    const tokens = verifier();
    const token = await testToken({ scope: 'payments:read', sub: 'cache-1', expiresInSeconds: 3600 });

    const first = await tokens.verify(token);
    const second = await tokens.verify(token);

    expect(second).toEqual(first);
    expect(first.sub).toBe('cache-1');
    expect(signatureChecks).toHaveBeenCalledTimes(1);
  });

  it('check it again after a minute', async () => {
    const signatureChecks = vi.spyOn(crypto.subtle, 'verify');
    const tokens = verifier();
    const token = await testToken({ scope: 'payments:read', sub: 'cache-2', expiresInSeconds: 3600 });
    await tokens.verify(token);

    vi.setSystemTime(start + VERIFIED_TOKEN_TTL_MS + 1);
    await tokens.verify(token);

    expect(signatureChecks).toHaveBeenCalledTimes(2);
  });

  it('are refused once expired, although they were remembered', async () => {
    const tokens = verifier();
    const token = await testToken({ scope: 'payments:read', sub: 'cache-3', expiresInSeconds: 10 });
    await tokens.verify(token);

    vi.setSystemTime(start + (10 + CLOCK_TOLERANCE_SECONDS + 1) * 1000);
    const refusal = await refusalOf(tokens.verify(token));

    expect(refusal?.httpStatus).toBe(401);
    expect(refusal?.message).toMatch(/expired/);
  });

  it('never let a different token pass for a remembered one', async () => {
    const tokens = verifier();
    const token = await testToken({ scope: 'payments:read', sub: 'cache-4', expiresInSeconds: 3600 });
    await tokens.verify(token);
    const [header, payload] = token.split('.');
    const forged = `${header}.${payload}.${'A'.repeat(86)}`;

    const refusal = await refusalOf(tokens.verify(forged));

    expect(refusal?.httpStatus).toBe(401);
  });
});
