import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 60_000,
    pool: 'forks',
    restoreMocks: true,
    // The service's JSON log lines and metrics would drown the test report; tests that check them
    // capture them (and turn metrics on).
    env: { LOG_LEVEL: 'silent', POWERTOOLS_METRICS_DISABLED: 'true' },
    // A local DynamoDB (dynalite) for the idempotency store, started once and closed at the end;
    // the report of documented answers no test reached.
    globalSetup: ['tests/setup/dynamodb.ts', 'tests/setup/contract-report.ts'],
    // Every answer a test file receives is held to openapi/openapi.json after the file.
    setupFiles: ['tests/setup/environment.ts', 'tests/setup/answers.ts'],
  },
});
