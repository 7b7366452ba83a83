// A second process writing the same SQLite file, for test/persistence.test.ts: opens the database through
// openDatabase (as the CLI would), prints `ready`, and on a `go` line on stdin runs COUNT concurrent write
// transactions, each reading and then inserting an organization named `<TAG> <i>`. Prints a JSON summary and exits.

import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { openDatabase } from '../../server/db/index.ts';

const url = process.env.DATABASE_URL!;
const count = Number(process.env.COUNT ?? 500);
const tag = process.env.TAG ?? 'child';

const db = await openDatabase(url);
const lines = createInterface({ input: process.stdin });
console.log('ready');
await once(lines, 'line');
const results = await Promise.allSettled(
  Array.from({ length: count }, (_, i) =>
    db.write(async (tx) => {
      await tx.organization.count({ where: { name: { startsWith: tag } } });
      await tx.organization.create({ data: { id: `org_${tag}_${i}`, name: `${tag} ${i}`, createdAt: BigInt(Date.now()) } });
    }),
  ),
);
const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
console.log(JSON.stringify({ ok: count - failed.length, failed: failed.length, errors: failed.slice(0, 3).map((f) => String(f.reason).slice(0, 400)) }));
await db.close();
process.exit(0);
