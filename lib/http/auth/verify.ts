import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';
import { GatewayUnavailableError, UnauthorizedError } from '../../envelope/errors.ts';
import type { Caller } from '../caller.ts';
import type { AuthConfig } from './config.ts';
import { MERCHANT_SCOPE, scopesOf } from './scopes.ts';

/** Asymmetric signatures only: with HMAC, anyone holding the (public) key could mint tokens. */
export const ACCEPTED_ALGORITHMS = [
  ...['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'],
  ...['ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'],
];
/** Clocks of the issuer, the client and Lambda drift apart a little. */
export const CLOCK_TOLERANCE_SECONDS = 30;
/** An unknown `kid` refreshes the keys at most this often, so junk tokens cannot hammer the issuer. */
export const JWKS_REFRESH_COOLDOWN_MS = 60_000;
/** Keys are looked up again after this long even without an unknown `kid` (revoked keys drop out). */
export const JWKS_MAX_AGE_MS = 10 * 60_000;
const JWKS_TIMEOUT_MS = 3_000;
const MAX_SUBJECT_LENGTH = 255;

export const TOKEN_INVALID =
  'The bearer token is not valid: get a new token and send it as Authorization: Bearer <token>.';
export const TOKEN_EXPIRED = 'The bearer token has expired: get a new token.';

/** Turns a bearer token into the caller it proves, or refuses it. */
export interface TokenVerifier {
  verify(token: string): Promise<Caller>;
}

/** The issuer's keys could not be fetched: not the caller's fault, so not a 401. */
class KeysUnavailableError extends Error {
  constructor(cause: unknown) {
    super('The JSON Web Key Set could not be fetched', { cause });
    this.name = 'KeysUnavailableError';
  }
}

/** A fetch that failed (network, timeout, non-200, not a JWKS), as opposed to a key that does not match. */
function isFetchFailure(error: unknown): boolean {
  if (!(error instanceof errors.JOSEError)) return true;
  return ['ERR_JOSE_GENERIC', 'ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID'].includes(error.code);
}

function keyResolver(keys: AuthConfig['keys']): JWTVerifyGetKey {
  if (keys.source === 'inline') return createLocalJWKSet(keys.jwks);
  // Module scope holds this resolver, and with it the fetched keys, for the life of the container.
  const remote = createRemoteJWKSet(keys.url, {
    cooldownDuration: JWKS_REFRESH_COOLDOWN_MS,
    cacheMaxAge: JWKS_MAX_AGE_MS,
    timeoutDuration: JWKS_TIMEOUT_MS,
  });
  return async (header, token) => {
    try {
      return await remote(header, token);
    } catch (error) {
      throw isFetchFailure(error) ? new KeysUnavailableError(error) : error;
    }
  };
}

function refusal(error: unknown): Error {
  if (error instanceof KeysUnavailableError) {
    return new GatewayUnavailableError(
      'The service cannot verify bearer tokens right now (the token issuer is unreachable); try again later.',
      error,
    );
  }
  if (error instanceof errors.JWTExpired) return new UnauthorizedError(TOKEN_EXPIRED);
  return new UnauthorizedError(TOKEN_INVALID);
}

function callerOf(payload: JWTPayload): Caller {
  const { sub } = payload;
  if (typeof sub !== 'string' || sub === '' || sub.length > MAX_SUBJECT_LENGTH) {
    throw new UnauthorizedError(TOKEN_INVALID);
  }
  const scopes = scopesOf(payload.scope);
  return { sub, scopes, role: scopes.includes(MERCHANT_SCOPE) ? 'merchant' : 'customer' };
}

/**
 * A client sends the same token with every request until it expires. A token whose signature
 * and claims were verified is remembered by its exact text (signature included, so nothing else
 * can match it) for a minute at most, and its time claims are checked again on every use.
 */
export const VERIFIED_TOKEN_TTL_MS = 60_000;
const MAX_VERIFIED_TOKENS = 1_000;

interface Verified {
  caller: Caller;
  /** `exp` and `nbf` in epoch seconds. */
  exp: number;
  nbf: number;
  until: number;
}

function stillValid(entry: Verified, now: number): boolean {
  const seconds = now / 1000;
  return (
    now < entry.until &&
    seconds < entry.exp + CLOCK_TOLERANCE_SECONDS &&
    seconds >= entry.nbf - CLOCK_TOLERANCE_SECONDS
  );
}

export function createTokenVerifier(config: AuthConfig): TokenVerifier {
  const keys = keyResolver(config.keys);
  const verified = new Map<string, Verified>();
  return {
    async verify(token) {
      const now = Date.now();
      const known = verified.get(token);
      if (known && stillValid(known, now)) return known.caller;
      verified.delete(token);
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, keys, {
          issuer: config.issuer,
          audience: config.audience,
          algorithms: ACCEPTED_ALGORITHMS,
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          requiredClaims: ['exp', 'sub'],
        }));
      } catch (error) {
        throw refusal(error);
      }
      const caller = callerOf(payload);
      if (verified.size >= MAX_VERIFIED_TOKENS) verified.delete(verified.keys().next().value!);
      verified.set(token, {
        caller,
        exp: payload.exp!,
        nbf: payload.nbf ?? Number.NEGATIVE_INFINITY,
        until: now + VERIFIED_TOKEN_TTL_MS,
      });
      return caller;
    },
  };
}
