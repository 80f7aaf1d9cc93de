import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { type BuildOptions, build, type Plugin } from 'esbuild';
import { readZip } from './zip.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const OUT = path.join(ROOT, 'bench', 'out');
const run = promisify(execFile);
const require = createRequire(import.meta.url);
const slsBin = require.resolve('osls/bin/serverless.js');
const functionPlugins: Plugin[] & {
  LEFT_OUT: string[];
  MIDDY_STREAM_WEB: string;
} = require('../plugins/esbuild.cjs');
/** serverless.yml's `custom.esbuild.plugins`. */
export const FUNCTION_PLUGINS: Plugin[] = [...functionPlugins];
/** The dependencies' files those plugins replace by a module that throws, as esbuild names them. */
export const LEFT_OUT: readonly string[] = functionPlugins.LEFT_OUT;
/** The module those plugins give @middy/core for `node:stream/web`, as esbuild names it. */
export const MIDDY_STREAM_WEB: string = functionPlugins.MIDDY_STREAM_WEB;

/**
 * serverless.yml's `custom.esbuild`, for the floors: built the same way as the functions. The
 * packaged functions are rebuilt with it too and must come out the same size, which proves the
 * two settings agree.
 */
export const ESBUILD_OPTIONS: BuildOptions = {
  bundle: true,
  minify: true,
  sourcemap: 'linked',
  sourcesContent: false,
  target: 'node24',
  platform: 'node',
  format: 'esm',
  mainFields: ['module', 'main'],
  outExtension: { '.js': '.mjs' },
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  plugins: FUNCTION_PLUGINS,
};

export interface PackagedFunction {
  name: string;
  zipBytes: number;
  jsBytes: number;
  /** The bundle extracted from the artifact, with its source map beside it. */
  bundle: string;
}

/** `osls package`, then each function's artifact measured and its bundle extracted to run it. */
export async function packageFunctions(names: readonly string[]): Promise<PackagedFunction[]> {
  const artifacts = path.join(OUT, 'package');
  await rm(artifacts, { recursive: true, force: true });
  await run(process.execPath, [slsBin, 'package', '--stage', 'bench', '--package', artifacts], {
    cwd: ROOT,
    // Only the bundles are measured; a stage other than local must still name its gateway.
    env: {
      ...process.env,
      ESBUILD_WORK_FOLDER: '.esbuild-bench',
      GATEWAY_BASE_URL: 'https://sandbox.payhere.lk',
    },
  });
  const functions: PackagedFunction[] = [];
  for (const name of names) {
    const zip = await readFile(path.join(artifacts, `${name}.zip`));
    const entries = readZip(zip);
    const js = entries.find((entry) => entry.name === `functions/${name}.mjs`);
    const map = entries.find((entry) => entry.name === `functions/${name}.mjs.map`);
    if (!js || !map) throw new Error(`${name}.zip has no functions/${name}.mjs(.map)`);
    const dir = path.join(OUT, 'functions', name);
    await mkdir(dir, { recursive: true });
    const bundle = path.join(dir, `${name}.mjs`);
    await writeFile(bundle, js.data());
    await writeFile(`${bundle}.map`, map.data());
    functions.push({ name, zipBytes: zip.length, jsBytes: js.size, bundle });
  }
  return functions;
}

export interface Built {
  bundle: string;
  jsBytes: number;
  /** The npm packages that ended up in the bundle. */
  packages: string[];
}

/** What a candidate may build differently from the functions (bench/run.ts says why, where it does). */
export type BuildChanges = Pick<BuildOptions, 'mainFields' | 'plugins'>;

/**
 * esbuild's own resolution for Node (a package's CommonJS `main` first), as the usual build has
 * it: the classic library set and the naive intermediary are built so, as they always were.
 */
export const USUAL_RESOLUTION: BuildChanges = { mainFields: ['main', 'module'] };

/**
 * Bundle `entry` (a file, or source text) with the functions' settings, `changes` apart: their
 * plugins, if given, instead of the functions' (which would break undici's main entry, say).
 */
