import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { ONE_DATABASE, oneDatabaseSkipped } from './support/databases.ts';

// On PostgreSQL, the files whose facts do not depend on the database are left out (test/support/databases.ts says
// which and why; they ran on SQLite), and so is the contract-coverage check, which needs every file's observations.
const skipped = oneDatabaseSkipped();

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
    // A worker runs its test files one after another in one module graph: the server's modules are imported once per
    // worker, not once per file (a third of the suite's time). Test files share no state but what a module keeps per
    // database (caches keyed by it) or per process on purpose (the id factory: ids only ever rise).
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    globalSetup: ['test/support/global-setup.ts'],
    // The ten slowest files at the end (test/support/slowest-reporter.ts); CI also writes a machine-readable summary,
    // from which .ci/run prints its closing count.
    reporters: [
      'default',
      './test/support/slowest-reporter.ts',
      ...(process.env.VITEST_JSON ? [['json', { outputFile: process.env.VITEST_JSON }] as ['json', { outputFile: string }]] : []),
    ],
    projects: [
      {
        extends: true,
        test: {
          name: 'contract',
          include: ['test/**/*.test.ts'],
          exclude: ['test/coverage/**', ...(skipped ? Object.keys(ONE_DATABASE).map((f) => `test/${f}`) : [])],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'coverage', include: skipped ? [] : ['test/coverage/**/*.test.ts'], sequence: { groupOrder: 1 } },
      },
    ],
  },
});
