import { randomUUID } from 'node:crypto';
import { type Sandbox, sandboxGatewayEnv } from '../../sandbox/server.ts';
import { createTable, LOCAL_IDEMPOTENCY_TABLE } from '../../scripts/local-dynamodb.ts';
import { type Offline, startOffline } from '../../scripts/offline.ts';
import { TEST_AUTH_ENV } from './auth.ts';
import { freePort } from './ports.ts';

/**
 * serverless-offline on free loopback ports, its functions talking to `sandbox` with the sandbox's
 * credentials and silent logs; `env` adds the rest (authentication, a work folder of its own...).
 */
export async function startOfflineAgainst(
  sandbox: Sandbox,
  env: Record<string, string>,
): Promise<{ offline: Offline; api: string }> {
  const offline = await startOfflineOnFreePorts({
    ...sandboxGatewayEnv(sandbox.url),
    LOG_LEVEL: 'silent',
    ...env,
  });
  return { offline, api: `${offline.baseUrl}/gateway/api` };
}

/**
 * serverless-offline on two loopback ports free when it starts. A port found free can be taken by
 * another process of the run before serverless-offline listens on it (EADDRINUSE): it is started
 * again on others, at most three times.
 */
async function startOfflineOnFreePorts(env: Record<string, string>): Promise<Offline> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOffline({ port: await freePort(), lambdaPort: await freePort(), env });
    } catch (error) {
      if (attempt >= 3 || !String(error).includes('EADDRINUSE')) throw error;
    }
  }
}

/** Each caller's share as serverless.yml deploys it (the tests' environment makes them generous). */
export const DEPLOYED_SHARES = {
  CALLER_RATE_LIMIT: '3/10000',
  CALLER_RATE_CAP: '',
  CALLER_MONEY_RATE_LIMIT: '6/60000',
  MERCHANT_RATE_LIMIT: '10/10000',
  MERCHANT_RATE_CAP: '',
  MERCHANT_MONEY_RATE_LIMIT: '120/60000',
  NOTIFY_RATE_LIMIT: '4/10000',
  NOTIFY_RATE_CAP: '',
};

/**
 * serverless-offline against `sandbox` with PayHere's budget and the shares as deployed, on a state
 * table of its own (`<name>-state-<uuid>`), so that the budget is counted as production counts it.
 */
export async function startOfflineAsDeployed(
  sandbox: Sandbox,
  name: string,
): Promise<{ offline: Offline; base: string; env: Record<string, string> }> {
  const endpoint = process.env.DYNAMODB_ENDPOINT!;
  const stateTable = `${name}-state-${randomUUID()}`;
  await createTable(endpoint, stateTable);
  await createTable(endpoint, LOCAL_IDEMPOTENCY_TABLE, { settleIndex: true }).catch(
    (error: { name?: string }) => {
      if (error.name !== 'ResourceInUseException') throw error;
    },
  );
  const env = {
    ...(process.env as Record<string, string>),
    STATE_TABLE: stateTable,
    ...TEST_AUTH_ENV,
    ...sandboxGatewayEnv(sandbox.url),
    ...DEPLOYED_SHARES,
    GATEWAY_RATE_LIMIT: '20/10000',
    LOG_LEVEL: 'silent',
  };
  const offline = await startOfflineOnFreePorts(env);
  return { offline, base: `${offline.baseUrl}/gateway/api`, env };
}
