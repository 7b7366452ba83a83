// The result files: their bytes grow in place (DATA_DIR/files/<project>/<id>, ids chosen at creation) a chunk at a
// time, each write at the committed end (cutting off what an uncommitted chunk wrote); when the batch ends, each
// file with at least one line is recorded in Files, in the ending move's transaction.
import { mkdir, open, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Batch } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Config } from '../../core/config.ts';
import type { Tx } from '../../db/index.ts';
import { fileLocation, recordFile } from '../files/index.ts';
import type { Services } from '../types.ts';

const pathOf = (config: Pick<Config, 'dataDir'>, projectId: string, fileId: string) => join(config.dataDir, fileLocation(projectId, fileId));

/** Writes `bytes` at `at`, the committed end, after cutting the file there. */
export async function writeAt(config: Pick<Config, 'dataDir'>, projectId: string, fileId: string, at: number, bytes: Buffer): Promise<void> {
  const path = pathOf(config, projectId, fileId);
  if (bytes.length === 0 && at === 0) return;
  await mkdir(dirname(path), { recursive: true });
  const fh = await open(path, 'a+');
  try {
    await fh.truncate(at);
    if (bytes.length) await fh.write(bytes, 0, bytes.length, at);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Records an ended batch's result files (once); answers the batch. */
export async function recordResults(tx: Tx, services: Pick<Services, 'clock' | 'config'>, row: Batch): Promise<Batch> {
  if (row.filesRecorded) return row;
  const results = [
    { id: row.outputFileId, lines: row.outputLines, bytes: Number(row.outputBytes), name: 'output' },
    { id: row.errorFileId, lines: row.errorLines, bytes: Number(row.errorBytes), name: 'errors' },
  ];
  for (const r of results) {
    if (r.lines === 0) {
      await rm(pathOf(services.config, row.projectId, r.id), { force: true });
      continue;
    }
    await writeAt(services.config, row.projectId, r.id, r.bytes, Buffer.alloc(0));
    await recordFile(
      tx,
      services,
      r.id,
      { projectId: row.projectId, filename: `batch-${row.id}-${r.name}.jsonl`, purpose: 'batch-api', fileType: 'jsonl' },
      r.bytes,
    );
  }
  return tx.batch.update({ where: { id: row.id }, data: { filesRecorded: true } });
}
