// A fingerprint of every row in the database, to prove that a refused request changed nothing. The control plane's
// journal (which records every request, refused or not) and its processes' liveness are observations of requests, not
// what a request writes: they are left out.
import { createHash } from 'node:crypto';
import type { Database } from '../../server/db/index.ts';

const OBSERVATIONS = ['_prisma_migrations', 'ControlJournalEntry', 'ControlProcess'].map((n) => `'${n}'`).join(', ');

export async function databaseDigest(db: Database): Promise<string> {
  const tables: { name: string }[] =
    db.provider === 'postgresql'
      ? await db.prisma.$queryRawUnsafe(
          `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_name NOT IN (${OBSERVATIONS}) ORDER BY 1`,
        )
      : await db.prisma.$queryRawUnsafe(
          `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT IN (${OBSERVATIONS}) ORDER BY 1`,
        );
  const hash = createHash('sha256');
  for (const { name } of tables) {
    const rows = await db.prisma.$queryRawUnsafe<unknown[]>(`SELECT * FROM "${name}" ORDER BY 1`);
    hash.update(name).update(JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
  }
  return hash.digest('hex');
}
