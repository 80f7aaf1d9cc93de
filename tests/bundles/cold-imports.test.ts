import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ESBUILD_OPTIONS,
  floorSource,
  LEFT_OUT,
  LIBRARIES,
  MIDDY_STREAM_WEB,
  ROOT,
  SIGNER_FILES,
} from '../../bench/build.ts';
import { LOCAL_AWS_ENVIRONMENT } from '../../scripts/local-dynamodb.ts';
import { TEST_AUTH_ENV } from '../helpers/auth.ts';

/**
 * What a function's cold start loads, seen in bundles built as serverless.yml builds them
 * (bench/build.ts's ESBUILD_OPTIONS, which the bench checks against the packaged artifacts): no
 * AWS SDK at all (lib/aws/ speaks to DynamoDB and Secrets Manager; tests/e2e/package.test.ts checks
 * every artifact), no undici until PayHere is called, and only libraries the bench's dependency
 * floor imports as the function does. A read, a money route and the notification receiver.
 */
const FUNCTIONS = ['listSubscriptions', 'charge', 'notify'];
/** What the functions read at start-up, pointing nowhere: nothing here is called. */
const FUNCTION_ENV = {
  ...LOCAL_AWS_ENVIRONMENT,
  ...TEST_AUTH_ENV,
  GATEWAY_BASE_URL: 'http://127.0.0.1:9',
  GATEWAY_APP_ID: 'app',
  GATEWAY_APP_SECRET: 'secret',
  GATEWAY_MERCHANT_ID: 'merchant',
  GATEWAY_MERCHANT_SECRET: 'merchant-secret',
  IDEMPOTENCY_TABLE: 'idempotency',
  LEDGER_TABLE: 'ledger',
  STATE_TABLE: 'state',
  DYNAMODB_ENDPOINT: 'http://127.0.0.1:9',
};
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
/** The files each bundle holds, as esbuild named them. */
const inputs = new Map<string, string[]>();
/** How many bytes of each bundle each file became. */
const outputBytes = new Map<string, Record<string, number>>();

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
    inputs.set(name, Object.keys(result.metafile.inputs));
    const output = Object.values(result.metafile.outputs).find((candidate) => candidate.entryPoint);
    outputBytes.set(
      name,
      Object.fromEntries(
        Object.entries(output!.inputs).map(([file, { bytesInOutput }]) => [file, bytesInOutput]),
      ),
    );
  }
}, 120_000);

afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

