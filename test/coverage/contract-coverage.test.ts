// Runs after every other test file (test/vitest.config.ts), over the (operationId, status) pairs every test platform
// recorded: each response documented in the spec must have been seen at least once, so every documented status,
// errors included, is exercised by some test; and each status seen must be documented, so the contract tells the
// whole truth (errors from the validator and the body parser are not response-validated, so this is where drift
// would show). The 429 and 503 of the rate-limited operations are observed by test/rate-limits.test.ts, one row per
// operation in test/support/rate-limited.ts.
import { existsSync, readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { operations } from '../../generated/operations.ts';

const file = process.env.CONTRACT_OBSERVATIONS!;
const seen = new Set(existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
const documented = new Set(Object.entries(operations).flatMap(([id, op]) => op.statuses.map((s) => `${id} ${s}`)));

test('every documented (operation, status) was exercised by the suite', () => {
  expect(
    [...documented].filter((pair) => !seen.has(pair)),
    'documented responses no test observed',
  ).toEqual([]);
});

test('every (operation, status) the suite observed is documented', () => {
  expect(
    [...seen].filter((pair) => !documented.has(pair)),
    'responses the spec does not document',
  ).toEqual([]);
});
