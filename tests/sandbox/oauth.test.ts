import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../sandbox/server.ts';
import { accessToken, BASIC_AUTH, call, manualClock, requestToken } from './helpers.ts';

const clock = manualClock();
let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ now: clock.now, rateLimit: false, tokenLifetimeSeconds: 599 });
});
afterAll(() => sandbox.close());
beforeEach(() => sandbox.reset());

describe('token endpoint', () => {
  it('issues a bearer token for the sandbox credentials', async () => {
    const answer = await requestToken(sandbox);

    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      access_token: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      token_type: 'bearer',
      expires_in: 599,
      scope: 'SANDBOX',
    });
  });

  it('rejects wrong or missing client credentials with invalid_client', async () => {
    const wrong = `Basic ${Buffer.from('4OVx3pFQmvkUsrq9S9Fty3:wrong').toString('base64')}`;
    const answers = [await requestToken(sandbox, wrong), await requestToken(sandbox, '')];

    for (const answer of answers) {
      expect(answer.status).toBe(401);
      expect(answer.json).toEqual({ error: 'invalid_client', error_description: 'Bad client credentials' });
    }
  });

  it('rejects a JSON body and a wrong grant type', async () => {
    const json = await call(sandbox, 'POST', '/merchant/v1/oauth/token', {
      headers: { authorization: BASIC_AUTH },
      json: { grant_type: 'client_credentials' },
    });
    const grant = await call(sandbox, 'POST', '/merchant/v1/oauth/token', {
      headers: {
        authorization: BASIC_AUTH,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=password',
    });

    expect(json.status).toBe(400);
    expect(json.json.error).toBe('invalid_request');
    expect(grant.status).toBe(400);
    expect(grant.json).toEqual({
      error: 'unsupported_grant_type',
      error_description: 'Unsupported grant type: password',
    });
  });

  it('honours a configured token lifetime', async () => {
    const short = await startSandbox({ tokenLifetimeSeconds: 30, rateLimit: false });
    try {
      expect((await requestToken(short)).json.expires_in).toBe(30);
    } finally {
      await short.close();
    }
  });

  it('issues a new token on every request by default', async () => {
    const first = await requestToken(sandbox);
    const second = await requestToken(sandbox);

    expect(second.json.access_token).not.toBe(first.json.access_token);
  });

  it('with reuseLiveTokens, answers a request before expiry with the same token and its remaining lifetime, then a new one', async () => {
    const time = manualClock();
    const reusing = await startSandbox({ now: time.now, rateLimit: false, reuseLiveTokens: true });
    try {
      const first = (await requestToken(reusing)).json;
      time.advance(540_000);
      const early = (await requestToken(reusing)).json;
      time.advance(59_000);
      const after = (await requestToken(reusing)).json;

      expect([first.expires_in, early.expires_in]).toEqual([599, 59]);
      expect(early.access_token).toBe(first.access_token);
      expect(after.access_token).not.toBe(first.access_token);
      expect(after.expires_in).toBe(599);
    } finally {
      await reusing.close();
    }
  });
});

describe('bearer check', () => {
  const path = '/merchant/v1/subscription';

  it('accepts a fresh token', async () => {
    const token = await accessToken(sandbox);

    expect((await call(sandbox, 'GET', path, { token })).json.status).toBe(1);
  });

  it('asks for authentication when there is no bearer token', async () => {
    const answer = await call(sandbox, 'GET', path);

    expect(answer.status).toBe(401);
    expect(answer.json.error).toBe('unauthorized');
  });

  it('answers invalid_token for a token it never issued', async () => {
    const answer = await call(sandbox, 'GET', path, { token: 'e291aa37-0000-4000-8000-000000000000' });

    expect(answer.status).toBe(401);
    expect(answer.json).toEqual({
      error: 'invalid_token',
      error_description: 'Invalid access token: e291aa37-0000-4000-8000-000000000000',
    });
  });

  it('expires a token after its lifetime on the injected clock', async () => {
    const token = await accessToken(sandbox);
    clock.advance(598_999);
    const before = await call(sandbox, 'GET', path, { token });
    clock.advance(1_001);
    const after = await call(sandbox, 'GET', path, { token });

    expect(before.status).toBe(200);
    expect(after.status).toBe(401);
    expect(after.json).toEqual({
      error: 'invalid_token',
      error_description: `Access token expired: ${token}`,
    });
  });

  it('expires every issued token on expireTokens(), and forgets them on reset()', async () => {
    const token = await accessToken(sandbox);
    sandbox.expireTokens();
    const expired = await call(sandbox, 'GET', path, { token });
    sandbox.reset();
    const forgotten = await call(sandbox, 'GET', path, { token });
    const fresh = await call(sandbox, 'GET', path, { token: await accessToken(sandbox) });

    expect(expired.json.error_description).toBe(`Access token expired: ${token}`);
    expect(forgotten.json.error_description).toBe(`Invalid access token: ${token}`);
    expect(fresh.status).toBe(200);
  });

  it('checks the token before the body', async () => {
    const answer = await call(sandbox, 'POST', '/merchant/v1/payment/charge', { body: 'not json' });

    expect(answer.status).toBe(401);
  });
});

describe('routing', () => {
  it('answers 404 with the envelope for anything else, and counts it as unknown', async () => {
    const token = await accessToken(sandbox);
    const answers = [
      await call(sandbox, 'GET', '/merchant/v1/payment/charge', { token }),
      await call(sandbox, 'GET', '/merchant/v2/subscription', { token }),
      await call(sandbox, 'DELETE', '/merchant/v1/subscription/420075032251', { token }),
    ];

    for (const answer of answers) {
      expect(answer.status).toBe(404);
      expect(answer.json).toEqual({ status: -1, msg: 'Not found', data: null });
    }
    expect(sandbox.counters().unknown).toBe(3);
  });
});
