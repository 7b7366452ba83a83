// Persistence: migrations applied idempotently at start (a new SQLite file as a copy of one migrated before, never
// over an existing file), the first-start bootstrap exactly once, runner work that
// survives a restart (on SQLite, or PostgreSQL with TEST_DATABASE_URL), and the SQLite write-safety guard against
// prisma/orm#29933 (always on SQLite): concurrent writers in this process and in another process, with every row
// counted, a read connection that cannot write, and WAL so a reader in another process never blocks a commit.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../server/core/clock.ts';
import { type Config, loadConfig } from '../server/core/config.ts';
import { hashKey } from '../server/core/identity.ts';
import { createLogger } from '../server/core/log.ts';
import { root } from '../server/core/paths.ts';
import { type Database, openDatabase, type Tx } from '../server/db/index.ts';
import { identityForHash } from '../server/db/keys.ts';
import { deploy, placeMigratedSqlite } from '../server/db/migrations.ts';
import { providerOf, sqliteFile } from '../server/db/urls.ts';
import { startPlatform } from '../server/platform.ts';
import { enqueue, type WorkHandler } from '../server/runner/runner.ts';
import { type ScratchDatabase, scratchDatabase, usingPostgres } from './support/database.ts';

const log = createLogger('warn', new Writable({ write: (_c, _e, done) => done() }));

function configFor(url: string): Config {
  const base = loadConfig({});
  return { ...base, port: 0, databaseUrl: url, logLevel: 'warn', runner: { ...base.runner, enabled: false } };
}

async function withScratch(provider: 'sqlite' | 'postgresql' | undefined, fn: (s: ScratchDatabase) => Promise<void>): Promise<void> {
  // Empty: the migrations' own tests start from nothing.
  const scratch = await scratchDatabase(provider, { empty: true });
  try {
    await fn(scratch);
  } finally {
    await scratch.drop();
  }
}

async function withDatabase(url: string, fn: (db: Database) => Promise<void>): Promise<void> {
  const db = await openDatabase(url);
  try {
    await fn(db);
  } finally {
    await db.close();
  }
}

