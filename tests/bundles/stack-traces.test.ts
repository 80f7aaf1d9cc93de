import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ESBUILD_OPTIONS, ROOT } from '../../bench/build.ts';

/**
 * lib/log/stack.ts in a bundle built as serverless.yml builds the functions (minified, its map
 * beside it), run by Node without `--enable-source-maps`, as the functions run: a stack read (by
 * the logger, or by whoever prints an error) points at the TypeScript sources, with the sources'
 * names, though Node mapped nothing as the bundle loaded.
 */
let dir: string;
let fixture: string;
let bundle: string;

interface Probe {
  stack: string;
  logged: string;
  installed: boolean;
}

/** Line 4 of the fixture throws, from a function the minifier renames. */
const FIXTURE = (log: string) => `import { describeError } from ${JSON.stringify(log)};
function placeOrder(orderId: string): never {
  // The error the stack is read from.
  throw new Error(\`order \${orderId} could not be placed\`);
}
try {
  placeOrder(String(Date.now()));
} catch (error) {
  const stack = (error as Error).stack ?? '';
  const logged = String(describeError(error).stack);
  // Node's own formatter (which maps under --enable-source-maps) is ErrorPrepareStackTrace.
  const installed = Error.prepareStackTrace?.name !== 'ErrorPrepareStackTrace';
  process.stdout.write(JSON.stringify({ stack, logged, installed }));
}
`;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'payhere-stack-traces-'));
  fixture = path.join(dir, 'src', 'fixture.ts');
  await mkdir(path.dirname(fixture), { recursive: true });
  await writeFile(fixture, FIXTURE(path.join(ROOT, 'lib', 'log', 'log.ts')));
  bundle = path.join(dir, 'functions', 'fixture.mjs');
  await build({ ...ESBUILD_OPTIONS, entryPoints: [fixture], outfile: bundle, logLevel: 'silent' });
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function probe(file: string, nodeFlags: string[] = []): Promise<Probe> {
  const { stdout } = await promisify(execFile)(process.execPath, [...nodeFlags, file], {
    env: { PATH: process.env.PATH },
  });
  return JSON.parse(stdout) as Probe;
}

describe('stack traces of a bundled function', () => {
  it('point at the TypeScript sources and their names, mapped when read, without --enable-source-maps', async () => {
    const { stack, logged, installed } = await probe(bundle);

    expect(installed).toBe(true);
    const [head, first] = stack.split('\n');
    expect(head).toMatch(/^Error: order \d+ could not be placed$/);
    expect(first).toBe(`    at placeOrder (${fixture}:4:9)`);
    expect(stack).toMatch(new RegExp(`\\n    at ${fixture.replaceAll('.', '\\.')}:7:3\\n`));
    // Frames outside the bundle, which no map covers, stay as V8 writes them.
    expect(stack).toMatch(/\n {4}at ModuleJob\.run \(node:internal\/modules\/esm\/module_job:\d+:\d+\)/);
    // The logger's five frames are the mapped ones.
    expect(logged.split('\n')[0]).toBe(`    at placeOrder (${fixture}:4:9)`);
  });

  it('point at the bundle when its map is not beside it, and nothing is installed', async () => {
    const alone = path.join(dir, 'alone', 'fixture.mjs');
    await mkdir(path.dirname(alone), { recursive: true });
    await copyFile(bundle, alone);

    const { stack, installed } = await probe(alone);

    expect(installed).toBe(false);
    expect(stack.split('\n')[1]).toMatch(/^ {4}at \S+ \(file:\/\/.*\/alone\/fixture\.mjs:\d+:\d+\)$/);
    expect(stack).not.toMatch(/\.ts:\d+/);
  });

  it('are left to Node under --enable-source-maps, which maps them as the bundle loads', async () => {
    const { stack, installed } = await probe(bundle, ['--enable-source-maps']);

    expect(installed).toBe(false);
    expect(stack.split('\n')[1]).toBe(`    at placeOrder (${fixture}:4:9)`);
  });
});
