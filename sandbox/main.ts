// `npm run sandbox`: the sandbox on SANDBOX_HOST:SANDBOX_PORT until SIGINT or SIGTERM.
import { startSandbox } from './server.ts';

const host = process.env.SANDBOX_HOST ?? '127.0.0.1';
const port = Number(process.env.SANDBOX_PORT ?? 8090);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error(`SANDBOX_PORT must be a port number (0-65535), got "${process.env.SANDBOX_PORT}"`);
  process.exit(1);
}

const sandbox = await startSandbox({ host, port });
console.log(`PayHere sandbox listening on ${sandbox.url}`);

let stopping = false;
function stop(): void {
  if (stopping) return;
  stopping = true;
  sandbox.close().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error('sandbox: close failed', error);
      process.exit(1);
    },
  );
}
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
