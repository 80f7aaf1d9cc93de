import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * plugins/bundle-cache.cjs on a stand-in for serverless-esbuild's plugin holding only what the
 * cache reads and sets: a build whose inputs were built before is copied, not made again; any
 * input changed is a new build. (The e2e tests run it inside osls on every start.)
 */
const require = createRequire(import.meta.url);
const { cacheBundles } = require('../../plugins/bundle-cache.cjs') as {
  cacheBundles(esbuild: StandIn, root: string): void;
};

interface StandIn {
  serviceDirPath: string;
  buildDirPath: string;
  buildOptions: Record<string, unknown>;
  functionEntries: Array<{ entry: string; func: object; functionAlias: string }>;
  buildResults?: Array<{ bundlePath: string; functionAlias: string }>;
  prepare(): void;
  bundle(): Promise<void>;
}

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A service with two functions' sources, and a plugin whose bundle() counts its builds. */
function service() {
  const dir = mkdtempSync(path.join(tmpdir(), 'bundle-cache-'));
  made.push(dir);
  for (const file of ['lib/a.ts', 'functions/one.ts', 'functions/two.ts', 'serverless.yml'])
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  writeFileSync(path.join(dir, 'lib/a.ts'), 'export const a = 1;');
  writeFileSync(path.join(dir, 'functions/one.ts'), 'export const handler = 1;');
  writeFileSync(path.join(dir, 'functions/two.ts'), 'export const handler = 2;');
  writeFileSync(path.join(dir, 'serverless.yml'), 'service: x');
  let builds = 0;
  const plugin = (work: string): StandIn => {
    const stand: StandIn = {
      serviceDirPath: dir,
      buildDirPath: path.join(dir, work, '.build'),
      buildOptions: { outputFileExtension: '.mjs', minify: true, outputWorkFolder: work },
      functionEntries: ['one', 'two'].map((name) => ({
        entry: `functions/${name}.ts`,
        func: { handler: `functions/${name}.handler` },
        functionAlias: name,
      })),
      prepare: () => mkdirSync(stand.buildDirPath, { recursive: true }),
      bundle: async () => {
        builds++;
        stand.prepare();
        mkdirSync(path.join(stand.buildDirPath, 'functions'), { recursive: true });
        for (const name of ['one', 'two'])
          writeFileSync(
            path.join(stand.buildDirPath, `functions/${name}.mjs`),
            `// built ${builds} from ${readFileSync(path.join(dir, `functions/${name}.ts`), 'utf8')}`,
          );
        stand.buildResults = stand.functionEntries.map(({ entry, functionAlias }) => ({
          bundlePath: entry.replace('.ts', '.mjs'),
          functionAlias,
        }));
      },
    };
    return stand;
  };
  return { dir, plugin, builds: () => builds };
}

describe('the bundle cache', () => {
  it('copies a build of the same inputs into a new work folder, and names its bundles as a build would', async () => {
    const { dir, plugin, builds } = service();
    const first = plugin('.esbuild-a');
    const second = plugin('.esbuild-b');
    cacheBundles(first, path.join(dir, '.cache'));
    cacheBundles(second, path.join(dir, '.cache'));

    await first.bundle();
    await second.bundle();

    expect(builds()).toBe(1);
    expect(readFileSync(path.join(second.buildDirPath, 'functions/two.mjs'), 'utf8')).toBe(
      '// built 1 from export const handler = 2;',
    );
    expect(second.buildResults).toEqual(first.buildResults!.map((result) => expect.objectContaining(result)));
    expect(existsSync(path.join(second.buildDirPath, '.complete'))).toBe(false);
  });

  it('builds again when a source, esbuild’s options or the functions differ', async () => {
    const { dir, plugin, builds } = service();
    const bundleWith = async (change: (stand: StandIn) => void) => {
      const stand = plugin(`.esbuild-${builds()}`);
      change(stand);
      cacheBundles(stand, path.join(dir, '.cache'));
      await stand.bundle();
      return stand;
    };

    await bundleWith(() => {});
    writeFileSync(path.join(dir, 'lib/a.ts'), 'export const a = 2;');
    await bundleWith(() => {});
    await bundleWith((stand) => {
      stand.buildOptions.minify = false;
    });
    await bundleWith((stand) => {
      stand.functionEntries = stand.functionEntries.slice(0, 1);
    });
    const again = await bundleWith((stand) => {
      stand.buildOptions.outputWorkFolder = '.elsewhere';
    });

    // The last differs only in its work folder: the second build's, copied.
    expect(builds()).toBe(4);
    expect(readFileSync(path.join(again.buildDirPath, 'functions/one.mjs'), 'utf8')).toMatch(
      /^\/\/ built 2 /,
    );
  });

  it('keeps nothing of a build that failed: the next build runs esbuild', async () => {
    const { dir, plugin, builds } = service();
    const failing = plugin('.esbuild-a');
    failing.bundle = async () => {
      throw new Error('esbuild failed');
    };
    cacheBundles(failing, path.join(dir, '.cache'));
    const next = plugin('.esbuild-b');
    cacheBundles(next, path.join(dir, '.cache'));

    await expect(failing.bundle()).rejects.toThrow('esbuild failed');
    await next.bundle();

    expect(builds()).toBe(1);
  });
});
