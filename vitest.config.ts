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
    // A local DynamoDB (dynalite) for the idempotency store, started once and closed at the end.
    globalSetup: ['tests/setup/dynamodb.ts'],
    setupFiles: ['tests/setup/environment.ts'],
  },
});
