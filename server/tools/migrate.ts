// `npm run migrate:create -- <name>`: writes the next migration for SQLite and PostgreSQL from prisma/models/*.prisma.
// `npm run migrate:deploy [-- <database url>]`: applies the committed migrations (the server also does it at start).
// `npm run migrate:squash`: rewrites the whole history as one `init` migration (only before any release is deployed).
// `migrate.ts check`: fails when prisma/models/*.prisma has changes no migration covers (CI runs it).

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../core/config.ts';
import { PROVIDERS, root } from '../core/paths.ts';
import { create, deploy, pendingChanges } from '../db/migrations.ts';
import { providerOf } from '../db/urls.ts';

const [command, arg] = process.argv.slice(2);
if (command === 'create') {
  if (!arg) throw new Error('usage: npm run migrate:create -- <name>');
  const folder = await create(arg);
  console.log(folder ? `created migration ${folder}` : 'no schema changes');
} else if (command === 'deploy') {
  const url = arg ?? loadConfig().databaseUrl;
  const applied = await deploy(providerOf(url), url);
  console.log(applied.length ? `applied ${applied.join(', ')}` : 'nothing to apply');
} else if (command === 'squash') {
  // Until a release has been deployed anywhere, the history is one `init` migration, rewritten on every model change.
  rmSync(join(root, 'prisma/migrations'), { recursive: true, force: true });
  console.log(`created migration ${await create('init')}`);
} else if (command === 'check') {
  for (const provider of PROVIDERS) {
    const sql = await pendingChanges(provider);
    if (sql) {
      console.error(`prisma/models/*.prisma has changes without a migration (${provider}):\n${sql}\nRun: npm run migrate:create -- <name>`);
      process.exit(1);
    }
  }
  console.log('migrations match prisma/models/*.prisma');
} else {
  throw new Error('usage: migrate.ts create <name> | deploy [url] | squash | check');
}
// A pending timer of the PostgreSQL driver would keep a one-shot command alive.
process.exit(0);
