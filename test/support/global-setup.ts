// Once per `vitest run`: a fresh file in which every test platform records the (operationId, status) of each
// response it sends, which test/coverage/ reads after all the contract tests have run; and on PostgreSQL a database
// migrated once, which every test database copies. Each project of the config runs this setup: what it makes is made
// once (two at once would run two schema engines over the one WebAssembly runtime the process loads) and removed by
// the last teardown. Also the checkout's start copy of the server (server/launch.js), built here if it is not current,
// so that the server processes the tests start (as `npm start` and the bin do) never build it side by side.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from '../../server/core/paths.ts';
import { ensureBuilt } from '../../server/launch.js';
import { migratedTemplate } from './database.ts';

interface Made {
  file: string;
  template: Awaited<ReturnType<typeof migratedTemplate>>;
  users: number;
}
const shared = globalThis as { __testRun?: Promise<Made> };

async function make(): Promise<Made> {
  const dir = join(root, '.test-output');
  mkdirSync(dir, { recursive: true });
  // One file per run, so that runs side by side (or a run while another is still going) do not mix.
  const file = join(dir, `observed-responses-${process.pid}.txt`);
  writeFileSync(file, '');
  await ensureBuilt();
  return { file, template: await migratedTemplate(), users: 0 };
}

export default async function setup() {
  shared.__testRun ??= make();
  const made = await shared.__testRun;
  made.users++;
  process.env.CONTRACT_OBSERVATIONS = made.file;
  if (made.template) process.env.TEST_PG_TEMPLATE = made.template.name;
  return async () => {
    if (--made.users > 0) return;
    rmSync(made.file, { force: true });
    await made.template?.drop();
  };
}
