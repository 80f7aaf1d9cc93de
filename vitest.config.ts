import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import LongestFirst from './tests/setup/sequencer.ts';

/**
 * The unit tier (`npm run test:unit`): test files that start no server, no child process, no
 * browser and read no DynamoDB (tests/setup/unit.ts fails a test that tries). tests/unit/ and the
 * pure files of the other folders, which stay beside the area they test.
 */
const UNIT = [
  'tests/unit/**/*.test.ts',
  'tests/auth/{config,middleware,verified-cache}.test.ts',
  'tests/aws/sign.test.ts',
  'tests/budget/window-limiter.test.ts',
  'tests/client/client.test.ts',
  'tests/idempotency/{config,failure,fingerprint,key}.test.ts',
  'tests/notifications/signature.test.ts',
  'tests/openapi/contract.test.ts',
  'tests/reads/invalidation.test.ts',
  'tests/sandbox/units.test.ts',
  'tests/security/redaction.test.ts',
  'tests/webhooks/{endpoints,schedule,signature}.test.ts',
];

/**
 * Unit files that replace a module with vi.mock: they run isolated, since a module an earlier file
 * of the same worker already loaded would keep the real one.
 */
const MOCKING = ['tests/notifications/signature.test.ts'];

/** Integration files that replace a module with vi.mock, for the same reason. */
const INTEGRATION_MOCKING = ['tests/budget/shared-limiter.test.ts'];

/** What both tiers share. */
const common = {
  environment: 'node',
  testTimeout: 20_000,
  hookTimeout: 60_000,
  pool: 'forks',
  restoreMocks: true,
  // The service's JSON log lines and metrics would drown the test report; tests that check them
  // capture them (and turn metrics on).
  env: {
    LOG_LEVEL: 'silent',
    POWERTOOLS_METRICS_DISABLED: 'true',
    // The functions' bundles, made once per set of sources for every serverless-offline start,
    // packaging and local invoke of the run (plugins/bundle-cache.cjs).
    BUNDLE_CACHE_DIR: fileURLToPath(new URL('.esbuild-cache', import.meta.url)),
    // Node's own cache of compiled modules, for the processes the tests start (osls loads some
    // thousands of modules at each start; a serverless-offline worker compiles its bundle).
    NODE_COMPILE_CACHE: fileURLToPath(new URL('node_modules/.cache/node-compile', import.meta.url)),
  },
} as const;

export default defineConfig({
  test: {
    // One file more than the cores (vitest's default is one fewer, a single file at a time on two
    // cores): many files spend much of their time waiting on a server, a timeout or a child process.
    maxWorkers: availableParallelism() + 1,
    sequence: { sequencer: LongestFirst },
    // The report of documented answers no test reached, once for the whole run.
    globalSetup: ['tests/setup/contract-report.ts'],
    projects: [
      {
        test: {
          ...common,
          name: 'unit',
          include: UNIT,
          exclude: MOCKING,
          // Files of a worker share its module graph: a pure file needs no fresh one, and importing
          // the service's modules again for each of 40 files costs more than their tests. Whatever a
          // test changes of the process is put back after it.
          isolate: false,
          unstubEnvs: true,
          unstubGlobals: true,
          // Every answer a test file receives is held to openapi/openapi.json after the file.
          setupFiles: ['tests/setup/unit.ts', 'tests/setup/answers.ts'],
        },
      },
      {
        test: {
          ...common,
          name: 'unit-isolated',
          include: MOCKING,
          setupFiles: ['tests/setup/unit.ts', 'tests/setup/answers.ts'],
        },
      },
      {
        test: {
          ...common,
          name: 'integration',
          include: ['tests/**/*.test.ts'],
          exclude: [...UNIT, ...INTEGRATION_MOCKING],
          // A worker serves file after file: starting a process for each of 100 files cost more
          // than most of their tests. tests/setup/fresh-file.ts gives each file the environment and
          // the fresh service modules a process of its own would.
          isolate: false,
          // A local DynamoDB (dynalite) for the idempotency store, started once and closed at the end.
          globalSetup: ['tests/setup/dynamodb.ts'],
          setupFiles: ['tests/setup/fresh-file.ts', 'tests/setup/environment.ts', 'tests/setup/answers.ts'],
        },
      },
      {
        test: {
          ...common,
          name: 'integration-isolated',
          include: INTEGRATION_MOCKING,
          globalSetup: ['tests/setup/dynamodb.ts'],
          setupFiles: ['tests/setup/environment.ts', 'tests/setup/answers.ts'],
        },
      },
    ],
  },
});
