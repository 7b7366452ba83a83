// Once per `vitest run`: a fresh file in which every test platform records the (operationId, status) of each
// response it sends; test/coverage/ reads it after all the contract tests have run.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from '../../server/core/paths.ts';

export default function setup() {
  const dir = join(root, '.test-output');
  mkdirSync(dir, { recursive: true });
  // One file per run, so that runs side by side (or a run while another is still going) do not mix.
  const file = join(dir, `observed-responses-${process.pid}.txt`);
  writeFileSync(file, '');
  process.env.CONTRACT_OBSERVATIONS = file;
  return () => rmSync(file, { force: true });
}