const migrationNames = (provider: string) =>
  readdirSync(join(root, 'prisma/migrations', provider), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();

describe('migrations', () => {
  test('deploy applies every committed migration once, records it in _prisma_migrations, and a second deploy applies nothing', () =>
    withScratch(undefined, async ({ url }) => {
      const provider = providerOf(url);
      const names = migrationNames(provider);
      expect(names.length).toBeGreaterThan(0);
      expect(await deploy(provider, url)).toEqual(names);
      expect(await deploy(provider, url)).toEqual([]);
      // openDatabase deploys too: again nothing, and the schema is there.
      await withDatabase(url, async (db) => {
        const rows = await db.prisma.$queryRawUnsafe<any[]>(
          'SELECT "migration_name", "finished_at", "rolled_back_at", "logs" FROM "_prisma_migrations" ORDER BY "migration_name"',
        );
        expect(rows.map((r) => r.migration_name)).toEqual(names);
        for (const r of rows) {
          expect(r.finished_at).not.toBeNull();
          expect(r.rolled_back_at).toBeNull();
        }
        expect(await db.prisma.workItem.count()).toBe(0);
      });
      expect(await deploy(provider, url)).toEqual([]);
    }));

  test('a new SQLite file is a copy of one migrated before: the same schema and records as the migrations write; an existing file is left alone', () =>
    withScratch('sqlite', async ({ url }) => {
      const schema = async (db: Database) => ({
        tables: await db.prisma.$queryRawUnsafe<any[]>(`SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name`),
        migrations: (await db.prisma.$queryRawUnsafe<any[]>('SELECT migration_name FROM _prisma_migrations ORDER BY migration_name')).map(
          (r) => r.migration_name,
        ),
      });
      const copied = sqliteFile(url);
      expect(await placeMigratedSqlite(copied)).toBe(true);
      // Placed once: the second call (and a second process) finds the file and leaves it.
      expect(await placeMigratedSqlite(copied)).toBe(false);
      const migrated = copied.replace(/\.db$/, '-engine.db');
      expect(await deploy('sqlite', `file:${migrated}`)).toEqual(migrationNames('sqlite'));
      let fromCopy: unknown;
      await withDatabase(url, async (db) => {
        fromCopy = await schema(db);
        expect(await db.prisma.workItem.count()).toBe(0);
      });
      await withDatabase(`file:${migrated}`, async (db) => expect(await schema(db)).toEqual(fromCopy));
      expect((fromCopy as { migrations: string[] }).migrations).toEqual(migrationNames('sqlite'));

      const existing = copied.replace(/\.db$/, '-existing.db');
      writeFileSync(existing, '');
      expect(await placeMigratedSqlite(existing)).toBe(false);
      expect(statSync(existing).size).toBe(0);
      // Two at once on one path: one places it, the other finds it there.
      const raced = copied.replace(/\.db$/, '-raced.db');
      expect((await Promise.all([placeMigratedSqlite(raced), placeMigratedSqlite(raced)])).sort()).toEqual([false, true]);
      expect(existsSync(raced)).toBe(true);
    }));

  test.skipIf(!usingPostgres)('two processes deploying at once on PostgreSQL: one applies, the other waits and applies nothing', () =>
    withScratch('postgresql', async ({ url }) => {
      const results = await Promise.all([deploy('postgresql', url), deploy('postgresql', url)]);
      expect(results.flat().sort()).toEqual(migrationNames('postgresql'));
      await withDatabase(url, async (db) => {
        const [{ n }] = await db.prisma.$queryRawUnsafe<any[]>('SELECT count(*)::int AS n FROM "_prisma_migrations"');
        expect(n).toBe(migrationNames('postgresql').length);
      });
    }),
  );
});

test.skipIf(usingPostgres)("SQLite's commit number moves with every commit, this process's or another's, and stays while nothing is committed", async () => {
  const scratch = await scratchDatabase();
  try {
    await withDatabase(scratch.url, async (db) => {
      const write = (on: Database) => on.write((tx) => tx.$executeRaw`INSERT INTO "ControlSetting" ("name", "value") VALUES (${`c-${Math.random()}`}, '1')`);
      const first = db.commits();
      expect(first).toEqual(expect.any(Number));
      await db.prisma.controlSetting.findMany(); // a read commits nothing
      expect(db.commits()).toBe(first);
      await write(db);
      const second = db.commits();
      expect(second).not.toBe(first);
      // Another connection's commit (another process's, as the CLI's or a second server's).
      await withDatabase(scratch.url, async (other) => void (await write(other)));
      expect(db.commits()).not.toBe(second);
    });
  } finally {
    await scratch.drop();
  }
});

describe('first start', () => {
  const counts = async (db: Database) => ({
    organizations: await db.prisma.organization.count(),
    projects: await db.prisma.project.count(),
    apiKeys: await db.prisma.apiKey.count(),
  });

  test('creates the default organization, project and key exactly once; a second start returns no new key', () =>
    withScratch(undefined, async ({ url }) => {
      // A minute between the two starts, as on a busy machine: longer than an unprinted key's grace.
      const clock = new ManualClock();
      const first = await startPlatform(configFor(url), { listen: false, log, clock });
      const key = first.firstKey;
      expect(key).toEqual(expect.any(String));
      const created = await counts(first.services.db);
      expect(created).toEqual({ organizations: 1, projects: 1, apiKeys: 1 });
      // Printed (as `npm start` records once it has written the key out): however long until the next start, it
      // prints none. An unrecorded key would be replaced after its grace, which is wall-clock time.
      await first.announced();
      await first.close();
      clock.advance(60_000);

      const second = await startPlatform(configFor(url), { listen: false, log, clock });
      try {
        expect(second.firstKey).toBeNull();
        expect(await counts(second.services.db)).toEqual(created);
        // The key printed on the first start still works.
        const identity = await identityForHash(second.services.db, hashKey(key!));
        expect(identity).toMatchObject({ projectSlug: 'default', projectName: 'Default Project', organizationName: 'Default Organization' });
      } finally {
        await second.close();
      }
    }));

  test.skipIf(!usingPostgres)('two instances starting at once on an empty PostgreSQL database bootstrap it once', () =>
    withScratch('postgresql', async ({ url }) => {
      const platforms = await Promise.all([1, 2].map(() => startPlatform(configFor(url), { listen: false, log })));
      try {
        expect(platforms.filter((p) => p.firstKey !== null)).toHaveLength(1);
        // The control key too: one start makes it, the other reads it (they raced into a duplicate insert).
        expect(platforms.filter((p) => p.controlKey !== null)).toHaveLength(1);
        expect(await counts(platforms[0].services.db)).toEqual({ organizations: 1, projects: 1, apiKeys: 1 });
      } finally {
        await Promise.all(platforms.map((p) => p.close()));
      }
    }),
  );
});

describe('restart', () => {
  // A three-step item: each step records which instance ran it, in the step's own transaction.
  const stepper = (instance: string, clock: ManualClock): WorkHandler => ({
    run: async (item) => {
      const step: number = item.payload.step;
      const apply = (tx: Tx) => enqueue(tx, clock, { kind: 'step-ran', subjectId: item.id, payload: { instance, step } }).then(() => {});
      return step < 2 ? { apply, againInMs: 1000, payload: { step: step + 1 } } : { apply };
    },
  });
  const stepsRan = async (db: Database, id: string) =>
    (await db.prisma.workItem.findMany({ where: { kind: 'step-ran', subjectId: id }, orderBy: { createdAt: 'asc' } })).map((r) => JSON.parse(r.payload));

  test('a multi-step item started by one instance is finished by the next one on the same database', () =>
    withScratch(undefined, async ({ url }) => {
      const clock1 = new ManualClock();
      const first = await startPlatform(configFor(url), { listen: false, log, clock: clock1 });
      first.services.runner.register('restart-probe', stepper('first', clock1));
      const id = await first.services.db.write((tx) => enqueue(tx, clock1, { kind: 'restart-probe', subjectId: 'probe', payload: { step: 0 } }));
      expect(await first.services.runner.drain()).toBe(1);
      await first.close(); // between two steps

      const clock2 = new ManualClock(clock1.now() + 500);
      const second = await startPlatform(configFor(url), { listen: false, log, clock: clock2 });
      try {
        second.services.runner.register('restart-probe', stepper('second', clock2));
        const db = second.services.db;
        expect(await db.prisma.workItem.findUniqueOrThrow({ where: { id } })).toMatchObject({ state: 'queued', payload: '{"step":1}' });
        expect(await second.services.runner.drain()).toBe(0); // step 1 is due 1000 ms after step 0
        clock2.advance(500);
        expect(await second.services.runner.drain()).toBe(1);
        clock2.advance(1000);
        expect(await second.services.runner.drain()).toBe(1);
        expect(await db.prisma.workItem.findUniqueOrThrow({ where: { id } })).toMatchObject({ state: 'done', attempt: 3 });
        expect(await stepsRan(db, id)).toEqual([
          { instance: 'first', step: 0 },
          { instance: 'second', step: 1 },
          { instance: 'second', step: 2 },
        ]);
      } finally {
        await second.close();
      }
    }));

  test('an instance that stops holding an item mid-step (as if it died) leaves it to the next one after the lease', () =>
    withScratch(undefined, async ({ url }) => {
      const config = configFor(url);
      const clock1 = new ManualClock();
      const first = await startPlatform(config, { listen: false, log, clock: clock1 });
      first.services.runner.register('restart-probe', stepper('first', clock1));
      const id = await first.services.db.write((tx) => enqueue(tx, clock1, { kind: 'restart-probe', subjectId: 'probe', payload: { step: 0 } }));
      await first.services.runner.drain(); // step 0
      clock1.advance(1000);
      const [held] = await first.services.runner.claim(1); // step 1 claimed, never finished
      expect(held).toMatchObject({ id, attempt: 2 });
      await first.close();

      const clock2 = new ManualClock(clock1.now());
      const second = await startPlatform(config, { listen: false, log, clock: clock2 });
      try {
        second.services.runner.register('restart-probe', stepper('second', clock2));
        const db = second.services.db;
        expect(await second.services.runner.drain()).toBe(0); // still leased
        clock2.advance(config.runner.leaseMs + 1);
        expect(await second.services.runner.drain()).toBe(1);
        clock2.advance(1000);
        expect(await second.services.runner.drain()).toBe(1);
        expect(await db.prisma.workItem.findUniqueOrThrow({ where: { id } })).toMatchObject({ state: 'done', attempt: 4 });
        expect(await stepsRan(db, id)).toEqual([
          { instance: 'first', step: 0 },
          { instance: 'second', step: 1 },
          { instance: 'second', step: 2 },
        ]);
      } finally {
        await second.close();
      }
    }));
});

describe('SQLite write safety (prisma/orm#29933)', () => {
  function spawnChild(args: string[], env: Record<string, string>) {
    const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const waitFor = async (text: string) => {
      while (!stdout.includes(text)) {
        if (child.exitCode !== null) throw new Error(`child exited (${child.exitCode}): ${stderr}`);
        await sleep(10);
      }
    };
    return { child, exited, waitFor, output: () => stdout, errors: () => stderr };
  }

  const insert = (db: Database, tag: string, i: number) =>
    db.write(async (tx) => {
      // A read before the write: the pattern that, with a deferred transaction, fails at once with SQLITE_BUSY_SNAPSHOT
      // when another process committed in between.
      await tx.organization.count({ where: { name: { startsWith: tag } } });
      await tx.organization.create({ data: { id: `org_${tag}_${i}`, name: `${tag} ${i}`, createdAt: BigInt(Date.now()) } });
    });
  const countTagged = (db: Database, tag: string) => db.prisma.organization.count({ where: { name: { startsWith: `${tag} ` } } });

  test(
    '500 concurrent writes here and 500 from another process into the same file at once: every row is there',
    () =>
      withScratch('sqlite', async ({ url }) => {
        let db = await openDatabase(url);
        try {
          const writer = spawnChild(['--import', 'tsx', 'test/support/sqlite-writer.ts'], { DATABASE_URL: url, COUNT: '500', TAG: 'child' });
          await writer.waitFor('ready');
          writer.child.stdin!.write('go\n');
          // Reads on the read connection go on all the time; they must neither block nor lose anything.
          let writing = true;
          const reads = (async () => {
            let n = 0;
            while (writing) {
              await countTagged(db, 'parent');
              n++;
              await sleep(1);
            }
            return n;
          })();
          const results = await Promise.allSettled(Array.from({ length: 500 }, (_, i) => insert(db, 'parent', i)));
          writing = false;
          expect(await reads).toBeGreaterThan(0);
          expect(await writer.exited, writer.errors()).toBe(0);
          const summary = JSON.parse(writer.output().trim().split('\n').at(-1)!);
          expect(summary, writer.output()).toMatchObject({ ok: 500, failed: 0 });
          const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => String(r.reason).slice(0, 300));
          expect(failures).toEqual([]);

          // The connection is still healthy afterwards: a later write is committed, not left in an abandoned transaction.
          await db.write((tx) => tx.organization.create({ data: { id: 'org_after', name: 'after 0', createdAt: BigInt(Date.now()) } }));
          expect(await countTagged(db, 'parent')).toBe(500);
        } finally {
          await db.close();
        }
        // Counted again through a fresh connection, after this process closed its own.
        db = await openDatabase(url);
        try {
          expect(await countTagged(db, 'parent')).toBe(500);
          expect(await countTagged(db, 'child')).toBe(500);
          expect(await countTagged(db, 'after')).toBe(1);
          expect(await db.prisma.organization.count()).toBe(1001);
        } finally {
          await db.close();
        }
      }),
    60_000,
  );

  test('the read connection is read-only, and sees what write() committed', () =>
    withScratch('sqlite', ({ url }) =>
      withDatabase(url, async (db) => {
        await expect(db.prisma.organization.create({ data: { id: 'org_ro', name: 'read-only', createdAt: BigInt(Date.now()) } })).rejects.toThrow(/readonly/i);
        await expect(db.prisma.$executeRawUnsafe(`DELETE FROM "WorkItem"`)).rejects.toThrow(/readonly/i);
        await db.write((tx) => tx.organization.create({ data: { id: 'org_rw', name: 'written', createdAt: BigInt(Date.now()) } }));
        expect(await db.prisma.organization.findUnique({ where: { id: 'org_rw' } })).toMatchObject({ name: 'written' });
        expect(await db.prisma.organization.count({ where: { id: 'org_ro' } })).toBe(0);
      }),
    ));

  test('the file is in WAL mode, so a long read in another process blocks no write here', () =>
    withScratch('sqlite', ({ url }) =>
      withDatabase(url, async (db) => {
        const [{ journal_mode }] = await db.prisma.$queryRawUnsafe<any[]>('PRAGMA journal_mode');
        expect(journal_mode).toBe('wal');
        // Another process (a backup, the CLI) holds a read transaction open until told to end it. Were the writes
        // blocked by it, they would never finish and the test would time out: no clock is read.
        const reader = spawnChild(
          [
            '-e',
            `const db = new (require('better-sqlite3'))(process.env.FILE);
             db.exec('BEGIN'); db.prepare('SELECT count(*) FROM "Organization"').get();
             console.log('holding');
             process.stdin.once('data', () => { db.exec('COMMIT'); db.close(); process.exit(0); });`,
          ],
          { FILE: url.replace(/^file:/, '') },
        );
        await reader.waitFor('holding');
        for (let i = 0; i < 20; i++) await insert(db, 'during', i);
        expect(reader.child.exitCode).toBeNull(); // the read was still open throughout
        reader.child.stdin!.write('done\n');
        expect(await countTagged(db, 'during')).toBe(20);
        expect(await reader.exited, reader.errors()).toBe(0);
      }),
    ));
});
