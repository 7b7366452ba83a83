// Many rows written at once, as multi-row INSERTs of their columns. Prisma 7 compiles a createMany's query plan anew
// at every call (its plan cache keeps no createMany: a batch of 20 rows cost its server about 6 ms of CPU, measured),
// and maps every row on the way (a snapshot's restore spent ~0.35 ms a row on SQLite). The values are strings,
// numbers, BigInts, booleans and nulls, which both adapters bind as they are.
import { Prisma } from '../../generated/prisma/sqlite/client/client.ts';

// Rows per INSERT: within the bound parameters both databases take (SQLite 32,766, PostgreSQL 65,535).
const PARAMETERS = 30_000;

/** A table's or column's name in SQL: the models' own names (no @@map), quoted alike on SQLite and PostgreSQL. */
export const quoted = (name: string) => Prisma.raw(`"${name}"`);

/** Inserts `rows` (each with the columns of the first) into the model's table; answers how many were inserted. */
export async function insertRows(
  client: { $executeRaw(query: Prisma.Sql): Promise<number> },
  model: Prisma.ModelName,
  rows: Record<string, unknown>[],
): Promise<number> {
  if (rows.length === 0) return 0;
  const columns = Object.keys(rows[0]!);
  const head = Prisma.sql`INSERT INTO ${quoted(model)} (${Prisma.join(columns.map(quoted))}) VALUES `;
  const per = Math.max(1, Math.floor(PARAMETERS / columns.length));
  let n = 0;
  for (let i = 0; i < rows.length; i += per) {
    const values = rows.slice(i, i + per).map((row) => Prisma.sql`(${Prisma.join(columns.map((c) => row[c] ?? null))})`);
    n += await client.$executeRaw(Prisma.sql`${head}${Prisma.join(values)}`);
  }
  return n;
}
