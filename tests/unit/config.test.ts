import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  environmentGatewayCredentials,
  httpsOrigins,
  httpsUrl,
  loadConfig,
  requireMerchantCredentials,
} from '../../lib/config/config.ts';
import { credentialsFor } from '../../lib/config/secrets.ts';

const SECRET = 's3cr3t-Qm9vYmFyLWFwcC1zZWNyZXQ';

function env(overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    GATEWAY_BASE_URL: 'https://sandbox.payhere.lk/merchant/v1',
    GATEWAY_APP_ID: '4OVxzS6Lx7E4JFnJaJBmCm3D1',
    GATEWAY_APP_SECRET: SECRET,
    GATEWAY_MERCHANT_ID: '1211149',
    GATEWAY_MERCHANT_SECRET: 'merchant-s3cr3t-8Pq',
    ...overrides,
  };
}

function configError(input: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(input);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('loadConfig accepted the configuration');
}

describe('loadConfig', () => {
  it('reads the gateway and credentials from the environment', () => {
    // Act
    const config = loadConfig(env());

    // Assess
    expect(config).toEqual({
      gatewayBaseUrl: 'https://sandbox.payhere.lk/merchant/v1',
      credentials: {
        source: 'env',
        value: {
          appId: '4OVxzS6Lx7E4JFnJaJBmCm3D1',
          appSecret: SECRET,
          merchantId: '1211149',
          merchantSecret: 'merchant-s3cr3t-8Pq',
          appMerchantSecrets: [],
        },
      },
      rateLimit: { limit: 20, windowMs: 10_000 },
      fallbackRateLimit: { limit: 2, windowMs: 10_000 },
      fallbackContainers: 0,
    });
  });

  it('drops trailing slashes from the base URL', () => {
    expect(loadConfig(env({ GATEWAY_BASE_URL: 'http://127.0.0.1:4010/merchant/v1//' })).gatewayBaseUrl).toBe(
      'http://127.0.0.1:4010/merchant/v1',
    );
  });

  it.each(['GATEWAY_BASE_URL', 'GATEWAY_APP_ID', 'GATEWAY_APP_SECRET'])(
    'names %s when it is missing',
    (name) => {
      // Act
      const error = configError(env({ [name]: undefined }));

      // Assess
      expect(error.message).toContain(name);
    },
  );

  it.each(['GATEWAY_BASE_URL', 'GATEWAY_APP_ID', 'GATEWAY_APP_SECRET'])(
    'treats a blank %s as missing',
    (name) => {
      expect(configError(env({ [name]: '   ' })).message).toContain(name);
    },
  );

  it('reads the app merchant secrets, comma-separated', () => {
    const config = loadConfig(env({ GATEWAY_APP_MERCHANT_SECRETS: ' app-one, app-two ,' }));

    expect(config.credentials).toMatchObject({ value: { appMerchantSecrets: ['app-one', 'app-two'] } });
  });

  it.each(['GATEWAY_MERCHANT_ID', 'GATEWAY_MERCHANT_SECRET'])(
    'lets the functions that sign or verify require %s, naming it',
    (name) => {
      const config = loadConfig(env({ [name]: undefined }));

      expect(() => requireMerchantCredentials(config)).toThrow(name);
    },
  );

  it('does not require the merchant id and secret', () => {
    // Act
    const config = loadConfig(env({ GATEWAY_MERCHANT_ID: undefined, GATEWAY_MERCHANT_SECRET: undefined }));

    // Assess
    expect(config.credentials).toMatchObject({
      source: 'env',
      value: { merchantId: '', merchantSecret: '', appMerchantSecrets: [] },
    });
  });

  it.each([
    ['not a URL', 'sandbox.payhere.lk/merchant/v1'],
    ['a relative path', '/merchant/v1'],
    ['another scheme', 'ftp://sandbox.payhere.lk/merchant/v1'],
    ['a file URL', 'file:///etc/passwd'],
  ])('rejects a base URL that is %s, naming GATEWAY_BASE_URL', (_, url) => {
    expect(configError(env({ GATEWAY_BASE_URL: url })).message).toContain('GATEWAY_BASE_URL');
  });

  it.each(['http://sandbox.payhere.lk', 'http://www.payhere.lk/merchant/v1', 'http://10.0.0.5:8080'])(
    'refuses the gateway %s over plain http: the app credentials would travel in clear',
    (url) => {
      expect(configError(env({ GATEWAY_BASE_URL: url })).message).toBe(
        'Invalid configuration: GATEWAY_BASE_URL must be an absolute https URL (http only on loopback).',
      );
    },
  );

  it.each(['http://127.0.0.1:4010', 'http://localhost:4010/merchant/v1', 'http://[::1]:4010'])(
    'accepts a local gateway over http on loopback (%s)',
    (url) => {
      expect(loadConfig(env({ GATEWAY_BASE_URL: url })).gatewayBaseUrl).toBe(url);
    },
  );

  it('takes the credentials from the secret named by GATEWAY_SECRET_ID, without requiring them in the environment', () => {
    // Act
    const config = loadConfig({
      GATEWAY_BASE_URL: 'https://www.payhere.lk/merchant/v1',
      GATEWAY_SECRET_ID: ' payments/payhere-gateway ',
    });

    // Assess
    expect(config.credentials).toEqual({ source: 'secret', secretId: 'payments/payhere-gateway' });
  });

  it('refuses at start-up a Secrets Manager endpoint that is no URL, naming the variable', () => {
    const environment = {
      GATEWAY_BASE_URL: 'https://www.payhere.lk/merchant/v1',
      GATEWAY_SECRET_ID: 'payments/payhere-gateway',
      AWS_ENDPOINT_URL_SECRETS_MANAGER: 'localhost:4566',
    };

    expect(() => credentialsFor(loadConfig(environment), environment)).toThrow(
      'Invalid configuration: AWS_ENDPOINT_URL_SECRETS_MANAGER must be an absolute http(s) URL.',
    );
  });

  it('prefers the secret to credentials also present in the environment', () => {
    expect(loadConfig(env({ GATEWAY_SECRET_ID: 'payments/payhere' })).credentials).toEqual({
      source: 'secret',
      secretId: 'payments/payhere',
    });
  });

  it('still requires GATEWAY_BASE_URL with a secret', () => {
    expect(configError({ GATEWAY_SECRET_ID: 'payments/payhere' }).message).toContain('GATEWAY_BASE_URL');
  });

  it.each([
    ['20/10000', 20, 10_000],
    ['5/1000', 5, 1000],
    [' 100/60000 ', 100, 60_000],
  ])('reads GATEWAY_RATE_LIMIT %j', (value, limit, windowMs) => {
    expect(loadConfig(env({ GATEWAY_RATE_LIMIT: value })).rateLimit).toEqual({ limit, windowMs });
  });

  it('defaults to PayHere’s 20 requests per 10 seconds when GATEWAY_RATE_LIMIT is blank', () => {
    expect(loadConfig(env({ GATEWAY_RATE_LIMIT: '' })).rateLimit).toEqual({ limit: 20, windowMs: 10_000 });
  });

  it.each(['20', '20/', '/10000', '0/10000', '20/0', '-1/10000', '1.5/1000', '20 per 10s', 'twenty/10000'])(
    'rejects GATEWAY_RATE_LIMIT %j, naming it',
    (value) => {
      expect(configError(env({ GATEWAY_RATE_LIMIT: value })).message).toContain('GATEWAY_RATE_LIMIT');
    },
  );

  it('reads GATEWAY_RATE_LIMIT_FALLBACK, each container’s share while the shared table is down (2 per 10 s by default)', () => {
    expect(loadConfig(env({ GATEWAY_RATE_LIMIT_FALLBACK: '3/5000' })).fallbackRateLimit).toEqual({
      limit: 3,
      windowMs: 5_000,
    });
    expect(loadConfig(env({ GATEWAY_RATE_LIMIT_FALLBACK: ' ' })).fallbackRateLimit).toEqual({
      limit: 2,
      windowMs: 10_000,
    });
    expect(configError(env({ GATEWAY_RATE_LIMIT_FALLBACK: '2 per 10s' })).message).toContain(
      'GATEWAY_RATE_LIMIT_FALLBACK',
    );
  });

  it('gives containers shares of their own only with GATEWAY_FALLBACK_CONTAINERS, and only shares that fit in the budget', () => {
    expect(loadConfig(env()).fallbackContainers).toBe(0);
    expect(
      loadConfig(env({ GATEWAY_FALLBACK_CONTAINERS: '4', GATEWAY_RATE_LIMIT_FALLBACK: '1/10000' })),
    ).toMatchObject({
      fallbackContainers: 4,
      fallbackRateLimit: { limit: 1, windowMs: 10_000 },
    });
    // 10 containers × 2 is the whole budget: nothing left for the table.
    expect(configError(env({ GATEWAY_FALLBACK_CONTAINERS: '10' })).message).toContain(
      'GATEWAY_FALLBACK_CONTAINERS',
    );
    // A share counted over 5 s could send twice in PayHere's 10 s.
    expect(
      configError(env({ GATEWAY_FALLBACK_CONTAINERS: '2', GATEWAY_RATE_LIMIT_FALLBACK: '1/5000' })).message,
    ).toContain('GATEWAY_FALLBACK_CONTAINERS');
    expect(configError(env({ GATEWAY_FALLBACK_CONTAINERS: 'many' })).message).toContain(
      'GATEWAY_FALLBACK_CONTAINERS',
    );
  });

  it('never puts a configured value in an error message', () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9]{6,24}$/).map((s) => `zz${s}zz`);
    const broken = fc.constantFrom(
      'GATEWAY_BASE_URL',
      'GATEWAY_APP_ID',
      'GATEWAY_APP_SECRET',
      'GATEWAY_RATE_LIMIT',
      'bad url',
    );
    fc.assert(
      fc.property(secret, secret, broken, (appSecret, merchantSecret, what) => {
        const input = env({ GATEWAY_APP_SECRET: appSecret, GATEWAY_MERCHANT_SECRET: merchantSecret });
        if (what === 'bad url') input.GATEWAY_BASE_URL = `not a url ${appSecret}`;
        else if (what === 'GATEWAY_RATE_LIMIT') input.GATEWAY_RATE_LIMIT = `${appSecret}/x`;
        else if (what === 'GATEWAY_APP_SECRET') input.GATEWAY_APP_SECRET = undefined;
        else input[what] = undefined;
        const message = configError(input).message;
        return !message.includes(appSecret) && !message.includes(merchantSecret);
      }),
    );
  });
});

