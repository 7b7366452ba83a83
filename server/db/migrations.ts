// biome-ignore-all lint/suspicious/noExplicitAny: the schema engine's wasm runtime and its raw rows come untyped.
// Migrations without the native schema engine: the WebAssembly build of Prisma's schema engine, driven through
// the same driver adapters the app queries with. `deploy` applies prisma/migrations/<provider>/ and records them in
// the standard `_prisma_migrations` table (what `prisma migrate deploy` writes); a second call applies nothing.
//
// `create` writes the next migration for both providers as the diff between two data models: the model as of the
// last migration (prisma/migrations/models.applied.prisma, updated by `create`) and prisma/models/*.prisma. That needs
// no database at all, unlike Prisma's replay of the history on a shadow database, which the driver adapters only
// manage with several workarounds (SQLite: a multi-statement migration fails to replay; PostgreSQL: the "shadow"
// database is the one the URL names, `"char"` columns cannot be introspected, and the shadow database is left behind).
import { createHash, randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import type { MigrationList, SchemaEngine } from '@prisma/schema-engine-wasm';
import * as runtime from '@prisma/schema-engine-wasm/schema_engine_bg';
import Database from 'better-sqlite3';
import { PROVIDERS, type Provider, root } from '../core/paths.ts';
import { pgConfig, sqliteFile } from './urls.ts';

const migrationsRoot = join(root, 'prisma/migrations');
const appliedModelPath = join(migrationsRoot, 'models.applied.prisma');
const filters = { externalTables: [], externalEnums: [] };

let engineClass: typeof SchemaEngine | undefined;
function loadEngine(): typeof SchemaEngine {
  if (!engineClass) {
    // Where the engine puts a panic's message before it throws (Prisma's own loader sets this up; without it a panic
    // is a TypeError that hides the message).
    (globalThis as any).PRISMA_WASM_PANIC_REGISTRY ??= {
      set_message: (message: string) => {
        (globalThis as any).PRISMA_WASM_PANIC_MESSAGE = message;
      },
    };
    const wasmPath = join(dirname(createRequire(import.meta.url).resolve('@prisma/schema-engine-wasm')), 'schema_engine_bg.wasm');
    const instance = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(wasmPath)), {
      './schema_engine_bg.js': runtime as unknown as WebAssembly.ModuleImports,
    });
    (runtime as any).__wbg_set_wasm(instance.exports);
    (instance.exports as any).__wbindgen_start();
    engineClass = (runtime as any).SchemaEngine as typeof SchemaEngine;
  }
  return engineClass;
}

function migrationsList(provider: Provider): MigrationList {
  const baseDir = join(migrationsRoot, provider);
  const lockPath = join(baseDir, 'migration_lock.toml');
  const dirs = existsSync(baseDir)
    ? readdirSync(baseDir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name)
        .sort()
    : [];
  return {
    baseDir,
    lockfile: { path: lockPath, content: existsSync(lockPath) ? readFileSync(lockPath, 'utf8') : null },
    shadowDbInitScript: '',
    // The folder's name, not its path: it is what `_prisma_migrations.migration_name` records.
    migrationDirectories: dirs.map((name) => ({
      path: name,
      migrationFile: {
        path: 'migration.sql',
        content: { tag: 'ok', value: readFileSync(join(baseDir, name, 'migration.sql'), 'utf8') },
      },
    })),
  } as MigrationList;
}

/** Names of the migrations recorded as finished, read without the engine (which locks a SQLite file exclusively). */
async function appliedMigrations(provider: Provider, url: string): Promise<Set<string>> {
  const query = `SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`;
  try {
    if (provider === 'sqlite') {
      if (!existsSync(sqliteFile(url))) return new Set();
      const db = new Database(sqliteFile(url), { readonly: true, timeout: 10_000 });
      try {
        return new Set(
          db
            .prepare(query)
            .all()
            .map((r: any) => r.migration_name),
        );
      } finally {
        db.close();
      }
    }
    // Loaded only for PostgreSQL, as its adapter below.
    const { default: pg } = await import('pg');
    const client = new pg.Client(pgConfig(url));
    await client.connect();
    try {
      return new Set((await client.query(query)).rows.map((r) => r.migration_name));
    } finally {
      await client.end();
    }
  } catch {
    return new Set(); // no table yet: everything is pending
  }
}

/**
 * Applies every committed migration not yet applied; returns the names applied. Idempotent. When nothing is
 * pending the engine is not started at all: on SQLite it takes an exclusive lock, which would wait on (and time out
 * against) a server already running on the same file, e.g. when the CLI opens the database.
 */
