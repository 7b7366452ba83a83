// Which job still needs a file: the one rule that keeps a file from deletion. A job that reads files (a fine-tuning
// job its training and validation files, an evaluation job its input file) holds them until it is terminal, whatever
// step it is at: a job that is not finished may still be (re)run from the start after a crash, and read them again.
import type { Tx } from '../../db/index.ts';

/**
 * The terminal states of the machines whose jobs read files (fine-tuning/machine.ts, evaluation/machine.ts): named
 * here, not imported, because those modules import this one (test/file-in-use.test.ts checks that they agree).
 */
export const FINE_TUNE_TERMINAL = ['cancelled', 'error', 'completed'];
export const EVALUATION_TERMINAL = ['completed', 'user_error', 'error'];
export const BATCH_TERMINAL = ['COMPLETED', 'FAILED', 'EXPIRED', 'CANCELLED'];

export interface Holder {
  what: 'fine-tuning job' | 'evaluation job' | 'batch';
  id: string;
  status: string;
}

/** A job of the file's project, not yet terminal, that reads the file; null when none does. */
export async function holderOf(tx: Tx, projectId: string, fileId: string): Promise<Holder | null> {
  const ft = await tx.fineTune.findFirst({
    where: { projectId, status: { notIn: FINE_TUNE_TERMINAL }, OR: [{ trainingFile: fileId }, { validationFile: fileId }] },
    orderBy: { id: 'asc' },
  });
  if (ft) return { what: 'fine-tuning job', id: ft.id, status: ft.status };
  // The input file is a field of the parameters (JSON, as JSON.stringify wrote it): narrowed by the text, then read.
  const evaluations = await tx.evaluationJob.findMany({
    where: { projectId, status: { notIn: EVALUATION_TERMINAL }, parameters: { contains: JSON.stringify(fileId) } },
    orderBy: { id: 'asc' },
  });
  const ev = evaluations.find((e) => (JSON.parse(e.parameters) as { input_data_file_path?: string }).input_data_file_path === fileId);
  if (ev) return { what: 'evaluation job', id: ev.id, status: ev.status };
  // A batch reads its input a chunk at a time until it has ended.
  const batch = await tx.batch.findFirst({ where: { projectId, inputFileId: fileId, status: { notIn: BATCH_TERMINAL } }, orderBy: { id: 'asc' } });
  return batch ? { what: 'batch', id: batch.id, status: batch.status } : null;
}
