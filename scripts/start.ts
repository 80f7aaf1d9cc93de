/**
 * `npm start`: the service on this machine. Starts the PayHere sandbox on loopback (unless
 * GATEWAY_BASE_URL points elsewhere) and a local DynamoDB for the idempotency store (dynalite,
 * DYNAMODB_PORT or a free port), then the API through serverless-offline on PORT (3000).
 * A local token issuer (scripts/issuer.ts) signs the tokens the API accepts: `npm run -s token`.
 */
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../lib/config/config.ts';
import { type Sandbox, sandboxGatewayEnv, startSandbox } from '../sandbox/server.ts';
import type { DynamoDbFault, DynamoDbFaultMatch } from './dynamodb-faults.ts';
import { ALL_SCOPES, ISSUER_FILE, startIssuer } from './issuer.ts';
import {
  createLocalTables,
  LOCAL_AWS_ENVIRONMENT,
  LOCAL_TABLES_ENVIRONMENT,
  startLocalDynamoDB,
} from './local-dynamodb.ts';
import { startOffline } from './offline.ts';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.ts';

const port = Number(process.env.PORT ?? 3000);
const lambdaPort = Number(process.env.OFFLINE_LAMBDA_PORT ?? port + 2);
/** Beside the API, so that the curls of docs/app.md to its control routes work as written. */
const sandboxPort = Number(process.env.SANDBOX_PORT ?? port + 1);
/** PayHere's notifications come back to this API (the sandbox posts them to every notify_url it is given). */
const publicBaseUrl = process.env.PUBLIC_BASE_URL ?? `http://127.0.0.1:${port}`;

async function gatewayEnvironment(): Promise<{ env: Record<string, string>; sandbox?: Sandbox }> {
  if (process.env.GATEWAY_BASE_URL) {
    // The functions' own check, so a bad setting fails here rather than in every cold start.
    loadConfig(process.env);
    console.log(`Gateway: ${process.env.GATEWAY_BASE_URL} (no sandbox started)`);
    return { env: {} };
  }
  const sandbox = await startSandbox({ port: sandboxPort });
  console.log(`Gateway: PayHere sandbox at ${sandbox.url} (seeded data: sandbox/README.md)`);
  return {
    sandbox,
    env: {
      ...sandboxGatewayEnv(sandbox.url),
    },
  };
}

/** The fault npm start suggests: a ledger's order change applied, its answer lost. */
const ORDER_WRITE_LOST = {
  operation: 'UpdateItem',
  table: LOCAL_TABLES_ENVIRONMENT.LEDGER_TABLE,
  keyPrefix: 'order#',
  fault: { kind: 'applyAndLose' },
} satisfies DynamoDbFaultMatch & { fault: DynamoDbFault };

/** Beside the issuer's key file, in the git-ignored .local/; deleted on Ctrl-C. */
const STACK_ENV_FILE = path.join(path.dirname(ISSUER_FILE), 'stack.env');

async function writeStackEnvironment(env: Record<string, string>): Promise<void> {
  const quoted = (value: string) => `'${value.replaceAll("'", "'\\''")}'`;
  const lines = Object.entries(env).map(([name, value]) => `export ${name}=${quoted(value)}`);
  await writeFile(STACK_ENV_FILE, `${lines.join('\n')}\n`, { mode: 0o600 });
}

async function main(): Promise<void> {
  const { env, sandbox } = await gatewayEnvironment();
  // The idempotency store and the ledger: dynalite in memory on loopback, with fake credentials it does not check.
  const dynamodb = await startLocalDynamoDB({ port: Number(process.env.DYNAMODB_PORT ?? 0) });
  await createLocalTables(dynamodb.endpoint);
  console.log(`Idempotency store and ledger: local DynamoDB (dynalite) at ${dynamodb.endpoint}`);
  console.log(
    `  Its faults (docs/operator.md "Faults in the local DynamoDB"), e.g. the next order write's answer lost:\n` +
      `  curl -s -X POST ${dynamodb.endpoint}/__dynamodb/faults -d '${JSON.stringify(ORDER_WRITE_LOST)}'`,
  );
  // A fresh key pair per start, never on disk outside the git-ignored .local/ (for `npm run token`).
  const issuer = await startIssuer({ port: Number(process.env.ISSUER_PORT ?? 0) });
  console.log(`Token issuer: ${issuer.issuer} (keys at ${issuer.jwksUrl})`);
  // The merchant's side: a receiver that verifies and prints each webhook, unless one is named.
  let receiver: WebhookReceiver | undefined;
  if (!process.env.MERCHANT_WEBHOOK_URL) {
    receiver = await startWebhookReceiver({ port: Number(process.env.WEBHOOK_RECEIVER_PORT ?? 0) });
    console.log(
      `Webhooks: delivered to a local receiver at ${receiver.url} (each verified and printed here)`,
    );
  } else console.log(`Webhooks: delivered to ${process.env.MERCHANT_WEBHOOK_URL}`);
  const functionsEnv = {
    ...env,
    ...(receiver ? { MERCHANT_WEBHOOK_URL: receiver.url, MERCHANT_WEBHOOK_SECRET: receiver.secret } : {}),
    ...LOCAL_AWS_ENVIRONMENT,
    ...LOCAL_TABLES_ENVIRONMENT,
    PUBLIC_BASE_URL: publicBaseUrl,
    DYNAMODB_ENDPOINT: dynamodb.endpoint,
    ...issuer.env,
  };
  const offline = await startOffline({
    port,
    lambdaPort,
    env: functionsEnv,
    stdio: 'inherit',
    readyTimeoutMs: 120_000,
  });
  // The same environment for `sls invoke local` in another shell (docs/operator.md "Invoke a function locally").
  await writeStackEnvironment(functionsEnv);
  const base = `${offline.baseUrl}/gateway/api`;
  const token = await issuer.sign({ scope: ALL_SCOPES });
  console.log(`
API ready at ${base}
A merchant token (every scope), valid for an hour (a customer's: npm run -s token -- --sub alice --scope "payments:read payments:charge"):
  ${token}
Try:
  curl -s -H "Authorization: Bearer ${token}" ${base}/payments/LP8006126139
The settle job runs every two minutes (npm run settle runs it now).
Ctrl-C stops everything.`);

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await offline.stop();
    await sandbox?.close();
    await dynamodb.close();
    await issuer.close();
    await receiver?.close();
    await rm(STACK_ENV_FILE, { force: true });
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  offline.process.on('exit', (code) => {
    if (!stopping) {
      console.error(`serverless-offline stopped (exit ${code}).`);
      void Promise.allSettled([sandbox?.close(), dynamodb.close(), issuer.close(), receiver?.close()]).then(
        () => process.exit(1),
      );
    }
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
