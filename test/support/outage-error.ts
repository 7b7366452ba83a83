// The error the database driver really throws when its database cannot be reached, for tests that inject an
// outage into every operation (TestPlatform.breakDatabase), where stopping the database for each would be too
// slow: what Prisma throws for a query to a PostgreSQL port nothing listens on, or for a write to a SQLite file
// another connection holds the write lock of (SQLITE_BUSY at once, with no busy timeout).
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import Sqlite from 'better-sqlite3';
import { expect } from 'vitest';
import { PrismaClient as PgClient } from '../../generated/prisma/postgresql/client/client.ts';
import { PrismaClient as SqliteClient } from '../../generated/prisma/sqlite/client/client.ts';
import { openDatabase } from '../../server/db/index.ts';
import { expectError } from './expect.ts';
import type { TestPlatform } from './platform.ts';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function driverOutageError(provider: 'sqlite' | 'postgresql'): Promise<unknown> {
  if (provider === 'postgresql') {
    const client = new PgClient({ adapter: new PrismaPg({ host: '127.0.0.1', port: await closedPort(), user: 'postgres', database: 'postgres' }) });
    try {
      await client.organization.count();
    } catch (err) {
      return err;
    } finally {
      await client.$disconnect().catch(() => {});
    }
    throw new Error('a query to a closed port succeeded');
  }
  const dir = mkdtempSync(join(tmpdir(), 'outage-error-'));
  const file = join(dir, 'locked.db');
  try {
    await (await openDatabase(`file:${file}`)).close();
    const holder = new Sqlite(file);
    holder.exec('BEGIN IMMEDIATE');
    const client = new SqliteClient({ adapter: new PrismaBetterSqlite3({ url: file, timeout: 0 }) });
    try {
      await client.organization.create({ data: { id: 'org_locked', name: 'locked', createdAt: 0n } });
    } catch (err) {
      return err;
    } finally {
      await client.$disconnect().catch(() => {});
      holder.exec('ROLLBACK');
      holder.close();
    }
    throw new Error('a write to a locked SQLite file succeeded');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A key-less GET of `path` (a signed URL this server handed out) while the database fails: the generic 500 for an
 * unexpected failure, 503 `database_unavailable` with `Retry-After` for an outage, and 200 once it is back.
 */
export async function expectSignedReadFailures(t: TestPlatform, path: string): Promise<void> {
  let restore = t.breakDatabase();
  try {
    expectError(await t.http.get(path), 500, { code: 'internal_error', type: 'server_error', param: null });
  } finally {
    restore();
  }
  restore = t.breakDatabase(await driverOutageError(t.services.db.provider));
  try {
    const res = await t.http.get(path);
    expectError(res, 503, { code: 'database_unavailable', type: 'server_error', param: null });
    expect(res.headers['retry-after']).toBe('1');
  } finally {
    restore();
  }
  expect((await t.http.get(path)).status).toBe(200);
}
