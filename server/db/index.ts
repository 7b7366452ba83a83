// The one way into the database. SQLite by default, PostgreSQL when the URL names one; migrations are applied on open.
//
// SQLite guards against prisma/orm#29933 (a SQLITE_BUSY can silently lose the adapter's writes) and against the
// adapter's one connection being shared: statements issued outside a transaction run inside whatever transaction
// is open on that connection, and are rolled back with it. So on SQLite:
// - every write goes through `write()`, which serializes write transactions in this process (a mutex) on one
//   writer connection, with WAL and a busy timeout for other processes (the CLI) writing the same file, and takes
//   the file's write lock at the start of each transaction (see TAKE_WRITE_LOCK);
// - reads use a second, read-only connection, which under WAL sees committed data only and cannot write.
// On PostgreSQL both are the same pool and `write()` is an ordinary interactive transaction.

import { constants, statSync } from 'node:fs';
import { access, statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { Mutex } from 'async-mutex';
import BetterSqlite3 from 'better-sqlite3';
import { Prisma, PrismaClient as SqliteClient } from '../../generated/prisma/sqlite/client/client.ts';
import type { Provider } from '../core/paths.ts';
import { deploy, placeMigratedSqlite } from './migrations.ts';
import { DatabaseOutage } from './outage.ts';
import { preflight } from './preflight.ts';
import { pgConfig, providerOf, sqliteFile } from './urls.ts';

// The two generated clients have the same models but types that do not unify; the app codes against one of them.
export type Db = InstanceType<typeof SqliteClient>;
export type Tx = Prisma.TransactionClient;
export { insertRows, quoted } from './rows.ts';
export { Prisma };

export interface Database {
  provider: Provider;
  url: string;
  /** For reads. On SQLite a read-only connection. */
  prisma: Db;
  /** Runs `fn` in a write transaction; serialized within the process on SQLite. */
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * Runs `fn`, which issues ONE write statement (atomic on its own): on PostgreSQL outside any transaction (two
   * round trips fewer than `write`), on SQLite as `write` does (the one writer connection, behind its mutex).
   */
  writeStatement<T>(fn: (client: Tx) => Promise<T>): Promise<T>;
  /**
   * Whether the database can serve reads and writes now: null if so, else why not, in words that name no server
   * path (the health check shows them to anyone).
   */
  health(): Promise<string | null>;
  /**
   * A number that moves whenever any connection of any process commits to the database, read without a query
   * through Prisma (SQLite's `PRAGMA data_version` on a read-only connection of its own: microseconds, where a read
   * through Prisma is about half a millisecond of CPU); undefined where there is none (PostgreSQL) or it cannot be
   * read. A poller that sees the number it saw last knows nothing was committed since, and need not read.
   */
  commits(): number | undefined;
  close(): Promise<void>;
}

/**
 * Holds, until `tx` ends, the lock that lets one start at a time make what every start makes sure of (several server
 * processes may start at once on PostgreSQL); SQLite writes are serialized already.
 */
export async function startLock(db: Database, tx: Tx): Promise<void> {
  if (db.provider === 'postgresql') await tx.$executeRawUnsafe('SELECT pg_advisory_xact_lock(727073)');
}

/**
 * Holds, until `tx` ends, a lock named by `key`, for a check-then-write no unique index can guard (a capacity shared
 * by many rows, a name unique among few): PostgreSQL transactions of several processes otherwise interleave; SQLite
 * writes are serialized already.
 */
export async function keyLock(db: Database, tx: Tx, key: string): Promise<void> {
  if (db.provider === 'postgresql') await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${key}))`;
}

const SQLITE_BUSY_TIMEOUT_MS = 10_000;
// The adapter opens transactions with a deferred BEGIN, which takes the file's write lock only at the first write. A
// transaction that reads first and then writes after another process (the CLI) committed cannot upgrade its stale
// snapshot: SQLite answers SQLITE_BUSY_SNAPSHOT at once, without waiting out the busy timeout, and the write fails.
// A no-op write as the first statement takes the write lock up front (waiting for it like BEGIN IMMEDIATE would),
// so every write transaction sees the latest data and never has to upgrade.
const TAKE_WRITE_LOCK = 'DELETE FROM "_prisma_migrations" WHERE 0';
// Interactive transactions are short; the defaults (2 s to start, 5 s to finish) are too tight for a loaded CI box.
const TX_OPTIONS = { maxWait: 10_000, timeout: 30_000 };

export async function openDatabase(url: string, options: { migrate?: boolean } = {}): Promise<Database> {
  const provider = providerOf(url);
  if (provider === 'sqlite' && options.migrate !== false) await placeMigratedSqlite(sqliteFile(url));
  await preflight(provider, url);
  if (options.migrate !== false) await deploy(provider, url);

  if (provider === 'postgresql') {
    // PostgreSQL's client and driver are loaded only for it: on SQLite (the default) they were a tenth of a start.
    const [{ PrismaClient: PgClient }, { PrismaPg }] = await Promise.all([
      import('../../generated/prisma/postgresql/client/client.ts'),
      import('@prisma/adapter-pg'),
    ]);
    // A server that does not answer (a cut network rather than a stopped server, which refuses at once) fails a
    // connection within 5 s, so a request answers 503 rather than waiting for the operating system to give up.
    const prisma = new PgClient({ adapter: new PrismaPg({ ...pgConfig(url), max: 10, connectionTimeoutMillis: 5_000 }) }) as unknown as Db;
    await prisma.$connect();
    const database: Database = {
      provider,
      url,
      prisma,
      write: (fn) => prisma.$transaction(fn, TX_OPTIONS),
      writeStatement: (fn) => fn(prisma as unknown as Tx),
      health: async () => {
        try {
          await database.prisma.$queryRawUnsafe('SELECT 1');
          return null;
        } catch {
          return 'the PostgreSQL server does not answer';
        }
      },
      commits: () => undefined,
      close: () => prisma.$disconnect(),
    };
    return database;
  }

  const file = sqliteFile(url);
  const writer = new SqliteClient({ adapter: new PrismaBetterSqlite3({ url: file, timeout: SQLITE_BUSY_TIMEOUT_MS }) });
  // Under WAL a reader never blocks a COMMIT, so a COMMIT cannot fail with SQLITE_BUSY (the failure #29933 turns
  // into lost writes). Refuse to run without it rather than silently fall back to the rollback journal.
  const [{ journal_mode }] = await writer.$queryRawUnsafe<{ journal_mode: string }[]>('PRAGMA journal_mode = WAL');
  if (journal_mode !== 'wal') throw new Error(`SQLite database ${file} cannot use WAL (journal_mode is ${journal_mode})`);
  await writer.$queryRawUnsafe('PRAGMA synchronous = NORMAL');
  const reader = new SqliteClient({
    adapter: new PrismaBetterSqlite3({ url: file, readonly: true, timeout: SQLITE_BUSY_TIMEOUT_MS }),
  });
  const mutex = new Mutex();
  // The open connection writes to the file it opened, wherever that goes: a file moved or deleted under the server
  // would take acknowledged writes with it (lost at the next start). So a write first checks that the file at the
  // path is still the one open, and is refused as an outage otherwise.
  const opened = statSync(file);
  const moved = () => {
    try {
      const now = statSync(file);
      return now.ino !== opened.ino || now.dev !== opened.dev;
    } catch {
      return true;
    }
  };
  const write: Database['write'] = (fn) =>
    mutex.runExclusive(() => {
      if (moved()) throw new DatabaseOutage('the SQLite database file is no longer at its path');
      return writer.$transaction(async (tx) => {
        await tx.$executeRawUnsafe(TAKE_WRITE_LOCK);
        return fn(tx);
      }, TX_OPTIONS);
    });
  // The open connections may go on writing a file that has become unwritable, but the next start (and the CLI)
  // cannot open it, and SQLite may need to create its journal files in the folder: either is a database that will
  // not serve, which the health check says now rather than at the next start.
  const health = async (): Promise<string | null> => {
    try {
      await database.prisma.$queryRawUnsafe('SELECT 1');
    } catch {
      return 'the SQLite database file cannot be read';
    }
    if (moved()) return 'the SQLite database file is no longer at its path';
    for (const [path, what] of [
      [file, 'file'],
      [dirname(file), "file's folder"],
    ]) {
      try {
        await access(path, constants.W_OK);
      } catch (err) {
        return `the SQLite database ${what} is not writable (${(err as NodeJS.ErrnoException).code})`;
      }
    }
    const space = await statfs(dirname(file));
    if (space.bavail === 0) return 'the disk holding the SQLite database is full';
    return null;
  };
  // Never writes, so every commit (this process's writer's included) is another connection's: data_version moves.
  // Opened by the first call: a process that never polls (the CLI, CONTROL_API=off) opens no third connection.
  let watcher: BetterSqlite3.Database | undefined;
  const commits = () => {
    try {
      watcher ??= new BetterSqlite3(file, { readonly: true, fileMustExist: true });
      return watcher.pragma('data_version', { simple: true }) as number;
    } catch {
      return undefined;
    }
  };
  const database: Database = {
    provider,
    url,
    prisma: reader,
    write,
    writeStatement: write,
    health,
    commits,
    close: async () => {
      await mutex.waitForUnlock();
      watcher?.close();
      await Promise.all([reader.$disconnect(), writer.$disconnect()]);
    },
  };
  return database;
}
