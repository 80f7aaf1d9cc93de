/**
 * Event delivery in a process of its own, as a warm charge container runs it: the charge bundle
 * imported once, with the merchant's webhook endpoint a receiver in this same process (one clock).
 * Each charge is timed from the handler's start to its answer, and on to the receiver holding its
 * `order.succeeded` (the relay and the delivery run after the answer, in the background). Usage:
 * node bench/events-child.ts <plan.json>; prints one JSON line.
 */

import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { ROOT } from './build.ts';
import type { EventsPlan, EventsSamples } from './events.ts';

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as EventsPlan;
type Handler = (event: unknown, context: unknown) => Promise<APIGatewayProxyResult>;

/** When the receiver got each order's event (performance.now()), by order id. */
const arrived = new Map<string, number>();
const waiting = new Map<string, () => void>();
const receiver = http.createServer(async (request, response) => {
  const parts: Buffer[] = [];
  for await (const part of request) parts.push(part as Buffer);
  const at = performance.now();
  const event = JSON.parse(Buffer.concat(parts).toString('utf8')) as { object: { id: string } };
  arrived.set(event.object.id, at);
  waiting.get(event.object.id)?.();
  response.writeHead(204).end();
});
receiver.listen(0, '127.0.0.1');
await once(receiver, 'listening');
process.env.MERCHANT_WEBHOOK_URL = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`;
process.env.MERCHANT_WEBHOOK_SECRET = plan.secret;

const { handler } = (await import(pathToFileURL(path.resolve(ROOT, plan.bundle)).href)) as {
  handler: Handler;
};
const samples: EventsSamples = { answerMs: [], deliveredMs: [], statusCodes: [] };

for (const [i, request] of plan.requests.entries()) {
  const endsAt = Date.now() + 25_000;
  const context = { awsRequestId: `events-${i}`, getRemainingTimeInMillis: () => endsAt - Date.now() };
  const delivered = new Promise<void>((resolve) => {
    waiting.set(request.orderId, resolve);
    setTimeout(resolve, 10_000).unref();
  });
  const started = performance.now();
  const result = await handler(request.event, context);
  const answered = performance.now();
  await delivered;
  waiting.delete(request.orderId);
  const at = arrived.get(request.orderId);
  if (i < plan.warmUp) continue;
  samples.statusCodes.push(result.statusCode);
  samples.answerMs.push(answered - started);
  // A delivery that never came counts as what it is: missing (NaN, reported as such).
  samples.deliveredMs.push(at === undefined ? Number.NaN : at - started);
}
receiver.close();
console.log(JSON.stringify(samples));
process.exit(0);
