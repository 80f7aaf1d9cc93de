/**
 * One Lambda container of one function, in a process of its own (tests/budget/containers.test.ts):
 * it loads the function's handler as a container does (module scope: the PayHere client with the
 * shared budget and token) and invokes it as API Gateway would. Commands come on stdin, one JSON
 * line each; every answer goes to stdout as a line starting with `@@`.
 */
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { sharedStateFromEnvironment } from '../../lib/budget/from-environment.ts';
import { SEED } from '../../sandbox/server.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, testToken } from '../helpers/auth.ts';
import { apiEvent, invoke, lambdaContext } from '../helpers/events.ts';
import { ROUTES, type RouteName } from '../helpers/routes.ts';

export interface Command {
  /** How many invocations, `spacingMs` apart (0: all at once). */
  count: number;
  spacingMs: number;
  /** The Lambda's remaining time at each invocation. */
  remainingMs: number;
}

export interface Result {
  route: RouteName;
  status: number;
  code: string | undefined;
  retryAfter: string | undefined;
  startedAt: number;
  answeredAt: number;
  remainingMs: number;
}

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

Object.assign(process.env, TEST_AUTH_ENV);
const route = process.argv[2] as RouteName;
const { handler } = (await import(`../../functions/${route}.ts`)) as { handler: Handler };
const bearer = await testToken({ scope: MERCHANT_SCOPES, sub: 'merchant-backend' });

function eventFor(): APIGatewayProxyEvent {
  const headers: Record<string, string> = { Authorization: `Bearer ${bearer}` };
  if (route === 'charge') {
    headers['Idempotency-Key'] = randomUUID();
    return apiEvent({
      ...ROUTES.charge,
      headers,
      body: {
        type: 'PAYMENT',
        order_id: `Budget-${randomUUID().slice(0, 12)}`,
        items: 'Door bell',
        currency: 'LKR',
        amount: 100,
        customer_token: SEED.customerTokens.success,
      },
    });
  }
  if (route === 'refund') {
    // A payment PayHere does not know: it refuses the refund, a money call all the same.
    headers['Idempotency-Key'] = randomUUID();
    return apiEvent({
      ...ROUTES.refund,
      headers,
      body: { payment_id: 320_090_000_000 + Math.floor(Math.random() * 1_000_000), description: 'Budget' },
    });
  }
  // An object PayHere does not know, another each time: answers to it are never shared (a not-found
  // is never kept), so every read costs PayHere a call, as reads of many different objects do.
  const id =
    route === 'retrievePayments'
      ? `Budget-${randomUUID().slice(0, 12)}`
      : String(420_090_000_000 + Math.floor(Math.random() * 1_000_000));
  return apiEvent({
    ...ROUTES[route],
    headers,
    ...(ROUTES[route].resource.includes('{id}') ? { pathParameters: { id } } : {}),
  });
}

async function once(remainingMs: number): Promise<Result> {
  const startedAt = Date.now();
  const answer = await invoke(handler, eventFor(), lambdaContext(remainingMs));
  const body = answer.body as { data?: { code?: string } } | undefined;
  return {
    route,
    status: answer.statusCode,
    code: body?.data?.code,
    retryAfter:
      answer.headers['Retry-After'] === undefined ? undefined : String(answer.headers['Retry-After']),
    startedAt,
    answeredAt: Date.now(),
    remainingMs,
  };
}

const write = (line: unknown) => process.stdout.write(`@@${JSON.stringify(line)}\n`);

async function run(command: Command): Promise<void> {
  const calls: Promise<Result>[] = [];
  for (let i = 0; i < command.count; i++) {
    if (i > 0 && command.spacingMs > 0)
      await new Promise((resolve) => setTimeout(resolve, command.spacingMs));
    calls.push(once(command.remainingMs));
  }
  write({ done: await Promise.all(calls) });
}

// A warm container: its DynamoDB client has made a request, its first invocation (refused: no
// token) has run. Neither reaches PayHere.
await sharedStateFromEnvironment().readBudget();
await invoke(
  handler,
  apiEvent({ ...ROUTES[route], headers: { Authorization: 'Bearer nope' } }),
  lambdaContext(),
);
write({ ready: route });
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  await run(JSON.parse(line) as Command);
}
