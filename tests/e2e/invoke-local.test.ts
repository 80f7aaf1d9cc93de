import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { describedRoutes } from '../../openapi/routes.ts';
import { type Sandbox, sandboxGatewayEnv, startSandbox } from '../../sandbox/server.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, tokenFor } from '../helpers/auth.ts';
import { recordAnswer } from '../helpers/contract.ts';
import { lambdaContext } from '../helpers/events.ts';
import { newWebhookSecret, putEvent } from '../helpers/webhooks.ts';

/**
 * Every function of serverless.yml answers its sample event (events/<function>.json, its token
 * placeholder replaced as `npm run -s event` does) as the API description says: a function without
 * a sample event fails here. Each event is answered by the function's handler in this process,
 * against the local stack (the sandbox, the local DynamoDB); `sls invoke local -f <function>
 * --stage local --path <event>` (osls, the bundle serverless-esbuild builds, the project's plugin
 * that runs it) is run for one function of each kind: a money route with a body and an
 * Idempotency-Key, a read by path, and the settle job, which answers no HTTP request. What osls adds
 * to a handler's answer (bundling, loading the bundle, passing the event) is the same for every
 * function, and each osls run is a process that loads osls and bundles: several seconds of CPU.
 * docs/operator.md's block runs it for listSubscriptions too (tests/e2e/readme.test.ts), and `sls
 * package` bundles every function (tests/e2e/package.test.ts). The answers are held to the API
 * description like every other answer.
 */
const root = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const slsBin = createRequire(import.meta.url).resolve('osls/bin/serverless.js');

const config = parseYaml(await readFile(path.join(root, 'serverless.yml'), 'utf8'), {
  logLevel: 'error',
}) as {
  functions: Record<string, unknown>;
};
// serverless.yml's order: createCheckout comes before getCheckout, which reads the order it made.
const functions = Object.keys(config.functions);
const documented = new Map(describedRoutes().map((route) => [route.operationId as string, route]));

let sandbox: Sandbox;
let scratch: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false });
  scratch = await mkdtemp(path.join(tmpdir(), 'payhere-invoke-'));
  env = {
    ...process.env, // the local DynamoDB and this file's ledger table (tests/setup/environment.ts)
    ...TEST_AUTH_ENV,
    ...sandboxGatewayEnv(sandbox.url),
    LOG_LEVEL: 'silent',
    ESBUILD_WORK_FOLDER: '.esbuild-invoke-test',
    // A webhook endpoint that refuses connections: redeliverEvent's sample needs one configured.
    MERCHANT_WEBHOOK_URL: 'http://127.0.0.1:9/webhooks',
    MERCHANT_WEBHOOK_SECRET: newWebhookSecret(),
  };
  // The event redeliverEvent's sample names, as the relay would have published it.
  const redelivered = JSON.parse(await readFile(path.join(root, 'events', 'redeliverEvent.json'), 'utf8'));
  await putEvent({ id: redelivered.pathParameters.id, publishedAt: Date.now(), endpoints: ['default'] });
});

afterAll(async () => {
  await sandbox?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** A Lambda proxy result, its JSON body parsed (osls prints the body parsed). */
interface Printed {
  statusCode: number;
  headers: Record<string, string>;
  body: unknown;
}

/** The function's sample event, with a merchant's token where the event has the placeholder. */
async function sampleEvent(
  name: string,
): Promise<{ httpMethod?: string; path?: string } & Record<string, unknown>> {
  const eventFile = path.join(root, 'events', `${name}.json`);
  expect(existsSync(eventFile), `events/${name}.json is missing`).toBe(true);
  const event = JSON.parse(await readFile(eventFile, 'utf8'));
  if (event.headers?.Authorization) event.headers.Authorization = `Bearer ${await tokenFor(MERCHANT_SCOPES)}`;
  return event;
}

/** The scheduled jobs print what their run did; a route answers with its documented first status. */
function expectDocumentedAnswer(
  name: string,
  event: { httpMethod?: string; path?: string },
  result: unknown,
): void {
  if (!event.httpMethod) {
    const runs: Record<string, Record<string, unknown>> = {
      relayEvents: { published: expect.any(Number) },
      deliverWebhooks: { events: expect.any(Number), delivered: expect.any(Number) },
      settle: { looked: expect.any(Number), settled: expect.any(Number), stillUnknown: expect.any(Number) },
    };
    expect(result).toMatchObject(runs[name]!);
    return;
  }
  const printed = result as Printed;
  recordAnswer({
    method: event.httpMethod,
    path: event.path!,
    operationId: name,
    status: printed.statusCode,
    headers: printed.headers,
    body: JSON.stringify(printed.body),
  });
  expect(printed.statusCode, JSON.stringify(printed.body)).toBe(documented.get(name)?.answers[0]?.httpStatus);
}

describe('every function’s sample event', () => {
  beforeAll(() => {
    // The handlers of this process read the same stack the osls processes are given.
    Object.assign(process.env, env);
  });

  it.each(functions)('%s answers its sample event', async (name) => {
    const event = await sampleEvent(name);
    const { handler } = (await import(`../../functions/${name}.ts`)) as {
      handler: (
        event: unknown,
        context: unknown,
      ) => Promise<{ statusCode: number; headers?: Record<string, string>; body: string } | unknown>;
    };
    const result = await handler(event, lambdaContext());
    if (!event.httpMethod) return expectDocumentedAnswer(name, event, result);
    const answer = result as { statusCode: number; headers?: Record<string, string>; body: string };
    const json = String(answer.headers?.['Content-Type'] ?? 'application/json').startsWith(
      'application/json',
    );
    expectDocumentedAnswer(name, event, {
      statusCode: answer.statusCode,
      headers: answer.headers ?? {},
      body: json ? JSON.parse(answer.body) : answer.body,
    });
  });
});

describe('sls invoke local', () => {
  it.each(['charge', 'retrievePayments', 'settle'])(
    '%s answers its sample event',
    async (name) => {
      const event = await sampleEvent(name);
      const withToken = path.join(scratch, `${name}.json`);
      await writeFile(withToken, JSON.stringify(event));

      const { stdout } = await run(
        process.execPath,
        [slsBin, 'invoke', 'local', '-f', name, '--stage', 'local', '--path', withToken],
        { cwd: root, env, timeout: 90_000 },
      );

      expectDocumentedAnswer(name, event, JSON.parse(stdout.slice(stdout.indexOf('{'))));
    },
    120_000,
  );
});
