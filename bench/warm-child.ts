/**
 * Warm requests in a process of its own: the function's bundle imported once (a warm
 * container), each request timed, each paired with the bare floor doing the same upstream work.
 * Usage: node --enable-source-maps bench/warm-child.ts <plan.json>; prints one JSON line.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { bareFloor, type FloorWrites, type WarmPlan, type WarmSamples } from './warm.ts';

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as WarmPlan;
const { handler } = (await import(pathToFileURL(plan.bundle).href)) as {
  handler: (event: unknown, context: unknown) => Promise<APIGatewayProxyResult>;
};
const floor = bareFloor(plan);
const samples: WarmSamples = { handlerMs: [], floorMs: [], minimalMs: [], statusCodes: [] };

type Request = WarmPlan['requests'][number];

async function timeHandler(event: Request['ours'], i: number): Promise<number> {
  if (plan.resetStateFirst) await floor.resetState();
  const endsAt = Date.now() + 25_000;
  const context = { awsRequestId: `warm-${i}`, getRemainingTimeInMillis: () => endsAt - Date.now() };
  const started = performance.now();
  const result = await handler(event, context);
  const ms = performance.now() - started;
  if (i >= plan.warmUp) samples.statusCodes.push(result.statusCode);
  return ms;
}

async function timeFloor(call: Request['bare'], writes: FloorWrites): Promise<number> {
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
    async () => {
      const ms = await timeFloor(request.bare, 'same');
      if (i >= plan.warmUp) samples.floorMs.push(ms);
    },
  ];
  const { minimal } = request;
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
