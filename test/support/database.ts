// A fresh database for each test platform: a SQLite file in the temp folder (the server makes it a copy of one migrated
// once: server/db/migrations.ts), or, when TEST_DATABASE_URL names a PostgreSQL server, a new database on it, copied
// from a template migrated once per test run (the global setup makes it: TEST_PG_TEMPLATE), and dropped on cleanup.

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pgConfig } from '../../server/db/urls.ts';

export const TEST_PG_URL = process.env.TEST_DATABASE_URL;
export const usingPostgres = !!TEST_PG_URL && /^postgres/.test(TEST_PG_URL);

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** `empty`: a PostgreSQL database with nothing in it (not a copy of the migrated template), for the migrations' own tests. */
export async function scratchDatabase(
  provider: 'sqlite' | 'postgresql' = usingPostgres ? 'postgresql' : 'sqlite',
  options: { empty?: boolean } = {},
): Promise<ScratchDatabase> {
  if (provider === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'platform-test-'));
    return { url: `file:${join(dir, 'test.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (!TEST_PG_URL) throw new Error('TEST_DATABASE_URL is not set');
  const name = `t_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = new pg.Client(pgConfig(TEST_PG_URL));
  await admin.connect();
  const template = options.empty ? undefined : process.env.TEST_PG_TEMPLATE;
  await admin.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`);
  await admin.end();
  const url = new URL(TEST_PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client(pgConfig(TEST_PG_URL));
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A PostgreSQL database migrated once, which each scratch database copies (CREATE DATABASE ... TEMPLATE); dropped by `drop`. */
export async function migratedTemplate(): Promise<{ name: string; drop(): Promise<void> } | undefined> {
  if (!usingPostgres) return undefined;
  const scratch = await scratchDatabase('postgresql', { empty: true });
  const { deploy } = await import('../../server/db/migrations.ts');
  await deploy('postgresql', scratch.url);
  return { name: new URL(scratch.url).pathname.slice(1), drop: scratch.drop };
}
