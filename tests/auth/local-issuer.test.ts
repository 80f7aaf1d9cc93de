import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAuthConfig } from '../../lib/http/auth/config.ts';
import { createTokenVerifier } from '../../lib/http/auth/verify.ts';
import { type LocalIssuer, startIssuer } from '../../scripts/issuer.ts';

/** `npm start`'s issuer and `npm run token`: what the token script prints, the local API accepts. */
const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

let dir: string;
let file: string;
let issuer: LocalIssuer;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'payhere-issuer-'));
  file = path.join(dir, 'issuer.json');
  issuer = await startIssuer({ file });
});
afterAll(async () => {
  await issuer.close();
  await rm(dir, { recursive: true, force: true });
});

/** `npm run -s token -- ...args`, as a developer runs it. */
function token(args: string[], issuerFile = file) {
  return run(process.execPath, ['scripts/token.ts', ...args], {
    cwd: root,
    env: { ...process.env, LOCAL_ISSUER_FILE: issuerFile },
  });
}

describe('the local issuer', () => {
  it('serves its public key only, as a JWKS on loopback', async () => {
    const response = await fetch(issuer.jwksUrl);
    const jwks = (await response.json()) as { keys: Record<string, unknown>[] };

    expect(new URL(issuer.jwksUrl).hostname).toBe('127.0.0.1');
    expect(response.status).toBe(200);
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', kid: issuer.kid });
    expect(jwks.keys[0]).not.toHaveProperty('d');
  });

  it('keeps the signing key in a file only its owner can read', async () => {
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('passes the functions AUTH_ISSUER, AUTH_AUDIENCE and AUTH_JWKS_URL', () => {
    expect(issuer.env).toEqual({
      AUTH_ISSUER: issuer.issuer,
      AUTH_AUDIENCE: 'payhere-payments-api',
      AUTH_JWKS_URL: issuer.jwksUrl,
      AUTH_JWKS: '',
    });
  });
});

describe('npm run token', () => {
  const verifier = () => createTokenVerifier(loadAuthConfig(issuer.env));

  it('prints a token with all four scopes for an hour by default, which the API accepts', async () => {
    const { stdout } = await token([]);
    const printed = stdout.trim();
    const claims = decodeJwt(printed);

    expect(await verifier().verify(printed)).toEqual({
      sub: 'local-developer',
      scopes: [
        'payments:read',
        'payments:charge',
        'payments:capture',
        'payments:refund',
        'subscriptions:read',
        'subscriptions:write',
        'merchant',
      ],
      role: 'merchant',
    });
    expect(claims.exp! - claims.iat!).toBe(3600);
  });

  it('takes --scope, --expires-in and --sub', async () => {
    const { stdout } = await token([
      '--scope',
      'payments:charge payments:read',
      '--expires-in',
      '120',
      '--sub',
      'alice',
    ]);
    const claims = decodeJwt(stdout.trim());

    expect(await verifier().verify(stdout.trim())).toEqual({
      sub: 'alice',
      scopes: ['payments:charge', 'payments:read'],
      role: 'customer',
    });
    expect(claims.exp! - claims.iat!).toBe(120);
  });

  it('refuses an --expires-in that is not a positive whole number', async () => {
    await expect(token(['--expires-in', 'soon'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('--expires-in'),
    });
  });

  it('says to run npm start first when no issuer is running', async () => {
    await expect(token([], path.join(dir, 'missing.json'))).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('npm start'),
    });
  });
});
