import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { type Sandbox, type SandboxOptions, sandboxGatewayEnv, startSandbox } from '../../sandbox/server.ts';
import { trustTestIssuer, withToken } from './auth.ts';
import { recordAnswer } from './contract.ts';
import { type Answer, apiEvent, invoke, lambdaContext } from './events.ts';
import { IDEMPOTENT_ROUTES, ROUTES, type RouteName } from './routes.ts';
import { forgetSharedReads } from './state-table.ts';

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

/**
 * A sandbox on loopback and the environment a function reads at start-up, pointing at it.
 * The sandbox's own rate limit is off unless a test asks for it: most suites make more than
 * 20 calls in 10 seconds and are not about throttling.
 */
export async function startTestGateway(options: SandboxOptions = {}): Promise<Sandbox> {
  const sandbox = await startSandbox({ rateLimit: false, ...options });
  Object.assign(process.env, {
    ...sandboxGatewayEnv(sandbox.url),
    GATEWAY_RATE_LIMIT: '10000/1000',
  });
  return sandbox;
}

const handlers = new Map<RouteName, Promise<Handler>>();

/** The deployed handler module of a route, loaded once per test file (its module scope is the container). */
export function handlerOf(name: RouteName): Promise<Handler> {
  let handler = handlers.get(name);
  if (!handler) {
    trustTestIssuer();
    handler = import(`../../functions/${name}.ts`).then((module: { handler: Handler }) => module.handler);
    handlers.set(name, handler);
  }
  return handler;
}

export interface CallOptions {
  id?: string;
  body?: unknown;
  /** The query string's parameters. */
  query?: Record<string, string>;
  headers?: Record<string, string>;
  replaceHeaders?: boolean;
  remainingMs?: number;
  /** Money routes get a fresh random Idempotency-Key unless `headers` carry one; null sends none. */
  idempotencyKey?: string | null;
}

function headersOf(name: RouteName, options: CallOptions): Record<string, string> | undefined {
  const given = options.headers;
  if (!IDEMPOTENT_ROUTES.includes(name) || options.idempotencyKey === null) return given;
  if (Object.keys(given ?? {}).some((header) => header.toLowerCase() === 'idempotency-key')) return given;
  return { ...given, 'Idempotency-Key': options.idempotencyKey ?? randomUUID() };
}

/** The one path parameter of a route template: `id`, or `order_id` for checkouts. */
function pathParameterOf(resource: string): string {
  return /\{(\w+)\}/.exec(resource)?.[1] ?? 'id';
}

/** Call a route's handler in-process with a realistic API Gateway event, with a token for the route's scope. */
export async function call(name: RouteName, options: CallOptions = {}): Promise<Answer> {
  const route = ROUTES[name];
  const headers = await withToken(name, headersOf(name, options));
  const event = apiEvent({
    ...route,
    ...(options.id === undefined
      ? {}
      : { pathParameters: { [pathParameterOf(route.resource)]: options.id } }),
    ...(options.body === undefined ? {} : { body: options.body }),
    ...(options.query === undefined ? {} : { query: options.query }),
    ...(headers ? { headers } : {}),
    ...(options.replaceHeaders ? { replaceHeaders: true } : {}),
  });
  const answer = await invoke(await handlerOf(name), event, lambdaContext(options.remainingMs));
  recordAnswer({
    method: route.method,
    path: event.path,
    operationId: name,
    status: answer.statusCode,
    headers: Object.fromEntries(
      Object.entries(answer.headers).map(([header, value]) => [header, String(value)]),
    ),
    body: answer.raw,
  });
  return answer;
}

/**
 * A test file's gateway: started before its tests (startTestGateway), closed after them. Before
 * each test it gets its seeded data back with faults and counters cleared while the containers
 * keep their access tokens (`keepTokens`, the default: as warm ones do, so counters show only the
 * calls under test, and a money request is not met by a token the gateway no longer knows, which
 * it would answer with 503 rather than send twice), or is `reset` whole (tokens and rate limit
 * too), or is left as it is. Reset either way, the answers the functions shared are forgotten too.
 * The sandbox is returned at once and usable inside tests.
 */
export function useTestGateway(
  options: SandboxOptions & { beforeEachTest?: 'reset' | 'keepTokens' | 'nothing' } = {},
): Sandbox {
  const { beforeEachTest = 'keepTokens', ...sandboxOptions } = options;
  let current: Sandbox | undefined;
  beforeAll(async () => {
    current = await startTestGateway(sandboxOptions);
  });
  afterAll(async () => {
    await current?.close();
  });
  beforeEach(async () => {
    if (beforeEachTest === 'reset') current!.reset();
    if (beforeEachTest === 'keepTokens') {
      current!.faults.clear();
      current!.resetState();
      current!.resetCounters();
    }
    // PayHere's data is back as seeded: what the functions shared of the last test's is not true now.
    if (beforeEachTest !== 'nothing') await forgetSharedReads();
  });
  return new Proxy({} as Sandbox, {
    get(_, property) {
      const value = Reflect.get(current!, property);
      return typeof value === 'function' ? value.bind(current) : value;
    },
  });
}