export async function bundle(
  name: string,
  entry: { file: string } | { source: string },
  changes: BuildChanges = {},
): Promise<Built> {
  const outdir = path.join(OUT, 'builds', name);
  await rm(outdir, { recursive: true, force: true });
  const result = await build({
    ...ESBUILD_OPTIONS,
    ...changes,
    ...('file' in entry
      ? { entryPoints: { [name]: entry.file } }
      : { stdin: { contents: entry.source, resolveDir: ROOT, sourcefile: `${name}.ts`, loader: 'ts' } }),
    ...('file' in entry ? { outdir } : { outfile: path.join(outdir, `${name}.mjs`) }),
    metafile: true,
    logLevel: 'silent',
  });
  const outputs = Object.entries(result.metafile.outputs).filter(([file]) => file.endsWith('.mjs'));
  const [file, output] = outputs[0]!;
  const packages = new Set<string>();
  for (const input of Object.keys(output.inputs)) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
    if (match) packages.add(match[1]!);
  }
  return { bundle: path.resolve(ROOT, file), jsBytes: output.bytes, packages: [...packages].sort() };
}

/**
 * The smallest official entry point of each library a function may need, used just enough that
 * tree-shaking keeps it, and loaded as the functions load it. A function's dependency floor
 * imports the ones its own bundle holds (tests/unit/cold-imports.test.ts checks that they are the
 * same). undici's Pool module is in the bundle, loaded by the first PayHere call
 * (lib/gateway/transport.ts), so the floor holds them the same way. No AWS SDK: the functions reach
 * DynamoDB and Secrets Manager through lib/aws/, which is our code over node:http and
 * node:crypto, so its cost counts against the function, as it should.
 */
const ENTRY_POINTS: Record<string, { imports: string; uses: string }> = {
  undici: {
    imports: '',
    uses: "() => import('undici/lib/dispatcher/pool.js')",
  },
  '@middy/core': { imports: "import middy from '@middy/core';", uses: 'middy' },
  '@middy/http-json-body-parser': {
    imports: "import jsonBodyParser from '@middy/http-json-body-parser';",
    uses: 'jsonBodyParser',
  },
  zod: { imports: "import * as z from 'zod/mini';", uses: 'z.strictObject, z.string, z.number' },
  jose: {
    imports: "import { createRemoteJWKSet, jwtVerify } from 'jose';",
    uses: 'createRemoteJWKSet, jwtVerify',
  },
  '@smithy/signature-v4': {
    imports: "import { SignatureV4 } from '@smithy/signature-v4';",
    uses: 'SignatureV4',
  },
  '@smithy/core': { imports: "import { Sha256 } from '@smithy/core/checksum';", uses: 'Sha256' },
  '@aws-lambda-powertools/metrics': {
    imports: "import { Metrics } from '@aws-lambda-powertools/metrics';",
    uses: 'Metrics',
  },
};

/**
 * What a function's bundle may hold of AWS's SDK: its signer as lib/aws/sign.ts uses it, resolved
 * to its ES modules (serverless.yml's `mainFields`), and no client's code (@smithy/types is
 * resolved and leaves nothing).
 */
export const SIGNER_FILES =
  /node_modules\/@smithy\/(signature-v4\/dist-es\/|types\/dist-es\/|core\/dist-es\/submodules\/(serde|transport|client|protocols|checksum)\/)/;

/** Direct dependencies of the project that a bundle may hold (the rest are theirs). */
export const LIBRARIES = Object.keys(ENTRY_POINTS);

export function floorSource(libraries: readonly string[]): string {
  const used = libraries.map((library) => {
    const entry = ENTRY_POINTS[library];
    if (!entry) throw new Error(`no entry point known for ${library}`);
    return entry;
  });
  return [
    ...used.map((entry) => entry.imports),
    `export const dependencies = [${used.map((entry) => entry.uses).join(', ')}];`,
    "export const handler = async () => ({ statusCode: 200, body: '' });",
  ].join('\n');
}

/**
 * The design card's library set imported the classic way (issue "Cold starts at two thirds of
 * what the libraries cost today"): undici's Pool, the Secrets Manager client constructed at
 * start-up, middy with its body parser, `zod/mini`, jose, all at import. What a naive
 * intermediary loads; each function's cold import is budgeted against it.
 */
export const CLASSIC_LIBRARIES = `
import { Pool } from 'undici';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import middy from '@middy/core';
import jsonBodyParser from '@middy/http-json-body-parser';
import * as z from 'zod/mini';
import { createRemoteJWKSet, jwtVerify } from 'jose';
const secrets = new SecretsManagerClient({ region: process.env.AWS_REGION ?? 'ap-south-1' });
export const dependencies = [Pool, middy, jsonBodyParser, z.strictObject, createRemoteJWKSet, jwtVerify, secrets];
export const handler = async () => ({ statusCode: 200, body: '' });
`;

export const EMPTY_HANDLER = "export const handler = async () => ({ statusCode: 200, body: '' });";
