import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../helpers/routes.ts';

const run = promisify(execFile);
const slsBin = createRequire(import.meta.url).resolve('osls/bin/serverless.js');

let out: string;
let template: { Resources: Record<string, { Type: string; Properties: any }> };

beforeAll(async () => {
  out = await mkdtemp(path.join(tmpdir(), 'payhere-package-'));
  // `npm run package` runs exactly this; no AWS credentials are needed to package.
  await run(process.execPath, [slsBin, 'package', '--stage', 'test', '--package', out], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    env: { ...process.env, ESBUILD_WORK_FOLDER: '.esbuild-package-test' },
  });
  template = JSON.parse(await readFile(path.join(out, 'cloudformation-template-update-stack.json'), 'utf8'));
}, 120_000);

afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

describe('osls package', () => {
  it('produces one artifact per function', async () => {
    const zips = (await readdir(out)).filter((file) => file.endsWith('.zip')).sort();

    expect(zips).toEqual(
      Object.keys(ROUTES)
        .map((name) => `${name}.zip`)
        .sort(),
    );
  });

  it('declares every function on nodejs24.x arm64 with its route', () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    const methods = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::ApiGateway::Method' && r.Properties.HttpMethod !== 'OPTIONS')
      .map((r) => r.Properties.HttpMethod)
      .sort();

    expect(functions).toHaveLength(9);
    for (const fn of functions) {
      expect(fn.Properties.Runtime).toBe('nodejs24.x');
      expect(fn.Properties.Architectures).toEqual(['arm64']);
      expect(fn.Properties.Timeout).toBeLessThan(29);
    }
    expect(methods).toEqual(
      Object.values(ROUTES)
        .map((r) => r.method)
        .sort(),
    );
  });
});
