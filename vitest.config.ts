import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 60_000,
    pool: 'forks',
    restoreMocks: true,
    // The service's JSON log lines would drown the test report; tests that check logs capture them.
    env: { LOG_LEVEL: 'silent' },
  },
});
