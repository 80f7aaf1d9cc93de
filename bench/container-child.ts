/**
 * One warm Lambda container of one function, in a process of its own: the packaged bundle imported
 * once, then, for each command on stdin (a JSON line: events and the Lambda's remaining time),
 * every event invoked at once, as concurrent requests routed to this container would be. Each
 * command's answers go to stdout as one line starting with `@@`.
 * Usage: node bench/container-child.ts <bundle.mjs>
 */
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyResult } from 'aws-lambda';

export interface ContainerCommand {
  events: unknown[];
  remainingMs: number;
}

export interface ContainerAnswer {
  status: number;
  startedAt: number;
  answeredAt: number;
}

type Handler = (event: unknown, context: unknown) => Promise<APIGatewayProxyResult>;
const { handler } = (await import(pathToFileURL(process.argv[2]!).href)) as { handler: Handler };

async function invoke(event: unknown, remainingMs: number, i: number): Promise<ContainerAnswer> {
  const startedAt = Date.now();
  const endsAt = startedAt + remainingMs;
  const context = { awsRequestId: `burst-${i}`, getRemainingTimeInMillis: () => endsAt - Date.now() };
  const { statusCode } = await handler(event, context);
  return { status: statusCode, startedAt, answeredAt: Date.now() };
}

const write = (line: unknown) => process.stdout.write(`@@${JSON.stringify(line)}\n`);
write({ ready: true });
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const command = JSON.parse(line) as ContainerCommand;
  write({ done: await Promise.all(command.events.map((event, i) => invoke(event, command.remainingMs, i))) });
}
