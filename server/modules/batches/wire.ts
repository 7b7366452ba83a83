// Module `batches`: rows -> wire shapes.
import type { Batch } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';

/** Percent of the file's requests answered or errored, to two decimals. */
const progressOf = (b: Batch) => (b.status === 'COMPLETED' ? 100 : b.totalLines === 0 ? 0 : Math.floor((b.linesDone * 10_000) / b.totalLines) / 100);

export function batchWire(b: Batch): Wire<'BatchJob'> {
  return {
    id: b.id,
    user_id: b.userId,
    input_file_id: b.inputFileId,
    file_size_bytes: Number(b.fileSizeBytes),
    status: b.status as Wire<'BatchJob'>['status'],
    job_deadline: iso(b.jobDeadline),
    created_at: iso(b.createdAt),
    endpoint: b.endpoint,
    progress: progressOf(b),
    ...(b.modelId !== null && { model_id: b.modelId }),
    ...(b.filesRecorded && b.outputLines > 0 && { output_file_id: b.outputFileId }),
    ...(b.filesRecorded && b.errorLines > 0 && { error_file_id: b.errorFileId }),
    ...(b.error !== null && { error: b.error }),
    ...(b.completedAt !== null && { completed_at: iso(b.completedAt) }),
  };
}
