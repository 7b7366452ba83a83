// Long lists for `npm run bench`: 5,000 secrets and 5,000 files (issue 17: list answers of 1.3-2 MB under load),
// written straight into the bench server's database, in the project of the key the bench calls with. The files are
// validated fine-tune datasets, each with the report a real validation writes, as the listing answers them.
import { DEFAULT_PROJECT_SLUG } from '../../server/accounts.ts';
import { instant, systemClock } from '../../server/core/clock.ts';
import { newId } from '../../server/core/ids.ts';
import { openDatabase } from '../../server/db/index.ts';
import { encryptSecretValue, secretsKey } from '../../server/modules/secrets/crypto.ts';

export const LIST_ROWS = 5000;

/** The report a valid conversation dataset gets (server/modules/files/rules.ts). */
const report = (fileId: string, i: number) => ({
  valid: true,
  dataset_format: 'CONVERSATION',
  dataset_has_sample_weights: false,
  dataset_has_message_weights: false,
  dataset_is_multimodal: false,
  dataset_has_tools: false,
  dataset_has_parallel_tool_calls: false,
  dataset_has_reasoning: false,
  nlines: 100 + i,
  file_id: fileId,
  token_count: 25_000 + i,
});

/**
 * Writes `rows` secrets and `rows` files into the default project (the development key's, which the bench calls
 * with), unless it has them already (one server, many scenarios).
 */
export async function seedLists(databaseUrl: string, rows = LIST_ROWS): Promise<void> {
  const db = await openDatabase(databaseUrl, { migrate: false });
  try {
    const { id: projectId } = await db.prisma.project.findUniqueOrThrow({ where: { slug: DEFAULT_PROJECT_SLUG } });
    if ((await db.prisma.secret.count({ where: { projectId } })) >= rows) return;
    const key = secretsKey({ secretsKey: process.env.SECRETS_KEY ?? '' });
    const now = instant(systemClock);
    const secrets = Array.from({ length: rows }, (_, i) => {
      const id = newId('sec', Number(now) + i);
      return {
        id,
        projectId,
        name: `BENCH_SECRET_${String(i).padStart(5, '0')}`,
        description: i % 2 ? `Secret ${i} of the list benchmark` : null,
        valueEncrypted: encryptSecretValue(key, projectId, id, `value-${i}-${'x'.repeat(40)}`),
        createdBy: 'key_bench',
        lastUpdatedBy: 'key_bench',
        createdAt: now + BigInt(i),
        updatedAt: now + BigInt(i),
      };
    });
    const files = Array.from({ length: rows }, (_, i) => {
      const id = newId('file', Number(now) + i).replace(/^file_/, 'file-');
      return {
        id,
        projectId,
        filename: `dataset-${i}.jsonl`,
        purpose: 'fine-tune',
        fileType: 'jsonl',
        bytes: BigInt(10_000 + i),
        path: `files/${projectId}/${id}`,
        status: 'COMPLETED',
        report: JSON.stringify(report(id, i)),
        createdAt: now + BigInt(i),
      };
    });
    // In slices: SQLite takes at most 32,766 bound values in a statement.
    for (let i = 0; i < rows; i += 500) {
      await db.write(async (tx) => {
        await tx.secret.createMany({ data: secrets.slice(i, i + 500) });
        await tx.file.createMany({ data: files.slice(i, i + 500) });
      });
    }
  } finally {
    await db.close();
  }
}
