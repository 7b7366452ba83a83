// Runs after every other test file (vitest.config.ts): each response documented in the spec must have been seen
// at least once, so every documented status, errors included, is exercised by some test.
import { existsSync, readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { operations } from '../../generated/operations.ts';

test('every documented (operation, status) was exercised by the suite', () => {
  const file = process.env.CONTRACT_OBSERVATIONS!;
  const seen = new Set(existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
  const missing = Object.entries(operations).flatMap(([id, op]) =>
    op.statuses.map((s) => `${id} ${s}`).filter((pair) => !seen.has(pair)),
  );
  expect(missing, 'documented responses no test observed').toEqual([]);
});
