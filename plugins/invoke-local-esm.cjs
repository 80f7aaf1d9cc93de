'use strict';

/**
 * `sls invoke local` loads a Node handler with `require(<service dir>/<handler path>)` and, when
 * that is not found, tries the path with `.cjs` (osls lib/plugins/aws/invoke-local/index.js,
 * loadModule). Our bundles are ESM with the `.mjs` extension (custom.esbuild.outputFileExtension),
 * which require() never adds, so every local invoke failed with MODULE_NOT_FOUND.
 *
 * This names the bundle's extension in the invoked function's handler once serverless-esbuild has
 * built it (this plugin is listed after it, so its hook runs later): `functions/charge.mjs.handler`.
 * osls splits the handler at its last dot, and Node 24 require()s an ES module that has no top-level
 * await. The deployed artifacts and their handlers are not touched: only `invoke local` runs this.
 */
class InvokeLocalEsmPlugin {
  constructor(serverless, options) {
    this.serverless = serverless;
    this.options = options;
    this.hooks = {
      'before:invoke:local:invoke': () => this.nameBundleExtension(),
    };
  }

  nameBundleExtension() {
    const extension = this.serverless.service.custom?.esbuild?.outputFileExtension ?? '.js';
    if (extension === '.js') return;
    const fn = this.serverless.service.getFunction(this.options.function);
    const separator = fn.handler.lastIndexOf('.');
    const file = fn.handler.slice(0, separator);
    if (file.endsWith(extension)) return;
    fn.handler = `${file}${extension}${fn.handler.slice(separator)}`;
  }
}

module.exports = InvokeLocalEsmPlugin;
