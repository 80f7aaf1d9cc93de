import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { SecretsManagerClient } from '../../lib/aws/secrets-manager.ts';
import { SECRET_MAX_AGE_MS, secretGatewayCredentials } from '../../lib/config/secrets.ts';
import { GatewayUnavailableError } from '../../lib/envelope/errors.ts';
import { captureLogs } from '../helpers/logs.ts';
import { freePort } from '../helpers/ports.ts';
import { type FakeSecretsManager, startFakeSecretsManager } from '../helpers/secrets-manager.ts';

/** The Secrets Manager credentials provider, with the service's own client over loopback HTTP. */
const SECRET_ID = 'payhere-payments-api/test/gateway';
const CANARY = 'CANARY-SECRET-7f3a9c1e';
const document = (overrides: Record<string, unknown> = {}) =>
  JSON.stringify({
    app_id: 'app-1',
    app_secret: CANARY,
    merchant_id: '1211149',
    merchant_secret: 'CANARY-MERCHANT-SECRET-51d0',
    ...overrides,
  });

let fake: FakeSecretsManager;
let clock: number;

const clientFor = (endpoint: string) =>
  new SecretsManagerClient({
    endpoint,
    region: 'ap-south-1',
    credentials: () => ({ accessKeyId: 'test', secretAccessKey: 'test' }),
    maxAttempts: 1,
  });

beforeAll(async () => {
  fake = await startFakeSecretsManager();
});
afterAll(async () => {
  await fake.close();
});
afterEach(() => {
  vi.unstubAllEnvs();
});

let reads0: number;
beforeEach(() => {
  fake.secrets.clear();
  fake.secrets.set(SECRET_ID, document());
  clock = 1_000_000;
  reads0 = fake.reads();
});

const reads = () => fake.reads() - reads0;
const provider = (secretId = SECRET_ID) =>
  secretGatewayCredentials({ secretId, client: clientFor(fake.endpoint), now: () => clock });

async function failure(promise: Promise<unknown>): Promise<GatewayUnavailableError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatewayUnavailableError);
  return error as GatewayUnavailableError;
}

describe('gateway credentials from Secrets Manager', () => {
  it('are read from the secret on first use and mapped field by field', async () => {
    expect(await provider().get()).toEqual({
      appId: 'app-1',
      appSecret: CANARY,
      merchantId: '1211149',
      merchantSecret: 'CANARY-MERCHANT-SECRET-51d0',
      appMerchantSecrets: [],
    });
    expect(reads()).toBe(1);
  });

  it('include the app merchant secrets when the secret lists them', async () => {
    fake.secrets.set(SECRET_ID, document({ app_merchant_secrets: ['APP-ONE', 'APP-TWO'] }));

    expect((await provider().get()).appMerchantSecrets).toEqual(['APP-ONE', 'APP-TWO']);
  });

  it('are kept for less than 5 minutes, then read again', async () => {
    const credentials = provider();
    await credentials.get();

    clock += SECRET_MAX_AGE_MS - 1;
    await credentials.get();
    expect(reads()).toBe(1);

    clock += 1;
    await credentials.get();
    expect(reads()).toBe(2);
  });

  it('are fetched once for concurrent callers', async () => {
    const credentials = provider();
    const release = fake.hold();

    const pending = Array.from({ length: 10 }, () => credentials.get());
    release();
    const values = await Promise.all(pending);

    expect(new Set(values.map((v) => v.appSecret))).toEqual(new Set([CANARY]));
    expect(reads()).toBe(1);
  });

  it('are read again at once after invalidate (the gateway rejected them), picking up a rotation', async () => {
    const credentials = provider();
    await credentials.get();
    fake.secrets.set(SECRET_ID, document({ app_secret: 'rotated' }));

    expect((await credentials.get()).appSecret).toBe(CANARY);
    credentials.invalidate();
    const release = fake.hold();
    const after = Promise.all([credentials.get(), credentials.get(), credentials.get()]);
    release();

    expect((await after).map((c) => c.appSecret)).toEqual(['rotated', 'rotated', 'rotated']);
    expect(reads()).toBe(2);
  });

  it.each([
    ['not JSON', `${CANARY} is not JSON`, /is not JSON/],
    ['JSON but not an object', JSON.stringify(CANARY), /is not a JSON object/],
    [
      'missing fields',
      JSON.stringify({ app_id: 'app-1', app_secret: CANARY }),
      /lacks a non-empty merchant_id, merchant_secret/,
    ],
    ['an empty field', document({ app_secret: '' }), /lacks a non-empty app_secret/],
    [
      'app secrets that are not a list of secrets',
      document({ app_merchant_secrets: [''] }),
      /lacks a non-empty app_merchant_secrets/,
    ],
  ])(
    'a secret that is %s: 503 gateway_unavailable, the secret and the problem named in the log only, never its value',
    async (_, value, problem) => {
      fake.secrets.set(SECRET_ID, value);
      const logs = captureLogs();

      const error = await failure(provider().get());

      expect(error.httpStatus).toBe(503);
      expect(error.code).toBe('gateway_unavailable');
      expect(error.message).toBe(
        'The payment gateway credentials are unavailable right now; try again later.',
      );
      const line = logs.find((l) => l.message === 'the gateway credentials are unavailable');
      expect(line).toMatchObject({
        level: 'error',
        secretId: SECRET_ID,
        problem: expect.stringMatching(problem),
      });
      expect(JSON.stringify({ message: error.message, cause: String(error.cause), logs })).not.toContain(
        CANARY,
      );
    },
  );

  it('a secret that does not exist: 503, named in the log with what went wrong', async () => {
    const logs = captureLogs();

    const error = await failure(provider('no/such/secret').get());

    expect(error.message).not.toContain('no/such/secret');
    expect(logs.find((l) => l.level === 'error')).toMatchObject({
      secretId: 'no/such/secret',
      problem: 'the secret cannot be read',
      error: { name: 'ResourceNotFoundException' },
    });
  });

  it('Secrets Manager unreachable: 503, the secret named in the log', async () => {
    const logs = captureLogs();
    const unreachable = secretGatewayCredentials({
      secretId: SECRET_ID,
      client: clientFor(`http://127.0.0.1:${await freePort()}`),
    });

    expect((await failure(unreachable.get())).message).not.toContain(SECRET_ID);
    expect(logs.find((l) => l.level === 'error')).toMatchObject({ secretId: SECRET_ID });
  });

  it('a failed read is not kept: once the secret is fixed, the next call succeeds', async () => {
    const credentials = provider();
    fake.secrets.set(SECRET_ID, 'broken');
    await failure(credentials.get());

    fake.secrets.set(SECRET_ID, document());

    expect((await credentials.get()).appId).toBe('app-1');
    expect(reads()).toBe(2);
  });
});
