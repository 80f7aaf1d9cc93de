import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../lib/config/config.ts';
import { loadAuthConfig } from '../../lib/http/auth/config.ts';
import { TEST_AUTH_ENV, TEST_KEY } from '../helpers/auth.ts';

const base = { AUTH_ISSUER: 'https://issuer.example', AUTH_AUDIENCE: 'payments-api' };
const jwks = (keys: unknown[]) => JSON.stringify({ keys });

function refusal(env: Record<string, string | undefined>): ConfigError {
  try {
    loadAuthConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('the configuration was accepted');
}

describe('the authentication configuration', () => {
  it('accepts an inline JWKS or a JWKS URL', () => {
    expect(loadAuthConfig({ ...base, AUTH_JWKS: jwks([TEST_KEY.publicJwk]) }).keys.source).toBe('inline');
    expect(loadAuthConfig({ ...base, AUTH_JWKS_URL: 'https://issuer.example/jwks' }).keys.source).toBe('url');
    expect(loadAuthConfig({ ...base, AUTH_JWKS_URL: 'http://127.0.0.1:9999/jwks' }).keys.source).toBe('url');
  });

  it.each([
    ['AUTH_ISSUER', { AUTH_AUDIENCE: 'a', AUTH_JWKS_URL: 'https://i/j' }],
    ['AUTH_AUDIENCE', { AUTH_ISSUER: 'https://i', AUTH_JWKS_URL: 'https://i/j' }],
    ['AUTH_JWKS_URL or AUTH_JWKS', base],
    ['AUTH_ISSUER', { ...base, AUTH_ISSUER: '   ', AUTH_JWKS_URL: 'https://i/j' }],
  ])('names %s when it is missing', (name, env) => {
    expect(refusal(env).message).toContain(`set ${name}`);
  });

  it('refuses both key sources at once', () => {
    expect(
      refusal({ ...base, AUTH_JWKS: jwks([TEST_KEY.publicJwk]), AUTH_JWKS_URL: 'https://i/j' }).message,
    ).toBe('Invalid configuration: set AUTH_JWKS_URL or AUTH_JWKS, not both.');
  });

  it('refuses keys fetched over plain http from anywhere but loopback', () => {
    expect(refusal({ ...base, AUTH_JWKS_URL: 'http://issuer.example/jwks' }).message).toContain(
      'AUTH_JWKS_URL',
    );
    expect(refusal({ ...base, AUTH_JWKS_URL: 'not a url' }).message).toContain('AUTH_JWKS_URL');
  });

  it.each([
    ['not JSON', '{"keys":'],
    ['not a key set', '{"key":[]}'],
    ['an empty key set', jwks([])],
    ['a shared secret (oct) key', jwks([{ kty: 'oct', k: 'c2VjcmV0' }])],
  ])('refuses an AUTH_JWKS that is %s, naming the variable', (_, value) => {
    expect(refusal({ ...base, AUTH_JWKS: value }).message).toContain('AUTH_JWKS');
  });

  it('refuses a private key in AUTH_JWKS without quoting it', () => {
    const error = refusal({ ...base, AUTH_JWKS: jwks([{ ...TEST_KEY.privateJwk, kid: 'k' }]) });

    expect(error.message).toContain('AUTH_JWKS');
    expect(error.message).not.toContain(String(TEST_KEY.privateJwk.d));
  });
});

describe('a function without its authentication configuration', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.resetModules();
  });

  it('fails its cold start with a message naming the variable', async () => {
    vi.stubEnv('GATEWAY_BASE_URL', 'http://127.0.0.1:9');
    vi.stubEnv('GATEWAY_APP_ID', 'app');
    vi.stubEnv('GATEWAY_APP_SECRET', 'secret');
    for (const name of Object.keys(TEST_AUTH_ENV)) vi.stubEnv(name, '');
    vi.stubEnv('AUTH_AUDIENCE', 'payments-api');
    vi.resetModules();

    await expect(import('../../functions/listSubscriptions.ts')).rejects.toThrow(
      'Missing configuration: set AUTH_ISSUER.',
    );
  });
});
