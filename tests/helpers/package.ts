import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/** osls as `npm run package` runs it, on this process's Node; no AWS account is needed to package. */
const run = promisify(execFile);
const slsBin = createRequire(import.meta.url).resolve('osls/bin/serverless.js');
export const root = path.resolve(import.meta.dirname, '../..');

export type Template = {
  Resources: Record<string, { Type: string; Properties: any; DependsOn?: string[] }>;
  Conditions?: Record<string, unknown>;
};

let home: Promise<string> | undefined;

/**
 * A scratch HOME where osls has run once. On its first run in a HOME, osls compiles the JSON Schema
 * of its configuration (about 3 s of CPU, kept in ~/.serverless): the commands a test file starts
 * at once would each compile it, and a refusal took twice as long, past its time limit on a busy
 * machine. `sls print` here compiles it first; should it fail, each command compiles it as before.
 */
async function scratchHome(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'osls-home-'));
  await run(process.execPath, [slsBin, 'print', '--stage', 'local'], {
    cwd: root,
    env: withoutCredentials(dir, {}),
    timeout: 120_000,
  }).catch(() => undefined);
  return dir;
}

/**
 * Exactly `env` and what a shell needs, nothing of this process's configuration; no AWS credentials
 * anywhere (HOME is a scratch folder), so that no command can reach an AWS account.
 */
async function isolatedEnv(env: Record<string, string>): Promise<NodeJS.ProcessEnv> {
  home ??= scratchHome();
  return withoutCredentials(await home, env);
}

function withoutCredentials(homeDir: string, env: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: homeDir,
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials',
    AWS_CONFIG_FILE: '/nonexistent/config',
    AWS_EC2_METADATA_DISABLED: 'true',
    // The run's bundles (plugins/bundle-cache.cjs): a copy of the same sources bundles the same.
    ...(process.env.BUNDLE_CACHE_DIR ? { BUNDLE_CACHE_DIR: process.env.BUNDLE_CACHE_DIR } : {}),
    ...env,
  };
}

/**
 * What packaging reads of the service, copied into `service` (its node_modules linked): the lock
 * file too, so that the copy's bundles are the run's (plugins/bundle-cache.cjs).
 */
export async function copyService(service: string): Promise<void> {
  for (const name of [
    'serverless.yml',
    'package.json',
    'package-lock.json',
    'tsconfig.json',
    'functions',
    'lib',
    'plugins',
  ]) {
    await cp(path.join(root, name), path.join(service, name), { recursive: true });
  }
  await symlink(path.join(root, 'node_modules'), path.join(service, 'node_modules'), 'dir');
}

/**
 * Package a copy of the service with `env` (stage `test` unless given) and return its template.
 * A copy, because serverless-esbuild always stages artifacts in the service's own .serverless/,
 * which packages running at once in other test files would share.
 */
export async function packageCopy(env: Record<string, string>, stage = 'test'): Promise<Template> {
  const service = await mkdtemp(path.join(tmpdir(), 'payhere-package-copy-'));
  await copyService(service);
  const dir = path.join(service, 'artifacts');
  await run(process.execPath, [slsBin, 'package', '--stage', stage, '--package', dir], {
    cwd: service,
    env: await isolatedEnv({ ...env, ESBUILD_WORK_FOLDER: '.esbuild' }),
  });
  return JSON.parse(await readFile(path.join(dir, 'cloudformation-template-update-stack.json'), 'utf8'));
}

/** Run `sls <args>` in the service, expecting it to fail before building anything; its output. */
export async function slsRefusal(args: string[], env: Record<string, string>): Promise<string> {
  const failure = await run(process.execPath, [slsBin, ...args], {
    cwd: root,
    env: await isolatedEnv(env),
    timeout: 60_000,
  }).then(
    () => undefined,
    (error: { stdout: string; stderr: string }) => error,
  );
  if (!failure) throw new Error(`sls ${args.join(' ')} succeeded`);
  return `${failure.stdout}\n${failure.stderr}`;
}
