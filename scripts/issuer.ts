/**
 * The local token issuer for `npm start`: an ES256 key pair generated at every start (never
 * committed), its public half served as a JWKS on loopback, its private half written to a
 * git-ignored file (.local/issuer.json, mode 600) from which `npm run token` signs tokens.
 */
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Where `npm start` leaves the signing key for `npm run token` (LOCAL_ISSUER_FILE moves it). */
export const ISSUER_FILE = process.env.LOCAL_ISSUER_FILE || path.join(root, '.local', 'issuer.json');
export const LOCAL_AUDIENCE = 'payhere-payments-api';
export const JWKS_PATH = '/.well-known/jwks.json';
/** A merchant token: every route's scope and `merchant`, which lifts the ownership rules. */
export const ALL_SCOPES =
  'payments:read payments:charge payments:capture payments:refund subscriptions:read subscriptions:write merchant';
const ALGORITHM = 'ES256';

/** What signs a token: the issuer's name, the audience, and the private key with its id. */
export interface SigningIdentity {
  issuer: string;
  audience: string;
  kid: string;
  privateJwk: JWK;
}

export interface TokenClaims {
  /** Space-separated scopes. */
  scope: string;
  sub?: string;
  expiresInSeconds?: number;
}

/** A token as an identity provider would issue it for this API. */
export async function signToken(identity: SigningIdentity, claims: TokenClaims): Promise<string> {
  const key = await importJWK(identity.privateJwk, ALGORITHM);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: claims.scope })
    .setProtectedHeader({ alg: ALGORITHM, kid: identity.kid, typ: 'JWT' })
    .setIssuer(identity.issuer)
    .setAudience(identity.audience)
    .setSubject(claims.sub ?? 'local-developer')
    .setIssuedAt(now)
    .setExpirationTime(now + (claims.expiresInSeconds ?? 3600))
    .sign(key);
}

export interface LocalIssuer extends SigningIdentity {
  jwksUrl: string;
  /** What the functions need to trust this issuer (AUTH_ISSUER, AUTH_AUDIENCE, AUTH_JWKS_URL). */
  env: Record<string, string>;
  sign(claims: TokenClaims): Promise<string>;
  close(): Promise<void>;
}

export async function startIssuer(options: { port?: number; file?: string } = {}): Promise<LocalIssuer> {
  const file = options.file ?? ISSUER_FILE;
  const { publicKey, privateKey } = await generateKeyPair(ALGORITHM, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const jwks = JSON.stringify({ keys: [{ ...publicJwk, kid, alg: ALGORITHM, use: 'sig' }] });

  const server = createServer((req, res) => {
    const found = req.method === 'GET' && req.url === JWKS_PATH;
    res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' });
    res.end(found ? jwks : '{"error":"not_found"}');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const identity: SigningIdentity = {
    issuer: base,
    audience: LOCAL_AUDIENCE,
    kid,
    privateJwk: await exportJWK(privateKey),
  };

  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(identity, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);

  return {
    ...identity,
    jwksUrl: `${base}${JWKS_PATH}`,
    env: {
      AUTH_ISSUER: base,
      AUTH_AUDIENCE: LOCAL_AUDIENCE,
      AUTH_JWKS_URL: `${base}${JWKS_PATH}`,
      AUTH_JWKS: '',
    },
    sign: (claims) => signToken(identity, claims),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(file, { force: true });
    },
  };
}

/** The identity `npm start` wrote, for `npm run token`. */
export async function readIssuerFile(file = ISSUER_FILE): Promise<SigningIdentity> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    throw new Error(
      `No local issuer: run \`npm start\` first (it writes ${path.relative(process.cwd(), file)}).`,
    );
  }
  return JSON.parse(text) as SigningIdentity;
}
