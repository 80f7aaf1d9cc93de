import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import { type LocalIssuer, startIssuer } from '../../scripts/issuer.ts';
import type { Offline } from '../../scripts/offline.ts';
import { startOfflineAgainst } from '../helpers/offline.ts';

/**
 * Authentication as a client meets it: HTTP → serverless-offline → bundled handler, with the keys
 * fetched from the local issuer `npm start` runs (AUTH_JWKS_URL on loopback).
 */
let dir: string;
let issuer: LocalIssuer;
let sandbox: Sandbox;
let offline: Offline;
let api: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'payhere-e2e-issuer-'));
  issuer = await startIssuer({ file: path.join(dir, 'issuer.json') });
  sandbox = await startSandbox({ rateLimit: false });
  ({ offline, api } = await startOfflineAgainst(sandbox, {
    ESBUILD_WORK_FOLDER: '.esbuild-auth-e2e',
    ...issuer.env,
  }));
}, 120_000);

afterAll(async () => {
  await offline?.stop();
  await sandbox?.close();
  await issuer?.close();
  await rm(dir, { recursive: true, force: true });
});

async function get(pathname: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${api}${pathname}`, { headers });
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    wwwAuthenticate: response.headers.get('www-authenticate'),
    body: (await response.json()) as { status: number; msg: string; data: any },
  };
}

describe('authentication through serverless-offline', () => {
  it('no token: 401 unauthorized in the envelope', async () => {
    const answer = await get('/subscriptions');

    expect(answer.status).toBe(401);
    expect(answer.contentType).toMatch(/^application\/json/);
    expect(answer.wwwAuthenticate).toBe('Bearer');
    expect(answer.body).toEqual({
      status: -2,
      msg: 'Authentication is required: send Authorization: Bearer <token>.',
      data: { code: 'unauthorized' },
    });
  });

  it('a token from the local issuer without the route scope: 403 forbidden in the envelope', async () => {
    const token = await issuer.sign({ scope: 'payments:read payments:charge merchant' });

    const answer = await get('/subscriptions', { authorization: `Bearer ${token}` });

    expect(answer.status).toBe(403);
    expect(answer.contentType).toMatch(/^application\/json/);
    expect(answer.body).toEqual({
      status: -2,
      msg: 'The token is valid but lacks the scope subscriptions:read that this route requires.',
      data: { code: 'forbidden' },
    });
  });

  it('a merchant token with the route scope: 200 from the gateway', async () => {
    const token = await issuer.sign({ scope: 'subscriptions:read merchant' });

    const list = await get('/subscriptions', { authorization: `Bearer ${token}` });
    const one = await get(`/subscriptions/${SEED.subscriptions.active}`, {
      authorization: `Bearer ${token}`,
    });

    expect(list.status).toBe(200);
    expect(list.body.msg).toMatch(/^Found \d+ subscriptions$/);
    expect(one.status).toBe(200);
    expect(one.body.data.subscription_id).toBe(SEED.subscriptions.active);
  });

  it('a token signed by another issuer: 401', async () => {
    const other = await startIssuer({ file: path.join(dir, 'other.json') });
    const token = await other.sign({ scope: 'subscriptions:read' });
    await other.close();

    expect((await get('/subscriptions', { authorization: `Bearer ${token}` })).status).toBe(401);
  });
});
