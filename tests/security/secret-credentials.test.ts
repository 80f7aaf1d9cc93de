import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../sandbox/server.ts';
import { call } from '../helpers/gateway.ts';
import {
  type FakeSecretsManager,
  gatewaySecret,
  startFakeSecretsManager,
  useSecretCredentials,
} from '../helpers/secrets-manager.ts';
import { forgetSharedReads } from '../helpers/state-table.ts';

/**
 * A function configured as deployed: GATEWAY_SECRET_ID and no credentials in the environment.
 * lib/aws/secrets-manager.ts reaches the loopback Secrets Manager through
 * AWS_ENDPOINT_URL_SECRETS_MANAGER, and the sandbox accepts only the credentials the secret holds.
 */
const SECRET_ID = 'payhere-payments-api/test/gateway';
const FIRST = { appId: 'app-first', appSecret: 'CANARY-SECRET-first-0c41' };
const ROTATED = { appId: 'app-rotated', appSecret: 'CANARY-SECRET-rotated-9b7e' };

let secrets: FakeSecretsManager;
let sandbox: Sandbox;

beforeAll(async () => {
  secrets = await startFakeSecretsManager();
  sandbox = await startSandbox({ rateLimit: false, credentials: FIRST });
  useSecretCredentials(secrets, SECRET_ID);
  Object.assign(process.env, {
    GATEWAY_BASE_URL: sandbox.url,
    GATEWAY_RATE_LIMIT: '10000/1000',
  });
});
afterAll(async () => {
  await sandbox.close();
  await secrets.close();
});

describe('a function reading its gateway credentials from Secrets Manager', () => {
  it('answers 503, naming neither the secret nor its value, while the secret is malformed', async () => {
    secrets.secrets.set(SECRET_ID, `{"app_id":"app-first","app_secret":"${FIRST.appSecret}"`);

    const answer = await call('listSubscriptions');

    expect(answer.statusCode).toBe(503);
    expect(answer.body).toEqual({
      status: -1,
      msg: 'The payment gateway credentials are unavailable right now; try again later.',
      data: { code: 'gateway_unavailable' },
    });
    expect(answer.raw).not.toContain(FIRST.appSecret);
    expect(sandbox.counters().token).toBe(0);
  });

  it('works once the secret is fixed, reading it once for many requests', async () => {
    secrets.secrets.set(SECRET_ID, gatewaySecret(FIRST));
    const readsBefore = secrets.reads();

    for (let i = 0; i < 3; i++) expect((await call('listSubscriptions')).statusCode).toBe(200);

    expect(secrets.reads() - readsBefore).toBe(1);
  });

  it('reads the secret again at once when the gateway rejects the credentials (rotation)', async () => {
    // The gateway now only knows the rotated credentials, and forgets the tokens it issued.
    const { port } = sandbox;
    await sandbox.close();
    sandbox = await startSandbox({ port, rateLimit: false, credentials: ROTATED });
    secrets.secrets.set(SECRET_ID, gatewaySecret(ROTATED));
    // The list must come from the gateway, not from what the last test shared.
    await forgetSharedReads();
    const readsBefore = secrets.reads();

    const answer = await call('listSubscriptions');

    expect(answer.statusCode).toBe(200);
    expect(secrets.reads() - readsBefore).toBe(1);
  });
});