describe('environmentGatewayCredentials', () => {
  it('always answers the credentials it was given', async () => {
    // Prepare
    const value = {
      appId: 'app',
      appSecret: SECRET,
      merchantId: '1211149',
      merchantSecret: 'm',
      appMerchantSecrets: [],
    };
    const provider = environmentGatewayCredentials(value);

    // Act
    provider.invalidate();
    const credentials = await provider.get();

    // Assess
    expect(credentials).toEqual({
      appId: 'app',
      appSecret: SECRET,
      merchantId: '1211149',
      merchantSecret: 'm',
      appMerchantSecrets: [],
    });
  });
});

describe('httpsUrl', () => {
  it.each([
    'https://issuer.example.com/.well-known/jwks.json',
    'http://127.0.0.1:9999/jwks',
    'http://localhost/x',
    'http://[::1]:80/',
  ])('accepts %s', (value) => {
    expect(httpsUrl('SOME_URL', value).href).toBe(new URL(value).href);
  });

  it.each([
    ['plain http beyond loopback', 'http://issuer.example.com/jwks'],
    ['plain http to a private address', 'http://192.168.1.10/jwks'],
    ['a loopback look-alike', 'http://127.0.0.1.example.com/jwks'],
    ['another scheme', 'ftp://issuer.example.com/jwks'],
    ['not a URL', 'issuer.example.com/jwks'],
  ])('refuses %s, naming the variable', (_, value) => {
    expect(() => httpsUrl('SOME_URL', value)).toThrow(
      new ConfigError(
        'Invalid configuration: SOME_URL must be an absolute https URL (http only on loopback).',
      ),
    );
  });
});

