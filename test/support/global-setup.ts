// Once per `vitest run`: a fresh file in which every test platform records the (operationId, status) of each
// response it sends; test/coverage/ reads it after all the contract tests have run.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from '../../server/paths.ts';

export default function setup() {
  const dir = join(root, '.test-output');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'observed-responses.txt');
  writeFileSync(file, '');
  process.env.CONTRACT_OBSERVATIONS = file;
}
