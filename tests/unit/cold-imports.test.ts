import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ESBUILD_OPTIONS, floorSource, LIBRARIES, ROOT } from '../../bench/build.ts';

/**
 * What a function's cold start loads, seen in bundles built as serverless.yml builds them
 * (bench/build.ts's ESBUILD_OPTIONS, which the bench checks against the packaged artifacts): no
 * AWS SDK at all (lib/aws/ speaks to DynamoDB and Secrets Manager; tests/e2e/package.test.ts checks
 * every artifact), and only libraries the bench's dependency floor imports as the function does.
 * A read, a money route and the notification receiver.
 */
const FUNCTIONS = ['listSubscriptions', 'charge', 'notify'];
let out: string;

/** The npm packages whose files an esbuild build put in its output. */
function packagesOf(inputs: Record<string, unknown>): Set<string> {
  const packages = new Set<string>();
  for (const input of Object.keys(inputs)) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
    if (match) packages.add(match[1]!);
  }
  return packages;
}

const built = new Map<string, Set<string>>();

beforeAll(async () => {
  out = await mkdtemp(path.join(tmpdir(), 'payhere-cold-imports-'));
  for (const name of FUNCTIONS) {
    const result = await build({
      ...ESBUILD_OPTIONS,
      entryPoints: { [name]: path.join(ROOT, 'functions', `${name}.ts`) },
      outdir: out,
      metafile: true,
      logLevel: 'silent',
    });
    built.set(name, packagesOf(result.metafile.inputs));
  }
}, 120_000);

afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

describe("a function's cold start", () => {
  it('holds no AWS SDK: neither the DynamoDB nor the Secrets Manager client, nor their parts', () => {
    for (const [name, packages] of built) {
      expect(
        [...packages].filter((pkg) => pkg.startsWith('@aws-sdk/') || pkg.startsWith('@smithy/')),
        name,
      ).toEqual([]);
    }
  });

  it.each(FUNCTIONS)(
    'holds the same project dependencies as its bench floor, which imports each of them (%s)',
    async (name) => {
      // Prepare: the project's own dependencies this function's bundle holds.
      const manifest = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
        dependencies: Record<string, string>;
      };
      const direct = (packages: Set<string>) =>
        [...packages].filter((pkg) => Object.hasOwn(manifest.dependencies, pkg)).sort();
      const held = direct(built.get(name)!);

      // Act: the floor bench/run.ts builds for it.
      const floor = await build({
        ...ESBUILD_OPTIONS,
        stdin: {
          contents: floorSource(LIBRARIES.filter((library) => held.includes(library))),
          resolveDir: ROOT,
          sourcefile: 'floor.ts',
          loader: 'ts',
        },
        outfile: path.join(out, `floor-${name}.mjs`),
        metafile: true,
        logLevel: 'silent',
      });

      // Assess
      expect(held.filter((pkg) => !LIBRARIES.includes(pkg))).toEqual([]);
      expect(direct(packagesOf(floor.metafile.inputs))).toEqual(held);
    },
    60_000,
  );
});