describe('httpsOrigins', () => {
  it('reads a comma-separated list as browsers send Origin', () => {
    expect(
      httpsOrigins(
        'SOME_ORIGINS',
        ' https://App.Example.com , https://admin.example.com:8443/,http://localhost:5173',
      ),
    ).toEqual(['https://app.example.com', 'https://admin.example.com:8443', 'http://localhost:5173']);
  });

  it.each([undefined, '', ' , '])('is empty for %j', (value) => {
    expect(httpsOrigins('SOME_ORIGINS', value)).toEqual([]);
  });

  it.each([
    ['a path', 'https://app.example.com/app', 'must list origins only'],
    ['a query', 'https://app.example.com?x=1', 'must list origins only'],
    ['user info', 'https://user@app.example.com', 'must list origins only'],
    ['a wildcard', 'https://*.example.com', 'must list origins only'],
    ['"*"', '*', 'must be an absolute https URL'],
    ['plain http beyond loopback', 'http://app.example.com', 'must be an absolute https URL'],
  ])('refuses %s, naming the variable', (_, value, problem) => {
    expect(() => httpsOrigins('SOME_ORIGINS', `https://ok.example.com,${value}`)).toThrow(
      new RegExp(`^Invalid configuration: SOME_ORIGINS ${problem}`),
    );
  });
});
