/**
 * One cold start, in a fresh `node` process: import a bundle (what Lambda's init does), then,
 * given an event, run its first request. Prints one JSON line of timings in milliseconds.
 * Usage: node --enable-source-maps bench/cold-child.ts <bundle.mjs> [<event.json>]
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [bundle, eventFile] = process.argv.slice(2);
if (!bundle) throw new Error('usage: cold-child.ts <bundle.mjs> [<event.json>]');

const importStarted = performance.now();
const module = (await import(pathToFileURL(bundle).href)) as {
  handler: (event: unknown, context: unknown) => Promise<{ statusCode: number }>;
};
const importMs = performance.now() - importStarted;

let firstRequestMs: number | undefined;
let statusCode: number | undefined;
if (eventFile) {
  const event = JSON.parse(readFileSync(eventFile, 'utf8'));
  const endsAt = Date.now() + 25_000;
  const context = { awsRequestId: 'bench', getRemainingTimeInMillis: () => endsAt - Date.now() };
  const started = performance.now();
  statusCode = (await module.handler(event, context)).statusCode;
  firstRequestMs = performance.now() - started;
}

// Keep-alive sockets would hold the process open: exit once the line is out.
process.stdout.write(`${JSON.stringify({ importMs, firstRequestMs, statusCode })}\n`, () => process.exit(0));
