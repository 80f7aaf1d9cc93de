/**
 * An in-process token issuer for tests: a key pair generated when a test file loads, trusted by
 * the handlers through an inline AUTH_JWKS (no network), and tokens signed with it.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import { type SigningIdentity, signToken, type TokenClaims } from '../../scripts/issuer.ts';
import type { RouteName } from './routes.ts';

export const TEST_ISSUER = 'https://issuer.test.invalid';
export const TEST_AUDIENCE = 'payhere-payments-api-test';

/**
 * The scope per route of docs/contract.md "Callers, roles and ownership", written out here so that a handler
 * declaring another one fails.
 */
export const ROUTE_SCOPES: Record<RouteName, string> = {
  charge: 'payments:charge',
  capture: 'payments:capture',
  refund: 'payments:refund',
  retrievePayments: 'payments:read',
  listSubscriptions: 'subscriptions:read',
  getSubscription: 'subscriptions:read',
  subscriptionPayments: 'subscriptions:read',
  retrySubscription: 'subscriptions:write',
  cancelSubscription: 'subscriptions:write',
  createCheckout: 'payments:charge',
  getCheckout: 'payments:read',
  listOrders: 'payments:read',
  paymentRefunds: 'payments:read',
  reconciliationReport: 'payments:read',
  listEvents: 'payments:read',
  webhookDeliveries: 'payments:read',
  redeliverEvent: 'payments:read',
};

/** Every route scope; `merchant` is not one (it grants no route by itself). */
export const ALL_TEST_SCOPES = [...new Set(Object.values(ROUTE_SCOPES))];

/** A merchant's token scope: every route, no ownership limits. */
export const MERCHANT_SCOPES = [...ALL_TEST_SCOPES, 'merchant'].join(' ');

/** A fresh ES256 key pair; `kid` names it in the JWKS and in token headers. */
export function testKey(kid: string): {
  kid: string;
  privateKey: KeyObject;
  publicJwk: JWK;
  privateJwk: JWK;
} {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    kid,
    privateKey,
    publicJwk: { ...(publicKey.export({ format: 'jwk' }) as JWK), kid, alg: 'ES256', use: 'sig' },
    privateJwk: privateKey.export({ format: 'jwk' }) as JWK,
  };
}

export const TEST_KEY = testKey('test-key-1');

export const TEST_IDENTITY: SigningIdentity = {
  issuer: TEST_ISSUER,
  audience: TEST_AUDIENCE,
  kid: TEST_KEY.kid,
  privateJwk: TEST_KEY.privateJwk,
};

/** What a function reads at start-up to trust the test issuer. */
export const TEST_AUTH_ENV = {
  AUTH_ISSUER: TEST_ISSUER,
  AUTH_AUDIENCE: TEST_AUDIENCE,
  AUTH_JWKS: JSON.stringify({ keys: [TEST_KEY.publicJwk] }),
  AUTH_JWKS_URL: '',
};

/** A valid token from the test issuer; `identity` overrides sign a token the service must refuse. */
export function testToken(claims: TokenClaims, identity: Partial<SigningIdentity> = {}): Promise<string> {
  return signToken({ ...TEST_IDENTITY, ...identity }, claims);
}

const tokens = new Map<string, Promise<string>>();

/** A valid token holding `scope`, signed once per test file. */
export function tokenFor(scope: string): Promise<string> {
  let token = tokens.get(scope);
  if (!token) {
    token = testToken({ scope, sub: 'test-client' });
    tokens.set(scope, token);
  }
  return token;
}

/** `headers` with a merchant token for the route's scope added, unless they carry an Authorization header already. */
export async function withToken(
  name: RouteName,
  headers: Record<string, string> = {},
): Promise<Record<string, string>> {
  if (Object.keys(headers).some((header) => header.toLowerCase() === 'authorization')) return headers;
  return { Authorization: `Bearer ${await tokenFor(`${ROUTE_SCOPES[name]} merchant`)}`, ...headers };
}

/** Before a handler module loads: trust the test issuer, unless the test configured another one. */
export function trustTestIssuer(): void {
  if (!process.env.AUTH_ISSUER) Object.assign(process.env, TEST_AUTH_ENV);
}
