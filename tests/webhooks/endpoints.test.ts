import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config.ts';
import { secretWebhookEndpoints, WebhookSecretError } from '../../lib/webhooks/endpoint-secret.ts';
import { webhookEndpointIds, webhookSource } from '../../lib/webhooks/endpoints.ts';

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;

describe('webhook endpoints (docs/operator.md "Webhooks")', () => {
  it('are none unless configured: no event carries deliveries then', () => {
    expect(webhookEndpointIds({})).toEqual([]);
    expect(webhookSource({})).toEqual({ kind: 'none' });
  });

  it('are none on a deployed stage that lists no endpoint ids, though serverless.yml always names its secret', () => {
    // What serverless.yml gives every function of a deployed stage by default.
    const env = {
      MERCHANT_WEBHOOKS_SECRET_ID: 'payhere-payments-api/prod/webhooks',
      MERCHANT_WEBHOOK_ENDPOINT_IDS: '',
      MERCHANT_WEBHOOK_URL: '',
      MERCHANT_WEBHOOK_SECRET: '',
    };

    expect(webhookSource(env)).toEqual({ kind: 'none' });
    expect(webhookEndpointIds(env)).toEqual([]);
  });

  it('are one endpoint `default` from MERCHANT_WEBHOOK_URL and MERCHANT_WEBHOOK_SECRET, http on loopback allowed', () => {
    const env = { MERCHANT_WEBHOOK_URL: 'http://127.0.0.1:3009/webhooks', MERCHANT_WEBHOOK_SECRET: SECRET };

    expect(webhookEndpointIds(env)).toEqual(['default']);
    expect(webhookSource(env)).toEqual({
      kind: 'env',
      endpoint: { id: 'default', url: 'http://127.0.0.1:3009/webhooks', key: Buffer.alloc(32, 1) },
    });
  });

  it.each([
    [
      { MERCHANT_WEBHOOK_URL: 'http://hooks.example.com/x', MERCHANT_WEBHOOK_SECRET: SECRET },
      'MERCHANT_WEBHOOK_URL',
    ],
    [{ MERCHANT_WEBHOOK_URL: 'https://hooks.example.com/x' }, 'MERCHANT_WEBHOOK_SECRET'],
    [{ MERCHANT_WEBHOOK_SECRET: SECRET }, 'MERCHANT_WEBHOOK_URL'],
    [
      { MERCHANT_WEBHOOK_URL: 'https://hooks.example.com/x', MERCHANT_WEBHOOK_SECRET: 'hunter2' },
      'MERCHANT_WEBHOOK_SECRET',
    ],
    [
      { MERCHANT_WEBHOOKS_SECRET_ID: 'webhooks', MERCHANT_WEBHOOK_ENDPOINT_IDS: 'crm,crm' },
      'MERCHANT_WEBHOOK_ENDPOINT_IDS',
    ],
    [
      { MERCHANT_WEBHOOKS_SECRET_ID: 'webhooks', MERCHANT_WEBHOOK_ENDPOINT_IDS: 'CRM!' },
      'MERCHANT_WEBHOOK_ENDPOINT_IDS',
    ],
  ])('refuses %j, naming %s and never the secret', (env, name) => {
    expect(() => webhookSource(env)).toThrow(ConfigError);
    expect(() => webhookSource(env)).toThrow(name);
    expect(() => webhookSource(env)).not.toThrow('hunter2');
  });

  it('are the ids MERCHANT_WEBHOOK_ENDPOINT_IDS lists when a secret holds them (deployed stages)', () => {
    const env = {
      MERCHANT_WEBHOOKS_SECRET_ID: 'payhere-payments-api/prod/webhooks',
      MERCHANT_WEBHOOK_ENDPOINT_IDS: 'crm, ledger-sync',
      MERCHANT_WEBHOOK_URL: 'http://127.0.0.1:1/ignored',
    };

    expect(webhookEndpointIds(env)).toEqual(['crm', 'ledger-sync']);
  });

  it('reads the secret once for 5 minutes, https only, and keeps no failed read', async () => {
    let now = 0;
    let reads = 0;
    let text = JSON.stringify([{ id: 'crm', url: 'https://crm.example.com/hooks', secret: SECRET }]);
    const endpoints = secretWebhookEndpoints({
      secretId: 'webhooks',
      now: () => now,
      client: {
        getSecretValue: async () => {
          reads++;
          return { SecretString: text };
        },
      },
    });

    const first = await endpoints.get();
    now = 299_999;
    await endpoints.get();
    expect(reads).toBe(1);
    expect(first.get('crm')).toEqual({
      id: 'crm',
      url: 'https://crm.example.com/hooks',
      key: Buffer.alloc(32, 1),
    });

    text = JSON.stringify([{ id: 'crm', url: 'http://crm.example.com/hooks', secret: SECRET }]);
    now = 300_000;
    await expect(endpoints.get()).rejects.toThrow(WebhookSecretError);
    await expect(endpoints.get()).rejects.toThrow('not https');
    expect(reads).toBe(3);
  });
});