describe("a function's cold start", () => {
  it("holds no AWS SDK client, only AWS's signer (lib/aws/sign.ts) and the few parts of @smithy/core it uses", () => {
    for (const [name, packages] of built) {
      expect(
        [...packages].filter((pkg) => pkg.startsWith('@aws-sdk/') || pkg.startsWith('@smithy/')).sort(),
        name,
      ).toEqual(['@smithy/core', '@smithy/signature-v4', '@smithy/types']);
      // Of what esbuild resolved, only its ES modules' signing parts are left: no client, retry,
      // endpoint or schema code.
      expect(
        Object.entries(outputBytes.get(name)!)
          .filter(([file, bytes]) => bytes > 0 && file.includes('node_modules/@smithy/'))
          .map(([file]) => file)
          .filter((file) => !SIGNER_FILES.test(file)),
        name,
      ).toEqual([]);
    }
  });

  it("holds none of the bench's naive intermediary (bench/naive/): no express, serverless-http or axios", () => {
    for (const [name, packages] of built) {
      expect(
        [...packages].filter((pkg) => ['express', 'serverless-http', 'axios'].includes(pkg)),
        name,
      ).toEqual([]);
    }
  });

  it("holds undici's Pool, not its main entry (fetch, WebSocket, caches, mocks) nor its stream-answering request", () => {
    for (const [name, files] of inputs) {
      const undici = files.filter((file) => file.includes('node_modules/undici/'));
      expect(undici, name).toContain('node_modules/undici/lib/dispatcher/pool.js');
      const mainEntryOnly = [
        'node_modules/undici/index.js',
        'node_modules/undici/lib/api/',
        'node_modules/undici/lib/web/fetch/index.js',
        'node_modules/undici/lib/web/websocket/',
        'node_modules/undici/lib/web/cache/',
        'node_modules/undici/lib/web/eventsource/',
        'node_modules/undici/lib/mock/',
      ];
      expect(
        undici.filter((file) => mainEntryOnly.some((part) => file.startsWith(part))),
        name,
      ).toEqual([]);
    }
  });

  it("leaves out undici's SIMD parser, FormData bodies and HTTP/2, which the transport never runs", () => {
    for (const [name, bytes] of outputBytes) {
      // A module that only throws stands in for each (plugins/esbuild.cjs).
      for (const file of LEFT_OUT) expect(bytes[file], `${name}: ${file}`).toBeLessThan(300);
      expect(bytes['node_modules/undici/lib/llhttp/llhttp-wasm.js'], name).toBeGreaterThan(50_000);
      const fetchParts = Object.keys(bytes).filter(
        (file) => file.startsWith('node_modules/undici/lib/web/') && !LEFT_OUT.includes(file),
      );
      expect(fetchParts, name).toEqual([]);
    }
  });

  it('gives middy a stand-in for node:stream/web, which only its streamed responses use', async () => {
    for (const [name, files] of inputs) {
      expect(files, name).toContain(MIDDY_STREAM_WEB);
      const source = await readFile(path.join(out, `${name}.mjs`), 'utf8');
      expect(source, name).not.toContain('node:stream/web');
    }
  });

  it('calls over the trimmed undici: the portable parser reads the answer, and no HTTP/2 is loaded', async () => {
    // Prepare: the transport bundled as the functions are, and a loopback gateway that echoes.
    const bundled = path.join(out, 'transport.mjs');
    await build({
      ...ESBUILD_OPTIONS,
      stdin: {
        contents: [
          "import { Transport } from './lib/gateway/transport.ts';",
          'const transport = new Transport(process.env.GATEWAY_URL, { connectTimeoutMs: 2_000 });',
          'const answer = await transport.send({',
          "  method: 'POST', path: '/merchant/v1/payment/search', body: '{\"order_id\":\"o-1\"}',",
          "  headers: { 'content-type': 'application/json' }, deadline: Date.now() + 5_000,",
          '});',
          'await transport.close();',
          "const http2 = process.moduleLoadList.includes('NativeModule http2');",
          'process.stdout.write(JSON.stringify({ status: answer.status, body: answer.body, http2 }));',
        ].join('\n'),
        resolveDir: ROOT,
        sourcefile: 'transport-probe.ts',
        loader: 'ts',
      },
      outfile: bundled,
      logLevel: 'silent',
    });
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      request.on('end', () => {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ status: 1, path: request.url, echoed: JSON.parse(body) }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;

    try {
      // Act
      const { stdout } = await promisify(execFile)(process.execPath, [bundled], {
        env: { ...process.env, GATEWAY_URL: `http://127.0.0.1:${port}` },
      });

      // Assess
      expect(JSON.parse(stdout)).toEqual({
        status: 200,
        body: JSON.stringify({ status: 1, path: '/merchant/v1/payment/search', echoed: { order_id: 'o-1' } }),
        http2: false,
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 30_000);

  it.each(FUNCTIONS)(
    "loads no undici, neither the npm package nor Node's own copy behind fetch, until it calls PayHere (%s)",
    async (name) => {
      // Prepare: a fresh process with the environment the function reads at start-up, which
      // imports the bundle as Lambda's init does. Either undici, once evaluated, installs its
      // global dispatcher under this symbol.
      const probe = [
        `await import(${JSON.stringify(pathToFileURL(path.join(out, `${name}.mjs`)).href)});`,
        "process.stdout.write(String(globalThis[Symbol.for('undici.globalDispatcher.2')] !== undefined));",
      ].join('\n');
      const env = { ...process.env, ...FUNCTION_ENV };

      // Act
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', probe], {
        env,
      });

      // Assess: the control, that the symbol does tell, is the import of undici itself.
      expect(stdout).toBe('false');
      const control = await promisify(execFile)(process.execPath, [
        '-e',
        "require('undici'); process.stdout.write(String(globalThis[Symbol.for('undici.globalDispatcher.2')] !== undefined))",
      ]);
      expect(control.stdout).toBe('true');
    },
    30_000,
  );

  it.each(FUNCTIONS)(
    'loads no web streams as it is imported (%s)',
    async (name) => {
      // Prepare: a fresh process with the environment the function reads at start-up.
      const probe = [
        `await import(${JSON.stringify(pathToFileURL(path.join(out, `${name}.mjs`)).href)});`,
        "process.stdout.write(JSON.stringify(process.moduleLoadList.filter((m) => m.includes('webstreams'))));",
      ].join('\n');

      // Act
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', probe], {
        env: { ...process.env, ...FUNCTION_ENV },
      });

      // Assess
      expect(JSON.parse(stdout)).toEqual([]);
    },
    30_000,
  );

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