export async function deploy(provider: Provider, url: string): Promise<string[]> {
  const list = migrationsList(provider);
  const applied = await appliedMigrations(provider, url);
  if (list.migrationDirectories.every((d) => applied.has(d.path))) return [];
  const base: SqlMigrationAwareDriverAdapterFactory =
    provider === 'sqlite'
      ? new PrismaBetterSqlite3({ url: sqliteFile(url), timeout: 10_000 })
      : new (await import('@prisma/adapter-pg')).PrismaPg(pgConfig(url));
  // engine.free() leaves the adapter's connections open (one holds the migration advisory lock on PostgreSQL):
  // track them and close them ourselves.
  const opened: SqlDriverAdapter[] = [];
  const tracked = Object.assign(Object.create(base), {
    connect: async () => {
      const adapter = await base.connect();
      opened.push(adapter);
      return adapter;
    },
  }) as SqlMigrationAwareDriverAdapterFactory;
  const engine = await loadEngine().new({ datamodels: undefined }, () => {}, bindMigrationAwareSqlAdapterFactory(tracked));
  try {
    const { appliedMigrationNames } = await engine.applyMigrations({ migrationsList: list, filters });
    return appliedMigrationNames;
  } finally {
    engine.free();
    await Promise.all(opened.map((a) => a.dispose().catch(() => {})));
  }
}

/**
 * A new SQLite database (its file absent) made as a copy of one migrated before: a fresh database is the same file
 * every time, and copying it spares each first start the schema engine and the migrations' writes (most of a start
 * on a fresh database, e.g. every test suite's throw-away one). The migrated file is kept in
 * node_modules/.cache/inference-platform/, named by a hash of the migrations, and made by the first start that needs
 * it (through `deploy`, as ever). The copy is put in place with a hard link, which fails if the file exists: a
 * database someone else made meanwhile is never replaced, and a process opening the file finds it whole. Answers
 * whether it made the file; any failure (a read-only cache) leaves the file to `deploy`.
 */
export async function placeMigratedSqlite(file: string): Promise<boolean> {
  if (existsSync(file)) return false;
  try {
    const list = migrationsList('sqlite');
    const hash = createHash('sha256').update(list.lockfile.content ?? '');
    for (const d of list.migrationDirectories) hash.update(`\0${d.path}\0${(d.migrationFile.content as { value: string }).value}`);
    const cache = join(root, 'node_modules/.cache/inference-platform');
    const template = join(cache, `sqlite-${hash.digest('hex').slice(0, 16)}.db`);
    if (!existsSync(template)) {
      mkdirSync(cache, { recursive: true });
      const making = `${template}.${randomUUID()}.tmp`;
      try {
        await deploy('sqlite', `file:${making}`);
        renameSync(making, template);
      } finally {
        rmSync(making, { force: true });
      }
    }
    mkdirSync(dirname(file), { recursive: true });
    const staged = `${file}.${randomUUID()}.tmp`;
    copyFileSync(template, staged);
    try {
      linkSync(staged, file);
      return true;
    } catch {
      return false; // made meanwhile by another process: theirs
    } finally {
      rmSync(staged, { force: true });
    }
  } catch {
    return false;
  }
}

/** The hand-written model: prisma/models/*.prisma, one file per area, in name order. */
export function readModel(): string {
  const dir = join(root, 'prisma/models');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.prisma'))
    .sort()
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('\n');
}

function datamodel(provider: Provider, model: string): string {
  return `datasource db {\n  provider = "${provider}"\n}\n\n${model}`;
}

/** The SQL that takes a database from the last migration's model to the current one; empty when they match. */
export async function pendingChanges(provider: Provider): Promise<string> {
  // Diffing two data models touches no database; the engine still wants an adapter of the provider (never connected).
  const adapter =
    provider === 'sqlite'
      ? new PrismaBetterSqlite3({ url: ':memory:' })
      : new (await import('@prisma/adapter-pg')).PrismaPg(pgConfig(process.env.MIGRATE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'));
  const engine = await loadEngine().new({ datamodels: undefined }, () => {}, bindMigrationAwareSqlAdapterFactory(adapter));
  const model = (content: string) => ({ tag: 'schemaDatamodel' as const, files: [{ path: 'schema.prisma', content: datamodel(provider, content) }] });
  try {
    const from = existsSync(appliedModelPath) ? model(readFileSync(appliedModelPath, 'utf8')) : { tag: 'empty' as const };
    const result = await engine.diff({ from, to: model(readModel()), script: true, exitCode: null, filters });
    const sql = (result.stdout ?? '').trim();
    return sql === '-- This is an empty migration.' ? '' : sql;
  } finally {
    engine.free();
  }
}

/** Writes the next migration for every provider; returns its folder name, or null when the model has not changed. */
export async function create(name: string): Promise<string | null> {
  const scripts = await Promise.all(PROVIDERS.map((p) => pendingChanges(p)));
  if (scripts.every((s) => s === '')) return null;
  const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
  const folder = `${stamp}_${name.replace(/[^a-z0-9_]+/gi, '_').toLowerCase()}`;
  PROVIDERS.forEach((provider, i) => {
    const dir = join(migrationsRoot, provider, folder);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'migration.sql'), `${scripts[i]}\n`);
    writeFileSync(
      join(migrationsRoot, provider, 'migration_lock.toml'),
      `# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "${provider}"\n`,
    );
  });
  writeFileSync(appliedModelPath, readModel());
  return folder;
}
