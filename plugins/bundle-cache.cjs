'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

/**
 * A build cache for the functions' bundles, on only where `BUNDLE_CACHE_DIR` names a folder (the
 * tests set it: each of their serverless-offline starts, packagings and local invokes bundled all
 * 21 functions anew, some 15 CPU-seconds each on a 2-core machine, for the same bundles).
 *
 * serverless-esbuild bundles in its `bundle()` (listed before this plugin, so it exists when this
 * one is made). This wraps it: the bundles are kept under a key made of every input they are made
 * of (the sources under lib/ and functions/, esbuild's options and its plugins' file, package.json
 * and the lock file, the service's configuration, where node_modules resolves: a source map names
 * its packages' paths relative to the bundle); a later build with the same key copies them into its
 * own work folder instead of running esbuild, and names them as serverless-esbuild would
 * (`buildResults`). A different input is a different key: a cached bundle is the bundle esbuild
 * would make. A build whose inputs changed while it ran is not kept. Entries unused for a day are
 * removed as a new one is kept. Without `BUNDLE_CACHE_DIR`, and for `deploy`, nothing changes.
 */
/** Written last into a kept build: a folder without it is no cache entry. */
const COMPLETE = '.complete';
/** A cache entry no build has used for this long is removed. */
const UNUSED_MS = 24 * 60 * 60 * 1000;

class BundleCachePlugin {
  constructor(serverless, options) {
    this.serverless = serverless;
    this.options = options;
    const root = process.env.BUNDLE_CACHE_DIR;
    if (!root || serverless.processedInput?.commands?.[0] === 'deploy') return;
    const esbuild = serverless.pluginManager.plugins.find(
      (plugin) => plugin.constructor?.name === 'EsbuildServerlessPlugin',
    );
    if (!esbuild || typeof esbuild.bundle !== 'function') return;
    cacheBundles(esbuild, root);
  }
}

/** Wrap `esbuild`'s bundle() (serverless-esbuild's plugin) with the cache under `root`. */
function cacheBundles(esbuild, root) {
  const build = esbuild.bundle;
  esbuild.bundle = async () => {
    const cache = path.resolve(esbuild.serviceDirPath, root);
    const key = inputKey(esbuild);
    const folder = path.join(cache, key);
    if (fs.existsSync(path.join(folder, COMPLETE))) {
      esbuild.prepare();
      fs.cpSync(folder, esbuild.buildDirPath, {
        recursive: true,
        filter: (source) => path.basename(source) !== COMPLETE,
      });
      // Used now: not removed as unused.
      fs.utimesSync(path.join(folder, COMPLETE), new Date(), new Date());
      esbuild.buildResults = bundlesOf(esbuild);
      return;
    }
    await build();
    // A source changed while esbuild ran: what it made is of neither version for certain.
    if (inputKey(esbuild) !== key) return;
    keep(esbuild.buildDirPath, folder);
    removeUnused(cache, key);
  };
}

/** What serverless-esbuild's bundle() leaves in buildResults: each function and its bundle's path. */
function bundlesOf(esbuild) {
  const extension = esbuild.buildOptions.outputFileExtension;
  return esbuild.functionEntries.map(({ entry, func, functionAlias }) => ({
    bundlePath: entry.slice(0, entry.lastIndexOf('.')) + extension,
    func,
    functionAlias,
  }));
}

/** A copy of the build, renamed into place whole (two builds at once: the first to finish wins). */
function keep(buildDir, folder) {
  const partial = `${folder}.${process.pid}.${crypto.randomUUID()}`;
  try {
    fs.cpSync(buildDir, partial, { recursive: true });
    fs.writeFileSync(path.join(partial, COMPLETE), '');
    fs.mkdirSync(path.dirname(folder), { recursive: true });
    fs.renameSync(partial, folder);
  } catch {
    // Another build kept the same bundles first, or the disk refused: the next build runs esbuild.
    fs.rmSync(partial, { recursive: true, force: true });
  }
}

/** Entries of `cache` but `key` whose last use is over UNUSED_MS old, removed (best effort). */
function removeUnused(cache, key) {
  const before = Date.now() - UNUSED_MS;
  for (const entry of fs.readdirSync(cache)) {
    if (entry === key) continue;
    const folder = path.join(cache, entry);
    try {
      if (fs.statSync(path.join(folder, COMPLETE)).mtimeMs < before)
        fs.rmSync(folder, { recursive: true, force: true });
    } catch {
      // Not an entry (a partial copy of a build still running), or already removed.
    }
  }
}

/** The digest of everything the bundles are made of. */
function inputKey(esbuild) {
  const dir = esbuild.serviceDirPath;
  const hash = crypto.createHash('sha256');
  const { outputWorkFolder: _work, ...options } = esbuild.buildOptions;
  hash.update(JSON.stringify(options));
  hash.update(JSON.stringify(esbuild.functionEntries.map(({ entry }) => entry)));
  const modules = path.join(dir, 'node_modules');
  hash.update(
    `\0node_modules\0${fs.existsSync(modules) ? path.relative(dir, fs.realpathSync(modules)) : ''}`,
  );
  const files = [
    ...listed(dir, 'lib'),
    ...listed(dir, 'functions'),
    // esbuild's plugins, as serverless-esbuild's `plugins` option names their file.
    ...(typeof options.plugins === 'string' ? [path.normalize(options.plugins)] : []),
    'package.json',
    'package-lock.json',
    // What npm installed, which esbuild reads: the lock may be new while node_modules is not yet.
    'node_modules/.package-lock.json',
    'serverless.yml',
    'tsconfig.json',
  ];
  for (const file of files) {
    hash.update(`\0${file}\0`);
    // A copy of the service without the file (a test's) is a key of its own.
    const where = path.join(dir, file);
    if (fs.existsSync(where)) hash.update(fs.readFileSync(where));
  }
  return hash.digest('hex').slice(0, 32);
}

/** Every file under `folder`, relative to `dir`, in a stable order. */
function listed(dir, folder) {
  return fs
    .readdirSync(path.join(dir, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath ?? entry.path, entry.name)))
    .sort();
}

module.exports = BundleCachePlugin;
module.exports.cacheBundles = cacheBundles;
