'use strict';

/**
 * esbuild plugins for the functions' bundles (serverless.yml `custom.esbuild.plugins`; bench/build.ts
 * builds with the same, and tests/unit/cold-imports.test.ts checks what they leave out).
 *
 * undici's Pool brings three modules the PayHere transport (lib/gateway/transport.ts) never runs.
 * Each costs every cold start its parse, and the first PayHere call its evaluation:
 * - `llhttp/llhttp_simd-wasm.js`: llhttp's SIMD build, 70 KiB of base64. client-h1 tries it in a
 *   `try` and falls back to the portable build (`llhttp/llhttp-wasm.js`), which every WebAssembly
 *   engine runs. PayHere's answers are a few hundred bytes, so SIMD would gain nothing measurable.
 * - `web/fetch/body.js`, with the fetch, WebIDL and FormData modules it requires (about 40 KiB):
 *   client-h1 requires it only for a FormData body, and every body the transport sends is a string.
 * - `dispatcher/client-h2.js`, which loads `node:http2` (5 ms) as it is evaluated: it is called
 *   only for a connection whose ALPN chose h2, and undici offers h2 only with `allowH2`, which the
 *   transport never sets (undici 7's default is off).
 * Each is replaced by a module that fails loudly if it is ever reached, rather than by nothing.
 */
const LEFT_OUT = [
  {
    file: 'llhttp/llhttp_simd-wasm.js',
    contents: `throw new Error("undici's SIMD llhttp is left out of this bundle (plugins/esbuild.cjs): its portable build is used");`,
  },
  {
    file: 'web/fetch/body.js',
    contents: `module.exports = { extractBody() { throw new Error("undici's FormData bodies are left out of this bundle (plugins/esbuild.cjs): send a string"); } };`,
  },
  {
    file: 'dispatcher/client-h2.js',
    contents: `module.exports = function connectH2() { throw new Error("undici's HTTP/2 client is left out of this bundle (plugins/esbuild.cjs): do not set allowH2"); };`,
  },
];

const asPattern = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replaceAll('/', '[\\\\/]');
const filter = new RegExp(
  `[\\\\/]node_modules[\\\\/]undici[\\\\/]lib[\\\\/](?:${LEFT_OUT.map(({ file }) => asPattern(file)).join('|')})$`,
);

/** @type {import('esbuild').Plugin} */
const trimUndici = {
  name: 'trim-undici',
  setup(build) {
    build.onLoad({ filter }, (args) => {
      const path = args.path.replaceAll('\\', '/');
      const part = LEFT_OUT.find(({ file }) => path.endsWith(`/undici/lib/${file}`));
      return { contents: part.contents, loader: 'js' };
    });
  },
};

/**
 * @middy/core imports `ReadableStream` from `node:stream/web` at load, for one thing: checking a
 * streamed response's body when `streamifyResponse` is set. No function sets it (lib/http/route.ts,
 * lib/http/form-route.ts), yet every cold start paid for Node's web streams, eight modules, about
 * 3 ms of the import. middy's import gets a class no value is ever an instance of, which fails
 * loudly if anything constructs it; every other import of `node:stream/web` is left as it is.
 */
const STREAM_WEB_STAND_IN = 'middy-stream-web-stand-in';
const MIDDY_CORE = /[\\/]node_modules[\\/]@middy[\\/]core[\\/]/;

/** @type {import('esbuild').Plugin} */
const noMiddyStreams = {
  name: 'no-middy-streams',
  setup(build) {
    build.onResolve({ filter: /^node:stream\/web$/ }, (args) =>
      MIDDY_CORE.test(args.importer)
        ? { path: STREAM_WEB_STAND_IN, namespace: STREAM_WEB_STAND_IN }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: STREAM_WEB_STAND_IN }, () => ({
      contents: `export class ReadableStream { constructor() { throw new Error("middy's streamed responses are left out of this bundle (plugins/esbuild.cjs): do not set streamifyResponse"); } }`,
      loader: 'js',
    }));
  },
};

module.exports = [trimUndici, noMiddyStreams];
module.exports.LEFT_OUT = LEFT_OUT.map(({ file }) => `node_modules/undici/lib/${file}`);
/** How esbuild names the module that stands in for middy's `node:stream/web`. */
module.exports.MIDDY_STREAM_WEB = `${STREAM_WEB_STAND_IN}:${STREAM_WEB_STAND_IN}`;
