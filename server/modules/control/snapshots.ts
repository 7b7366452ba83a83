// Named snapshots (the Control tag): the whole platform's rows, every table read generically through the Prisma
// models list (as reset.ts deletes them), and the stored bytes under DATA_DIR, kept as one ControlSnapshot row so
// that every process on the database sees them. A restore replaces every table's rows in one transaction, then
// swaps the stored bytes in (staged beforehand, so the swap after the commit is renames).
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Prisma } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant, iso } from '../../core/clock.ts';
import { apiError } from '../../core/errors.ts';
import { type Database, insertRows, quoted as q, type Tx } from '../../db/index.ts';
import type { Context } from '../types.ts';
import type { ControlPlane } from './plane.ts';
import { filled, storeKinds } from './reset.ts';

type Model = (typeof Prisma.ModelName)[keyof typeof Prisma.ModelName];
type Row = Record<string, unknown>;
interface Table {
  findMany(args?: unknown): Promise<Row[]>;
}
// Not platform state: the server's own keys (the control key must go on working), the snapshots themselves, and the
// control plane's own state (its rules, journal, settings and processes).
const KEPT: Model[] = ['ServerKey', 'ControlSnapshot', 'ControlRule', 'ControlJournalEntry', 'ControlSetting', 'ControlProcess'];
// The only foreign keys (prisma/models/accounts.prisma): inserted parents first, deleted children first.
const PARENTS: Model[] = ['Organization', 'Project', 'ApiKey'];
const TABLES = [...PARENTS, ...(Object.values(Prisma.ModelName) as Model[]).filter((m) => !PARENTS.includes(m) && !KEPT.includes(m))];
const table = (tx: Tx, model: Model) => (tx as unknown as Record<string, Table>)[model[0]!.toLowerCase() + model.slice(1)]!;

// Instants are BigInt, which JSON has no form for.
const toJson = (value: unknown) => JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? { $bigint: v.toString() } : v));
const fromJson = (text: string) => JSON.parse(text, (_k, v) => (v !== null && typeof v === 'object' && typeof v.$bigint === 'string' ? BigInt(v.$bigint) : v));

interface Contents {
  tables: Record<string, Row[]>;
  files: { path: string; size: number }[];
}

/** Every stored file under DATA_DIR's store folders (as reset.ts finds them), by path relative to DATA_DIR. */
function readStore(db: Database, dataDir: string) {
  const files: { path: string; content: Buffer }[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.push({ path: relative(dataDir, path).split(sep).join('/'), content: readFileSync(path) });
    }
  };
  for (const kind of storeKinds(db, dataDir)) walk(join(dataDir, kind));
  return files;
}

const snapshotWire = (s: { name: string; createdAt: bigint; rowCount: number; fileCount: number; fileBytes: bigint }) => ({
  object: 'snapshot' as const,
  name: s.name,
  created_at: iso(s.createdAt),
  rows: s.rowCount,
  files: s.fileCount,
  file_bytes: Number(s.fileBytes),
});

export async function createSnapshot({ db, clock, config, body }: Context<'createSnapshot'>) {
  const store = readStore(db, config.dataDir);
  const saved = await db.write(async (tx) => {
    // One view of every table, whatever commits meanwhile (SQLite's write transaction is one already).
    if (db.provider === 'postgresql') await tx.$executeRawUnsafe('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    const tables: Contents['tables'] = {};
    for (const model of TABLES) tables[model] = await table(tx, model).findMany();
    const contents: Contents = { tables, files: store.map((f) => ({ path: f.path, size: f.content.length })) };
    const data = {
      createdAt: instant(clock),
      rows: toJson(contents),
      files: Buffer.concat(store.map((f) => f.content)),
      rowCount: Object.values(tables).reduce((n, rows) => n + rows.length, 0),
      fileCount: store.length,
      fileBytes: BigInt(store.reduce((n, f) => n + f.content.length, 0)),
    };
    return tx.controlSnapshot.upsert({ where: { name: body.name }, create: { name: body.name, ...data }, update: data });
  });
  return snapshotWire(saved);
}

const unknown = (name: string) => apiError(404, 'not_found', `No snapshot named '${name}' was found.`, 'name');
const summary = { name: true, createdAt: true, rowCount: true, fileCount: true, fileBytes: true } as const;

export async function listSnapshots({ db }: Context<'listSnapshots'>) {
  const rows = await db.prisma.controlSnapshot.findMany({ select: summary, orderBy: [{ createdAt: 'asc' }, { name: 'asc' }] });
  return { object: 'list' as const, data: rows.map(snapshotWire) };
}

export async function deleteSnapshot({ db, params }: Context<'deleteSnapshot'>) {
  const { count } = await db.write((tx) => tx.controlSnapshot.deleteMany({ where: { name: params.name } }));
  if (count === 0) throw unknown(params.name);
  return { object: 'snapshot' as const, name: params.name, deleted: true as const };
}

export async function restoreSnapshot({ db, config, params }: Context<'restoreSnapshot'>, plane: ControlPlane) {
  const started = performance.now();
  const snapshot = await db.prisma.controlSnapshot.findUnique({ where: { name: params.name } });
  if (!snapshot) throw unknown(params.name);
  const contents = fromJson(snapshot.rows) as Contents;
  // The stored bytes are written beside the store first; only renames are left for after the commit.
  const stage = join(config.dataDir, 'tmp', `restore-${randomBytes(6).toString('hex')}`);
  let offset = 0;
  const made = new Set<string>();
  for (const f of contents.files) {
    const target = join(stage, ...f.path.split('/'));
    if (!made.has(dirname(target))) mkdirSync(dirname(target), { recursive: true });
    made.add(dirname(target));
    writeFileSync(target, Buffer.from(snapshot.files.subarray(offset, offset + f.size)));
    offset += f.size;
  }
  try {
    // Like a platform reset: the journal and fault rules go, and every process forgets the keys it had cached.
    const rows = await plane.change(
      async (tx) => {
        // Only the tables holding rows are emptied (most are empty in a test's platform), each by one plain DELETE.
        for (const model of (await filled(tx, TABLES)).reverse()) await tx.$executeRaw(Prisma.sql`DELETE FROM ${q(model)}`);
        let rows = 0;
        for (const model of TABLES) {
          const data = contents.tables[model] ?? [];
          if (data.length) rows += await insertRows(tx, model, data);
        }
        await tx.controlJournalEntry.deleteMany({});
        await tx.controlRule.deleteMany({ where: { kind: 'fault' } });
        return rows;
      },
      ['journal', 'keys'],
    );
    for (const kind of storeKinds(db, config.dataDir)) rmSync(join(config.dataDir, kind), { recursive: true, force: true });
    for (const kind of readdirSafe(stage)) renameSync(join(stage, kind), join(config.dataDir, kind));
    return {
      object: 'snapshot.restore' as const,
      name: snapshot.name,
      rows,
      files: contents.files.length,
      ms: Math.round((performance.now() - started) * 10) / 10,
    };
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

const readdirSafe = (dir: string) => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};
