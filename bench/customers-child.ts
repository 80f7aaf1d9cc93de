/**
 * One warm Lambda container of one read function, in a process of its own, for bench/customers.ts:
 * the packaged bundle imported once; then a plan on stdin (a JSON line: events, each with its
 * offset from the start, and the Lambda's remaining time), acknowledged; then a start time (a JSON
 * line), at which every event is invoked at its offset, as requests routed to this container over
 * those seconds would be. The pacing is done here, not by the bench, so that a busy bench process
 * (the sandbox and DynamoDB run there) cannot bunch the requests up. All answers go to stdout as
 * one line starting with `@@`, with their headers and body, for the bench to check whose they are.
 * Usage: node bench/customers-child.ts <bundle.mjs>
 */
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyResult } from 'aws-lambda';

export interface ReadPlan {
  events: Array<{ offsetMs: number; event: unknown }>;
  remainingMs: number;
}

export interface ReadAnswer {
  status: number;
  /** The `Age` header, when the answer carries one. */
  age?: string;
  body: string;
  /** When the request was due, when the handler was called, when it answered (epoch ms). */
  dueAt: number;
  startedAt: number;
  answeredAt: number;
}

type Handler = (event: unknown, context: unknown) => Promise<APIGatewayProxyResult>;
const { handler } = (await import(pathToFileURL(process.argv[2]!).href)) as { handler: Handler };

async function invoke(event: unknown, dueAt: number, remainingMs: number, i: number): Promise<ReadAnswer> {
  await sleep(Math.max(0, dueAt - Date.now()));
  const startedAt = Date.now();
  const endsAt = startedAt + remainingMs;
  const context = { awsRequestId: `read-${i}`, getRemainingTimeInMillis: () => endsAt - Date.now() };
  const result = await handler(event, context);
  const age = result.headers?.Age;
  return {
    status: result.statusCode,
    ...(age === undefined ? {} : { age: String(age) }),
    body: result.body,
    dueAt,
    startedAt,
    answeredAt: Date.now(),
  };
}

const write = (line: unknown) => process.stdout.write(`@@${JSON.stringify(line)}\n`);
write({ ready: true });
let plan: ReadPlan | undefined;
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  if (!plan) {
    plan = JSON.parse(line) as ReadPlan;
    write({ planned: plan.events.length });
    continue;
  }
  const { startAt } = JSON.parse(line) as { startAt: number };
  const { events, remainingMs } = plan;
  write({
    done: await Promise.all(
      events.map(({ offsetMs, event }, i) => invoke(event, startAt + offsetMs, remainingMs, i)),
    ),
  });
  plan = undefined;
}
