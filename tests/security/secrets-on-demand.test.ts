import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sharedStateFromEnvironment } from '../../lib/budget/from-environment.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { SANDBOX_CREDENTIALS } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { type FakeSecretsManager, startFakeSecretsManager } from '../helpers/secrets-manager.ts';
import { forgetSharedReads } from '../helpers/state-table.ts';

/**
 * The secret is read when this container first needs it, not at start-up (lib/config/secrets.ts):
 * a read whose first request finds a valid shared access token answers without it.
 */

const SECRET_ID = 'payhere-payments-api/test/gateway';
const sandbox = useTestGateway({ beforeEachTest: 'nothing' });
let secrets: FakeSecretsManager;

beforeAll(async () => {
  secrets = await startFakeSecretsManager();
  secrets.secrets.set(
    SECRET_ID,
    JSON.stringify({
      app_id: SANDBOX_CREDENTIALS.appId,
      app_secret: SANDBOX_CREDENTIALS.appSecret,
      merchant_id: SANDBOX_CREDENTIALS.merchantId,
      merchant_secret: SANDBOX_CREDENTIALS.merchantSecret,
    }),
  );
});
afterAll(async () => {
  await secrets.close();
});

describe('gateway credentials from Secrets Manager, on demand', () => {
  it('are not read by a cold read that finds a valid shared token, and are read when a token must be fetched', async () => {
    // Prepare: another container (credentials of its own) put a valid token in the shared table;
    // this one reads its credentials from the secret.
    await createPayHere(loadConfig(process.env), {
      sharedState: sharedStateFromEnvironment(),
    }).listSubscriptions(Date.now() + 10_000);
    const tokensBefore = sandbox.counters().token!;
    vi.stubEnv('GATEWAY_SECRET_ID', SECRET_ID);
    vi.stubEnv('AWS_ENDPOINT_URL_SECRETS_MANAGER', secrets.endpoint);

    // Act: the container's first request, then one after PayHere forgot every token.
    const first = await call('listSubscriptions');
    const readsAfterFirst = secrets.reads();
    sandbox.expireTokens();
    // The list the first request fetched is shared for 30 s: forgotten, so PayHere is asked again.
    await forgetSharedReads();
    const second = await call('listSubscriptions');

    // Assess
    expect(first.statusCode).toBe(200);
    expect(readsAfterFirst).toBe(0);
    expect(second.statusCode).toBe(200);
    expect(secrets.reads()).toBe(1);
    expect(sandbox.counters().token).toBe(tokensBefore + 1);
  });
});
