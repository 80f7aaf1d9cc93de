/**
 * `npm start`: the service on this machine. Starts the PayHere sandbox on loopback (unless
 * GATEWAY_BASE_URL points elsewhere), then the API through serverless-offline on PORT (3000).
 */
import { SANDBOX_CREDENTIALS, type Sandbox, startSandbox } from '../sandbox/server.ts';
import { startOffline } from './offline.ts';

const port = Number(process.env.PORT ?? 3000);
const lambdaPort = Number(process.env.OFFLINE_LAMBDA_PORT ?? port + 2);

async function gatewayEnvironment(): Promise<{ env: Record<string, string>; sandbox?: Sandbox }> {
  if (process.env.GATEWAY_BASE_URL) {
    for (const name of ['GATEWAY_APP_ID', 'GATEWAY_APP_SECRET']) {
      if (!process.env[name]) throw new Error(`GATEWAY_BASE_URL is set: set ${name} as well.`);
    }
    console.log(`Gateway: ${process.env.GATEWAY_BASE_URL} (no sandbox started)`);
    return { env: {} };
  }
  const sandbox = await startSandbox({ port: Number(process.env.SANDBOX_PORT ?? 0) });
  console.log(`Gateway: PayHere sandbox at ${sandbox.url} (seeded data: sandbox/README.md)`);
  return {
    sandbox,
    env: {
      GATEWAY_BASE_URL: sandbox.url,
      GATEWAY_APP_ID: SANDBOX_CREDENTIALS.appId,
      GATEWAY_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
      GATEWAY_MERCHANT_ID: SANDBOX_CREDENTIALS.merchantId,
      GATEWAY_MERCHANT_SECRET: SANDBOX_CREDENTIALS.merchantSecret,
    },
  };
}

async function main(): Promise<void> {
  const { env, sandbox } = await gatewayEnvironment();
  const offline = await startOffline({ port, lambdaPort, env, stdio: 'inherit', readyTimeoutMs: 120_000 });
  const base = `${offline.baseUrl}/gateway/api`;
  console.log(`
API ready at ${base}
Try:
  curl -s ${base}/payments/LP8006126139
Ctrl-C stops everything.`);

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await offline.stop();
    await sandbox?.close();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  offline.process.on('exit', (code) => {
    if (!stopping) {
      console.error(`serverless-offline stopped (exit ${code}).`);
      void sandbox?.close().then(() => process.exit(1));
    }
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
