/**
 * Warm requests in a process of its own: the function's bundle imported once (a warm
 * container), each request timed, each paired with the bare floor doing the same upstream work.
 * Usage: node --enable-source-maps bench/warm-child.ts <plan.json>; prints one JSON line.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { bareFloor, type WarmPlan, type WarmSamples } from './warm.ts';

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as WarmPlan;
const { handler } = (await import(pathToFileURL(plan.bundle).href)) as {
  handler: (event: unknown, context: unknown) => Promise<APIGatewayProxyResult>;
};
const floor = bareFloor(plan);
const samples: WarmSamples = { handlerMs: [], floorMs: [], statusCodes: [] };

for (const [i, { ours, bare }] of plan.requests.entries()) {
  if (plan.resetStateFirst) await floor.resetState();
  const endsAt = Date.now() + 25_000;
  const context = { awsRequestId: `warm-${i}`, getRemainingTimeInMillis: () => endsAt - Date.now() };
  const started = performance.now();
  const result = await handler(ours, context);
  const handlerMs = performance.now() - started;

  if (plan.resetStateFirst) await floor.resetState();
  const floorStarted = performance.now();
  await floor.send(plan.route, bare);
  const floorMs = performance.now() - floorStarted;

  if (i >= plan.warmUp) {
    samples.handlerMs.push(handlerMs);
    samples.floorMs.push(floorMs);
    samples.statusCodes.push(result.statusCode);
  }
}

process.stdout.write(`${JSON.stringify(samples)}\n`);
process.exit(0);
