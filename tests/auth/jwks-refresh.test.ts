import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JWK } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../lib/envelope/errors.ts';
import { loadAuthConfig } from '../../lib/http/auth/config.ts';
import {
  createTokenVerifier,
  JWKS_REFRESH_COOLDOWN_MS,
  type TokenVerifier,
} from '../../lib/http/auth/verify.ts';
import { TEST_AUDIENCE, TEST_ISSUER, testKey, testToken } from '../helpers/auth.ts';

/**
 * The keys behind AUTH_JWKS_URL: fetched once and kept in module scope, fetched again for an
 * unknown `kid` at most once a minute. A loopback JWKS server counts the fetches; the clock
 * (Date only: sockets and timers stay real) is moved by the test.
 */
const first = testKey('key-1');
const rotated = testKey('key-2');

let server: Server;
let url: string;
let served: { status: number; keys: JWK[] };
let fetches = 0;

beforeAll(async () => {
  server = createServer((_, res) => {
    fetches++;
    res
      .writeHead(served.status, { 'content-type': 'application/json' })
      .end(JSON.stringify({ keys: served.keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

let verifier: TokenVerifier;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date('2026-11-21T06:00:00Z'));
  served = { status: 200, keys: [first.publicJwk] };
  fetches = 0;
  verifier = createTokenVerifier(
    loadAuthConfig({ AUTH_ISSUER: TEST_ISSUER, AUTH_AUDIENCE: TEST_AUDIENCE, AUTH_JWKS_URL: url }),
  );
});
afterEach(() => {
  vi.useRealTimers();
});

const tokenOf = (key: ReturnType<typeof testKey>) =>
  testToken({ scope: 'payments:read', sub: 'jwks-tester' }, { kid: key.kid, privateJwk: key.privateJwk });

const advance = (ms: number) => vi.setSystemTime(Date.now() + ms);

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe('keys from AUTH_JWKS_URL', () => {
  it('are fetched once and then kept: many verifications, one fetch', async () => {
    const token = await tokenOf(first);

    for (let i = 0; i < 5; i++)
      expect(await verifier.verify(token)).toEqual({
        sub: 'jwks-tester',
        scopes: ['payments:read'],
        role: 'customer',
      });

    expect(fetches).toBe(1);
  });

  it('an unknown kid: exactly one refresh, then 401; another at once: no refresh at all', async () => {
    await verifier.verify(await tokenOf(first));
    advance(JWKS_REFRESH_COOLDOWN_MS + 1_000);

    const unknown = await refusal(verifier.verify(await tokenOf(rotated)));
    expect(unknown.httpStatus).toBe(401);
    expect(fetches).toBe(2);

    const again = await refusal(verifier.verify(await tokenOf(rotated)));
    expect(again.httpStatus).toBe(401);
    expect(fetches).toBe(2);
  });

  it('unknown kids within a minute of the last fetch never refresh, however many arrive', async () => {
    await verifier.verify(await tokenOf(first));
    advance(JWKS_REFRESH_COOLDOWN_MS - 1_000);

    for (let i = 0; i < 10; i++) {
      expect((await refusal(verifier.verify(await tokenOf(testKey(`junk-${i}`))))).httpStatus).toBe(401);
    }

    expect(fetches).toBe(1);
  });

  it('picks up a rotated key with its first token after the cooldown', async () => {
    await verifier.verify(await tokenOf(first));
    served.keys = [first.publicJwk, rotated.publicJwk];
    advance(JWKS_REFRESH_COOLDOWN_MS + 1_000);

    expect((await verifier.verify(await tokenOf(rotated))).sub).toBe('jwks-tester');
    expect(fetches).toBe(2);
  });

  it('concurrent tokens with an unknown kid share one refresh', async () => {
    await verifier.verify(await tokenOf(first));
    advance(JWKS_REFRESH_COOLDOWN_MS + 1_000);
    const token = await tokenOf(rotated);

    const answers = await Promise.allSettled(Array.from({ length: 8 }, () => verifier.verify(token)));

    expect(answers.every((answer) => answer.status === 'rejected')).toBe(true);
    expect(fetches).toBe(2);
  });

  it('answers 503, not 401, when the issuer cannot serve its keys', async () => {
    served.status = 500;

    const error = await refusal(verifier.verify(await tokenOf(first)));

    expect(error.httpStatus).toBe(503);
    expect(error.code).toBe('gateway_unavailable');
  });

  it('answers 503 when the JWKS URL answers something that is not a key set', async () => {
    served = { status: 200, keys: 'nope' as unknown as JWK[] };

    expect((await refusal(verifier.verify(await tokenOf(first)))).httpStatus).toBe(503);
  });

  it('does not fetch keys at all for a token refused on its algorithm', async () => {
    const [, payload] = (await tokenOf(first)).split('.');
    const header = Buffer.from(JSON.stringify({ alg: 'HS256', kid: 'x' })).toString('base64url');

    expect((await refusal(verifier.verify(`${header}.${payload}.c2ln`))).httpStatus).toBe(401);
    expect(fetches).toBe(0);
  });
});
