// A fingerprint of every row in the database, to prove that a refused request changed nothing. The control plane's
// journal (which records every request, refused or not) and its processes' liveness are observations of requests, not
// what a request writes: they are left out. One statement reads every table (each table's rows as text, in a fixed
// order): a statement per table cost the fuzz test about 25 ms a digest, two digests a case.
import { createHash } from 'node:crypto';
import type { Database } from '../../server/db/index.ts';

const OBSERVATIONS = ['_prisma_migrations', 'ControlJournalEntry', 'ControlProcess'].map((n) => `'${n}'`).join(', ');
const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The statement that answers one column per table: its rows as text (PostgreSQL: their md5), sorted. */
async function digestStatement(db: Database): Promise<string> {
  if (db.provider === 'postgresql') {
    const tables: { name: string }[] = await db.prisma.$queryRawUnsafe(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_name NOT IN (${OBSERVATIONS}) ORDER BY 1`,
    );
    return `SELECT ${tables.map(({ name }) => `(SELECT md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text), '')) FROM ${ident(name)} x) AS ${ident(name)}`).join(', ')}`;
  }
  const tables: { name: string; columns: string }[] = await db.prisma.$queryRawUnsafe(
    `SELECT m.name AS name, group_concat(p.name, char(31)) AS columns FROM sqlite_master m, pragma_table_info(m.name) p
     WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT IN (${OBSERVATIONS}) GROUP BY m.name ORDER BY m.name`,
  );
  // quote() writes any value (a BLOB too) as an SQL literal: a row is its columns' literals.
  const row = (columns: string) =>
    columns
      .split('\u001f')
      .map((c) => `quote(${ident(c)})`)
      .join(` || ',' || `);
  return `SELECT ${tables.map(({ name, columns }) => `(SELECT group_concat(r, char(10)) FROM (SELECT ${row(columns)} AS r FROM ${ident(name)} ORDER BY r)) AS ${ident(name)}`).join(', ')}`;
}

const statements = new WeakMap<Database, Promise<string>>();

export async function databaseDigest(db: Database): Promise<string> {
  if (!statements.has(db)) statements.set(db, digestStatement(db));
  const [tables] = await db.prisma.$queryRawUnsafe<Record<string, string | null>[]>(await statements.get(db)!);
  const hash = createHash('sha256');
  for (const [name, rows] of Object.entries(tables!))
    hash
      .update(name)
      .update('\0')
      .update(rows ?? '')
      .update('\0');
  return hash.digest('hex');
}
