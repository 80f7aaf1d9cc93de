import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { build, type Plugin } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ESBUILD_OPTIONS, ROOT } from '../../bench/build.ts';
import { TEST_AUTH_ENV } from '../helpers/auth.ts';

/**
 * What a function's cold start loads, seen in bundles built as serverless.yml builds them
 * (bench/build.ts's ESBUILD_OPTIONS, which the bench checks against the packaged artifacts): no
 * DynamoDB SDK (lib/dynamodb/ speaks to DynamoDB; tests/e2e/package.test.ts checks every artifact),
 * and the Secrets Manager SDK, in the bundle for the first secret, not evaluated when the function
 * is loaded. A read, a money route and the notification receiver.
 */
const FUNCTIONS = ['listSubscriptions', 'charge', 'notify'];
const run = promisify(execFile);
let out: string;

/** Marks the Secrets Manager SDK's entry module: a global is set when, and only when, it is evaluated. */
const markSecretsManager: Plugin = {
  name: 'mark-secrets-manager',
  setup(pluginBuild) {
    pluginBuild.onLoad(
      { filter: /client-secrets-manager[\\/]dist-(cjs|es)[\\/]index\.js$/ },
      async (args) => ({
        contents: `globalThis.__secretsManagerEvaluated = true;\n${await readFile(args.path, 'utf8')}`,
        loader: 'js',
      }),
    );
  },
};

const built = new Map<string, { file: string; packages: Set<string> }>();

beforeAll(async () => {
  out = await mkdtemp(path.join(tmpdir(), 'payhere-cold-imports-'));
  for (const name of FUNCTIONS) {
    const result = await build({
      ...ESBUILD_OPTIONS,
      entryPoints: { [name]: path.join(ROOT, 'functions', `${name}.ts`) },
      outdir: out,
      metafile: true,
      logLevel: 'silent',
      plugins: [markSecretsManager],
    });
    const packages = new Set<string>();
    for (const input of Object.keys(result.metafile.inputs)) {
      const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
      if (match) packages.add(match[1]!);
    }
    built.set(name, { file: path.join(out, `${name}.mjs`), packages });
  }
}, 120_000);

afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

/** Load a bundle in a fresh node, as Lambda does at a cold start, and say whether the SDK ran. */
async function evaluatedOnLoad(file: string): Promise<unknown> {
  const { stdout } = await run(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(file)}); console.log(JSON.stringify(globalThis.__secretsManagerEvaluated ?? false));`,
    ],
    {
      env: {
        PATH: process.env.PATH,
        ...TEST_AUTH_ENV,
        GATEWAY_BASE_URL: 'http://127.0.0.1:9',
        GATEWAY_SECRET_ID: 'payhere-payments-api/test/gateway',
        IDEMPOTENCY_TABLE: 'idempotency',
        LEDGER_TABLE: 'ledger',
        STATE_TABLE: 'state',
        AWS_REGION: 'ap-south-1',
        LOG_LEVEL: 'silent',
      },
    },
  );
  return JSON.parse(stdout.trim());
}

describe("a function's cold start", () => {
  it('holds no DynamoDB SDK', () => {
    for (const [name, { packages }] of built) {
      expect(
        [...packages].filter((pkg) => pkg === '@aws-sdk/client-dynamodb'),
        name,
      ).toEqual([]);
    }
  });

  it.each(FUNCTIONS)(
    'does not evaluate the Secrets Manager SDK when %s is loaded, though its bundle holds it',
    async (name) => {
      const bundle = built.get(name)!;
      const code = await readFile(bundle.file, 'utf8');

      expect(bundle.packages.has('@aws-sdk/client-secrets-manager')).toBe(true);
      expect(code).toContain('__secretsManagerEvaluated');
      // Bundled, not left to a node_modules folder that no artifact ships.
      expect(code).not.toMatch(/import\(\s*["'`]@aws-sdk/);
      expect(await evaluatedOnLoad(bundle.file)).toBe(false);
    },
    30_000,
  );
});
