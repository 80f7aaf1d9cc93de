import { type Sandbox, sandboxGatewayEnv } from '../../sandbox/server.ts';
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
      ...sandboxGatewayEnv(sandbox.url),
      LOG_LEVEL: 'silent',
      ...env,
    },
  });
  return { offline, api: `${offline.baseUrl}/gateway/api` };
}
