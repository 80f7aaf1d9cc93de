'use strict';

const Module = require('node:module');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

/**
 * `sls invoke local` loads a Node handler with `require(<service dir>/<handler path>)` and, when
 * that is not found, tries the path with `.cjs` (osls lib/plugins/aws/invoke-local/index.js,
 * loadModule). Our bundles are ESM with the `.mjs` extension (custom.esbuild.outputFileExtension),
 * which require() never adds, so every local invoke failed with MODULE_NOT_FOUND.
 *
 * This names the bundle's extension in the invoked function's handler once serverless-esbuild has
 * built it (this plugin is listed after it, so its hook runs later): `functions/charge.mjs.handler`.
 * osls splits the handler at its last dot. A bundle that calls PayHere has a top-level await
 * (lib/gateway/connect-at-start.ts), which require() refuses (ERR_REQUIRE_ASYNC_MODULE, where
 * Lambda's runtime imports an `.mjs` handler): the bundle is imported here, as Lambda imports it,
 * and osls's require() of that one file is given what the import gave. The deployed artifacts and
 * their handlers are not touched: only `invoke local` runs this.
 */
class InvokeLocalEsmPlugin {
  constructor(serverless, options) {
    this.serverless = serverless;
    this.options = options;
    this.hooks = {
      'before:invoke:local:invoke': () => this.nameBundleExtension(),
    };
  }

  async nameBundleExtension() {
    const extension = this.serverless.service.custom?.esbuild?.outputFileExtension ?? '.js';
    if (extension === '.js') return;
    const fn = this.serverless.service.getFunction(this.options.function);
    const separator = fn.handler.lastIndexOf('.');
    const file = fn.handler.slice(0, separator);
    if (file.endsWith(extension)) return;
    fn.handler = `${file}${extension}${fn.handler.slice(separator)}`;
    await this.importForRequire(
      path.join(this.serverless.serviceDir, this.options.extraServicePath || '', `${file}${extension}`),
    );
  }

  /** Import `bundle` (its environment is the function's by now) and answer require() of it with the import's module. */
  async importForRequire(bundle) {
    const loaded = await import(pathToFileURL(bundle).href);
    const load = Module._load;
    Module._load = function loadBundle(request, ...rest) {
      if (path.resolve(request) === bundle) return loaded;
      return load.call(this, request, ...rest);
    };
  }
}

module.exports = InvokeLocalEsmPlugin;
