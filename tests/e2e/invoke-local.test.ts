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

/**
 * `sls invoke local -f <function> --stage local --path events/<function>.json` for every function
 * of serverless.yml, against the local stack (the sandbox, the local DynamoDB), with the sample
 * event's token placeholder replaced as `npm run -s event` does. A function without a sample event
 * fails here. The answers are held to the API description like every other answer.
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
  };
});

afterAll(async () => {
  await sandbox?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** What osls prints for a Lambda proxy result: the result, its JSON body parsed. */
interface Printed {
  statusCode: number;
  headers: Record<string, string>;
  body: unknown;
}

describe('sls invoke local', () => {
  it.each(functions)(
    '%s answers its sample event',
    async (name) => {
      const eventFile = path.join(root, 'events', `${name}.json`);
      expect(existsSync(eventFile), `events/${name}.json is missing`).toBe(true);
      const event = JSON.parse(await readFile(eventFile, 'utf8'));
      if (event.headers?.Authorization)
        event.headers.Authorization = `Bearer ${await tokenFor(MERCHANT_SCOPES)}`;
      const withToken = path.join(scratch, `${name}.json`);
      await writeFile(withToken, JSON.stringify(event));

      const { stdout } = await run(
        process.execPath,
        [slsBin, 'invoke', 'local', '-f', name, '--stage', 'local', '--path', withToken],
        { cwd: root, env, timeout: 90_000 },
      );

      // The settle job answers no HTTP request: it prints what its run did.
      if (!event.httpMethod) {
        expect(JSON.parse(stdout.slice(stdout.indexOf('{')))).toMatchObject({
          looked: expect.any(Number),
          settled: expect.any(Number),
          stillUnknown: expect.any(Number),
        });
        return;
      }
      const printed = JSON.parse(stdout.slice(stdout.indexOf('{'))) as Printed;
      recordAnswer({
        method: event.httpMethod,
        path: event.path,
        operationId: name,
        status: printed.statusCode,
        headers: printed.headers,
        body: JSON.stringify(printed.body),
      });
      expect(printed.statusCode, JSON.stringify(printed.body)).toBe(
        documented.get(name)?.answers[0]?.httpStatus,
      );
    },
    120_000,
  );
});
