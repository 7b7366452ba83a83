import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Two groups, run in order: every contract test, then the contract-coverage check over what they observed.
// It lives in test/ (the top level holds only the project's parts); paths below are from the repository's root.
export default defineConfig({
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    environment: 'node',
    pool: 'forks',
    // Vitest's default on a 2-core machine is one worker (cores - 1), yet most test files spend their time waiting
    // (server processes starting, windows and leases passing): three at once keep both cores busy.
    maxWorkers: 3,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    globalSetup: ['test/support/global-setup.ts'],
    // CI also writes a machine-readable summary, from which .ci/run prints its closing count.
    reporters: process.env.VITEST_JSON ? ['default', ['json', { outputFile: process.env.VITEST_JSON }]] : ['default'],
    projects: [
      {
        extends: true,
        test: { name: 'contract', include: ['test/**/*.test.ts'], exclude: ['test/coverage/**'], sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: { name: 'coverage', include: ['test/coverage/**/*.test.ts'], sequence: { groupOrder: 1 } },
      },
    ],
  },
});
