import { createHmac, createPublicKey } from 'node:crypto';
import { type JWTPayload, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { TEST_AUDIENCE, TEST_ISSUER, TEST_KEY, testKey, testToken, tokenFor } from '../helpers/auth.ts';
import { type Answer, apiEvent, invoke } from '../helpers/events.ts';
import { call, handlerOf, useTestGateway } from '../helpers/gateway.ts';
import { ROUTES } from '../helpers/routes.ts';

/**
 * The authentication middleware through a real handler (GET /subscriptions, subscriptions:read)
 * against the sandbox: what it accepts answers 200 from the gateway, what it refuses answers 401
 * before the gateway is reached.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });

const now = () => Math.floor(Date.now() / 1000);
const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

const claims = (overrides: JWTPayload = {}): JWTPayload => ({
  iss: TEST_ISSUER,
  aud: TEST_AUDIENCE,
  sub: 'test-client',
  scope: 'subscriptions:read',
  iat: now(),
  exp: now() + 600,
  ...overrides,
});

/** A token signed with the test key (or `key`), with exactly the given claims: nothing added. */
function signed(payload: JWTPayload, options: { key?: ReturnType<typeof testKey>; kid?: string } = {}) {
  const key = options.key ?? TEST_KEY;
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256', kid: options.kid ?? key.kid, typ: 'JWT' })
    .sign(key.privateKey);
}

/** GET /subscriptions with exactly these headers (and these multi-value headers on top). */
async function listWith(headers: Record<string, string>, multiValueHeaders?: Record<string, string[]>) {
  const event = apiEvent({ ...ROUTES.listSubscriptions, headers });
  if (multiValueHeaders) event.multiValueHeaders = { ...event.multiValueHeaders, ...multiValueHeaders };
  return invoke(await handlerOf('listSubscriptions'), event);
}

const bearer = async (token: string | Promise<string>) =>
  listWith({ Authorization: `Bearer ${await token}` });

function expectUnauthorized(answer: Answer) {
  expect(answer.statusCode).toBe(401);
  expect(answer.headers['Content-Type']).toBe('application/json');
  expect(answer.headers['WWW-Authenticate']).toBe('Bearer');
  expect(Object.keys(answer.body).sort()).toEqual(['data', 'msg', 'status']);
  expect(answer.body.status).toBe(-2);
  expect(answer.body.data).toEqual({ code: 'unauthorized' });
  expect(answer.body.msg).toEqual(expect.any(String));
  expect(Object.values(sandbox.counters()).every((count) => count === 0)).toBe(true);
}

describe('a valid token', () => {
  it('is accepted: the route answers from the gateway', async () => {
    const answer = await bearer(tokenFor('subscriptions:read'));

    expect(answer.statusCode).toBe(200);
    expect(answer.body.msg).toMatch(/^Found \d+ subscriptions$/);
  });

  it('is accepted with the scheme in any case (RFC 7235) and surrounding spaces', async () => {
    const token = await tokenFor('subscriptions:read');

    expect((await listWith({ authorization: `bearer ${token}` })).statusCode).toBe(200);
    expect((await listWith({ AUTHORIZATION: `BEARER ${token}` })).statusCode).toBe(200);
    expect((await listWith({ Authorization: ` Bearer ${token} ` })).statusCode).toBe(200);
  });

  it('is accepted up to 30 s after exp and 30 s before nbf (clock leeway)', async () => {
    expect((await bearer(signed(claims({ exp: now() - 20 })))).statusCode).toBe(200);
    expect((await bearer(signed(claims({ nbf: now() + 20 })))).statusCode).toBe(200);
  });
});

describe('a token that must be refused with 401', () => {
  it('expired beyond the leeway, saying so', async () => {
    const answer = await bearer(signed(claims({ exp: now() - 40 })));

    expectUnauthorized(answer);
    expect(answer.body.msg).toMatch(/expired/);
  });

  it('not yet valid beyond the leeway', async () => {
    expectUnauthorized(await bearer(signed(claims({ nbf: now() + 60 }))));
  });

  it('from another issuer', async () => {
    expectUnauthorized(await bearer(signed(claims({ iss: 'https://evil.example' }))));
    expectUnauthorized(
      await bearer(testToken({ scope: 'subscriptions:read' }, { issuer: `${TEST_ISSUER}/` })),
    );
  });

  it('for another audience', async () => {
    expectUnauthorized(await bearer(signed(claims({ aud: 'another-api' }))));
    expectUnauthorized(await bearer(signed(claims({ aud: [] }))));
  });

  it('signed with another key under the trusted key id', async () => {
    expectUnauthorized(await bearer(signed(claims(), { key: testKey(TEST_KEY.kid) })));
  });

  it('signed with a key the JWKS does not have (unknown kid)', async () => {
    expectUnauthorized(await bearer(signed(claims(), { key: testKey('unknown-kid') })));
  });

  it('without exp, or without sub, or with a sub that is not a string', async () => {
    const { exp: _exp, ...withoutExp } = claims();
    const { sub: _sub, ...withoutSub } = claims();

    expectUnauthorized(await bearer(signed(withoutExp)));
    expectUnauthorized(await bearer(signed(withoutSub)));
    expectUnauthorized(await bearer(signed({ ...claims(), sub: 42 as unknown as string })));
  });

  it('with alg none (unsigned), with or without a signature part', async () => {
    const unsigned = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims())}`;

    expectUnauthorized(await bearer(`${unsigned}.`));
    expectUnauthorized(await bearer(`${unsigned}.AAAA`));
  });

  it('with HS256 signed using the public key as the shared secret (algorithm confusion)', async () => {
    const pem = createPublicKey(TEST_KEY.privateKey).export({ type: 'spki', format: 'pem' }) as string;
    const input = `${b64url({ alg: 'HS256', typ: 'JWT', kid: TEST_KEY.kid })}.${b64url(claims())}`;
    const forge = (secret: string) =>
      `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;

    expectUnauthorized(await bearer(forge(pem)));
    expectUnauthorized(await bearer(forge(JSON.stringify(TEST_KEY.publicJwk))));
  });

  it('with a tampered payload (scope widened after signing)', async () => {
    const [header, , signature] = (await tokenFor('subscriptions:read')).split('.');
    const widened = b64url(claims({ scope: 'subscriptions:read payments:charge merchant' }));

    expectUnauthorized(await bearer(`${header}.${widened}.${signature}`));
  });
});

