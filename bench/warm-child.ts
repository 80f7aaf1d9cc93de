/**
 * Warm requests in a process of its own: the function's bundle imported once (a warm
 * container), each request timed, each paired with the bare floor doing the same upstream work
 * or, in observability mode, with a second copy of the bundle that writes no metrics and no audit
 * line. Usage: node bench/warm-child.ts <plan.json>; prints one JSON line.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { ROOT } from './build.ts';
import type { UpstreamCall } from './environment.ts';
import { bareFloor, type FloorWrites, type WarmPlan, type WarmSamples } from './warm.ts';

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as WarmPlan;
type Handler = (event: unknown, context: unknown) => Promise<APIGatewayProxyResult>;
const importHandler = async (query = '') =>
  ((await import(`${pathToFileURL(path.resolve(ROOT, plan.bundle)).href}${query}`)) as { handler: Handler })
    .handler;

const handler = await importHandler();
/**
 * Observability mode: a module instance of its own (another URL), built with metrics off, called
 * with the log at `warn` (the audit line is `info`), while `handler` is called with it at `info`.
 */
let quietHandler: Handler | undefined;
if (plan.mode === 'observability') {
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  quietHandler = await importHandler('?quiet');
  delete process.env.POWERTOOLS_METRICS_DISABLED;
}
const floor = bareFloor(plan);
const samples: WarmSamples = { handlerMs: [], floorMs: [], minimalMs: [], quietMs: [], statusCodes: [] };

type Request = WarmPlan['requests'][number];

async function timeHandler(event: Request['ours'], i: number, quiet = false): Promise<number> {
  if (plan.resetStateFirst) await floor.resetState();
  const endsAt = Date.now() + 25_000;
  const context = { awsRequestId: `warm-${i}`, getRemainingTimeInMillis: () => endsAt - Date.now() };
  if (plan.mode === 'observability') process.env.LOG_LEVEL = quiet ? 'warn' : 'info';
  const started = performance.now();
  const result = await (quiet ? quietHandler! : handler)(event, context);
  const ms = performance.now() - started;
  if (i >= plan.warmUp) samples.statusCodes.push(result.statusCode);
  return ms;
}

async function timeFloor(call: UpstreamCall, writes: FloorWrites): Promise<number> {
  if (plan.resetStateFirst) await floor.resetState();
  const started = performance.now();
  await floor.send(plan.route, call, writes);
  return performance.now() - started;
}

for (const [i, request] of plan.requests.entries()) {
  const runs: Array<() => Promise<void>> = [
    async () => {
      const ms = await timeHandler(request.ours, i);
      if (i >= plan.warmUp) samples.handlerMs.push(ms);
    },
  ];
  const { bare, minimal, quiet } = request;
  if (bare) {
    runs.push(async () => {
      const ms = await timeFloor(bare, 'same');
      if (i >= plan.warmUp) samples.floorMs.push(ms);
    });
  }
  if (quiet) {
    runs.push(async () => {
      const ms = await timeHandler(quiet, i, true);
      if (i >= plan.warmUp) samples.quietMs.push(ms);
    });
  }
  if (minimal) {
    runs.push(async () => {
      const ms = await timeFloor(minimal, 'minimal');
      if (i >= plan.warmUp) samples.minimalMs.push(ms);
    });
  }
  // Each goes first in turn, so none always inherits another's garbage or warm caches.
  for (let k = 0; k < runs.length; k++) await runs[(i + k) % runs.length]!();
}

// Exit only once the line is out: a pipe may take a long line in several writes.
process.stdout.write(`${JSON.stringify(samples)}\n`, () => process.exit(0));
