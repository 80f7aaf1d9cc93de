/**
 * `npm run settle`: run the settle job of the stack `npm start` runs, now, and print what it did
 * (under `npm start` it also runs on its schedule, every two minutes). It asks serverless-offline's
 * Lambda endpoint (OFFLINE_LAMBDA_PORT, else PORT + 2) to invoke the function, as AWS's Invoke API would.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

const port = Number(process.env.PORT ?? 3000);
const lambdaPort = Number(process.env.OFFLINE_LAMBDA_PORT ?? port + 2);
/** serverless.yml's name of the function under `--stage local`. */
const FUNCTION = 'payhere-payments-api-local-settle';

async function main(): Promise<void> {
  const event = await readFile(path.join(import.meta.dirname, '..', 'events', 'settle.json'), 'utf8');
  const answer = await fetch(`http://127.0.0.1:${lambdaPort}/2015-03-31/functions/${FUNCTION}/invocations`, {
    method: 'POST',
    body: event,
  }).catch(() => undefined);
  if (!answer) throw new Error(`Nothing answers on 127.0.0.1:${lambdaPort}: is npm start running?`);
  const text = await answer.text();
  if (!answer.ok) throw new Error(`The settle job could not run (${answer.status}): ${text}`);
  console.log(text);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
