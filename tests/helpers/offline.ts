import { SANDBOX_CREDENTIALS, type Sandbox } from '../../sandbox/server.ts';
import { type Offline, startOffline } from '../../scripts/offline.ts';
import { freePort } from './ports.ts';

/**
 * serverless-offline on free loopback ports, its functions talking to `sandbox` with the sandbox's
 * credentials and silent logs; `env` adds the rest (authentication, a work folder of its own...).
 */
export async function startOfflineAgainst(
  sandbox: Sandbox,
  env: Record<string, string>,
): Promise<{ offline: Offline; api: string }> {
  const offline = await startOffline({
    port: await freePort(),
    lambdaPort: await freePort(),
    env: {
      GATEWAY_BASE_URL: sandbox.url,
      GATEWAY_APP_ID: SANDBOX_CREDENTIALS.appId,
      GATEWAY_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
      GATEWAY_MERCHANT_ID: SANDBOX_CREDENTIALS.merchantId,
      GATEWAY_MERCHANT_SECRET: SANDBOX_CREDENTIALS.merchantSecret,
      LOG_LEVEL: 'silent',
      ...env,
    },
  });
  return { offline, api: `${offline.baseUrl}/gateway/api` };
}