describe('a malformed Authorization header is refused with 401', () => {
  it.each([
    ['absent', {}],
    ['empty', { Authorization: '' }],
    ['the token without a scheme', 'RAW'],
    ['another scheme', { Authorization: 'Basic dXNlcjpwYXNz' }],
    ['the scheme alone', { Authorization: 'Bearer' }],
    ['garbage', { Authorization: 'Bearer %%%not-a-token%%%' }],
    ['a token that is not three parts', { Authorization: 'Bearer abc.def' }],
    [
      'very long (over 8 KB)',
      { Authorization: `Bearer ${'a'.repeat(4000)}.${'b'.repeat(4000)}.${'c'.repeat(400)}` },
    ],
  ])('%s', async (_, headers) => {
    const token = await tokenFor('subscriptions:read');
    const answer = await listWith(
      headers === 'RAW' ? { Authorization: token } : (headers as Record<string, string>),
    );

    expectUnauthorized(answer);
  });

  it('two tokens in one header', async () => {
    const token = await tokenFor('subscriptions:read');

    expectUnauthorized(await listWith({ Authorization: `Bearer ${token} ${token}` }));
    expectUnauthorized(await listWith({ Authorization: `Bearer ${token}, Bearer ${token}` }));
  });

  it('the header twice, as API Gateway passes a repeated header or two spellings of its name', async () => {
    const token = await tokenFor('subscriptions:read');

    expectUnauthorized(
      await listWith(
        { Authorization: `Bearer ${token}` },
        { Authorization: [`Bearer ${token}`, `Bearer ${token}`] },
      ),
    );
    expectUnauthorized(
      await listWith({ Authorization: `Bearer ${token}`, authorization: `Bearer ${token}` }),
    );
  });
});

describe('before authentication nothing else about the request is looked at', () => {
  it.each<[string, { body: unknown; headers?: Record<string, string> }]>([
    ['a body that is not JSON', { body: '{"type":' }],
    ['a body with unknown fields', { body: { nonsense: true } }],
    ['a body over the size limit', { body: 'x'.repeat(64 * 1024) }],
    ['a body that is not JSON by content type', { body: 'a=b', headers: { 'Content-Type': 'text/plain' } }],
  ])('%s: 401, and no validation detail in the answer', async (_, options) => {
    const answer = await call('charge', { ...options, headers: { ...options.headers, Authorization: '' } });

    expectUnauthorized(answer);
    expect(answer.raw).not.toMatch(/errors|payload|json|type/i);
  });

  it('an invalid path id with no token: 401, not 400', async () => {
    const answer = await call('getSubscription', { id: 'not-digits', headers: { Authorization: '' } });

    expectUnauthorized(answer);
  });
});
