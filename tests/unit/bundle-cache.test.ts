import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
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
const BundleCachePlugin = require('../../plugins/bundle-cache.cjs') as {
  new (serverless: object, options: object): unknown;
  cacheBundles(esbuild: StandIn, root: string): void;
};
const { cacheBundles } = BundleCachePlugin;

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
  const files: Record<string, string> = {
    'lib/a.ts': 'export const a = 1;',
    'functions/one.ts': 'export const handler = 1;',
    'functions/two.ts': 'export const handler = 2;',
    'serverless.yml': 'service: x',
    'package.json': '{}',
    'package-lock.json': '{}',
    'node_modules/.package-lock.json': '{}',
    'tsconfig.json': '{}',
    'plugins/esbuild.cjs': 'module.exports = [];',
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  let builds = 0;
  const plugin = (work: string): StandIn => {
    const stand: StandIn = {
      serviceDirPath: dir,
      buildDirPath: path.join(dir, work, '.build'),
      buildOptions: {
        outputFileExtension: '.mjs',
        minify: true,
        outputWorkFolder: work,
        plugins: './plugins/esbuild.cjs',
      },
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

  it.each([
    'package.json',
    'package-lock.json',
    'node_modules/.package-lock.json',
    'serverless.yml',
    'tsconfig.json',
    'plugins/esbuild.cjs',
  ])('builds again when %s differs', async (file) => {
    const { dir, plugin, builds } = service();
    const bundle = async (work: string) => {
      const stand = plugin(work);
      cacheBundles(stand, path.join(dir, '.cache'));
      await stand.bundle();
    };

    await bundle('.esbuild-a');
    writeFileSync(path.join(dir, file), `${readFileSync(path.join(dir, file), 'utf8')} `);
    await bundle('.esbuild-b');

    expect(builds()).toBe(2);
  });

  it('builds again where node_modules resolves elsewhere (a source map names its packages’ paths)', async () => {
    const { dir, plugin, builds } = service();
    const near = path.join(dir, 'deps');
    const far = path.join(dir, 'a', 'b', 'deps');
    mkdirSync(near);
    mkdirSync(far, { recursive: true });
    const bundleWith = async (modules: string, work: string) => {
      rmSync(path.join(dir, 'node_modules'), { force: true, recursive: true });
      symlinkSync(modules, path.join(dir, 'node_modules'));
      const stand = plugin(work);
      cacheBundles(stand, path.join(dir, '.cache'));
      await stand.bundle();
    };

    await bundleWith(near, '.esbuild-a');
    await bundleWith(far, '.esbuild-b');
    await bundleWith(near, '.esbuild-c');

    expect(builds()).toBe(2);
  });

  it('keeps no build whose sources changed while it ran: going back to them builds again', async () => {
    const { dir, plugin, builds } = service();
    const changing = plugin('.esbuild-a');
    const build = changing.bundle;
    changing.bundle = async () => {
      await build();
      writeFileSync(path.join(dir, 'lib/a.ts'), 'export const a = 2;');
    };
    cacheBundles(changing, path.join(dir, '.cache'));
    await changing.bundle();
    writeFileSync(path.join(dir, 'lib/a.ts'), 'export const a = 1;');
    const next = plugin('.esbuild-b');
    cacheBundles(next, path.join(dir, '.cache'));

    await next.bundle();

    expect(builds()).toBe(2);
  });

  it('removes an entry no build used for a day as it keeps a new one', async () => {
    const { dir, plugin } = service();
    const cache = path.join(dir, '.cache');
    const bundle = async (work: string) => {
      const stand = plugin(work);
      cacheBundles(stand, cache);
      await stand.bundle();
    };
    await bundle('.esbuild-a');
    const [old] = readdirSync(cache);
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 60 * 60 * 1000);
    utimesSync(path.join(cache, old!, '.complete'), twoDaysAgo, twoDaysAgo);

    writeFileSync(path.join(dir, 'lib/a.ts'), 'export const a = 2;');
    await bundle('.esbuild-b');

    expect(readdirSync(cache)).toHaveLength(1);
    expect(readdirSync(cache)).not.toContain(old);
  });

  it('is off for a deploy: the functions are bundled by esbuild, never copied', () => {
    const { plugin } = service();
    class EsbuildServerlessPlugin {}
    const stand = Object.assign(new EsbuildServerlessPlugin(), plugin('.esbuild-a'));
    const bundle = stand.bundle;
    const serverless = { processedInput: { commands: ['deploy'] }, pluginManager: { plugins: [stand] } };
    const previous = process.env.BUNDLE_CACHE_DIR;
    process.env.BUNDLE_CACHE_DIR = '.cache';
    try {
      new BundleCachePlugin(serverless, {});
      expect(stand.bundle).toBe(bundle);
      new BundleCachePlugin({ ...serverless, processedInput: { commands: ['package'] } }, {});
      expect(stand.bundle).not.toBe(bundle);
    } finally {
      if (previous === undefined) delete process.env.BUNDLE_CACHE_DIR;
      else process.env.BUNDLE_CACHE_DIR = previous;
    }
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
