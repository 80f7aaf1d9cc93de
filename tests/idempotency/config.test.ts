import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../lib/config/config.ts';
import {
  idempotencyStoreFromEnvironment,
  loadIdempotencyConfig,
} from '../../lib/idempotency/from-environment.ts';

describe('loadIdempotencyConfig', () => {
  it('needs the table and defaults the rest: 7 days, an unknown looked for every 30 s, the region of the service', () => {
    expect(loadIdempotencyConfig({ IDEMPOTENCY_TABLE: 'records' })).toEqual({
      table: 'records',
      ttlSeconds: 604_800,
      settleDelayMs: 600_000,
      lookAgainMs: 30_000,
      region: 'ap-south-1',
    });
  });

  it('takes the endpoint, region and a longer retention from the environment', () => {
    const config = loadIdempotencyConfig({
      IDEMPOTENCY_TABLE: 'records',
      IDEMPOTENCY_TTL_SECONDS: '2592000',
      AWS_REGION: 'eu-west-1',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:4567',
      SETTLE_DELAY_SECONDS: '300',
      UNKNOWN_LOOK_AGAIN_SECONDS: '60',
    });

    expect(config).toEqual({
      table: 'records',
      ttlSeconds: 2_592_000,
      settleDelayMs: 300_000,
      lookAgainMs: 60_000,
      region: 'eu-west-1',
      endpoint: 'http://127.0.0.1:4567',
    });
  });

  it('treats an empty endpoint (as serverless.yml sets it outside --stage local) as none', () => {
    expect(loadIdempotencyConfig({ IDEMPOTENCY_TABLE: 'records', DYNAMODB_ENDPOINT: '' })).not.toHaveProperty(
      'endpoint',
    );
  });

  it.each([
    [{}, 'IDEMPOTENCY_TABLE'],
    [{ IDEMPOTENCY_TABLE: '  ' }, 'IDEMPOTENCY_TABLE'],
    [{ IDEMPOTENCY_TABLE: 't', IDEMPOTENCY_TTL_SECONDS: '3600' }, 'IDEMPOTENCY_TTL_SECONDS'],
    [{ IDEMPOTENCY_TABLE: 't', IDEMPOTENCY_TTL_SECONDS: '86400' }, 'IDEMPOTENCY_TTL_SECONDS'],
    [{ IDEMPOTENCY_TABLE: 't', IDEMPOTENCY_TTL_SECONDS: '1e6' }, 'IDEMPOTENCY_TTL_SECONDS'],
    [{ IDEMPOTENCY_TABLE: 't', IDEMPOTENCY_TTL_SECONDS: 'a day' }, 'IDEMPOTENCY_TTL_SECONDS'],
    [{ IDEMPOTENCY_TABLE: 't', DYNAMODB_ENDPOINT: 'localhost:4567' }, 'DYNAMODB_ENDPOINT'],
  ])('refuses %j naming %s', (env, name) => {
    expect(() => loadIdempotencyConfig(env)).toThrow(ConfigError);
    expect(() => loadIdempotencyConfig(env)).toThrow(name);
  });

  it('builds a store without touching the network (cold starts pay for no round trip)', () => {
    const store = idempotencyStoreFromEnvironment({
      IDEMPOTENCY_TABLE: 't',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:9',
    });

    expect(store.now()).toBeGreaterThan(0);
  });
});

describe('a money function', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
    vi.resetModules();
  });

  it.each(['charge', 'capture', 'refund', 'retrySubscription'])(
    '%s fails at start-up naming IDEMPOTENCY_TABLE when it is missing',
    async (name) => {
      Object.assign(process.env, {
        GATEWAY_BASE_URL: 'http://127.0.0.1:9',
        GATEWAY_APP_ID: 'id',
        GATEWAY_APP_SECRET: 'secret',
      });
      delete process.env.IDEMPOTENCY_TABLE;
      vi.resetModules();

      await expect(import(`../../functions/${name}.ts`)).rejects.toThrow(/IDEMPOTENCY_TABLE/);
    },
  );
});
