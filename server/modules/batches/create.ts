// Creating a batch: the request's checks (400 naming the field) and its row, VALIDATING, its first step scheduled.
import type { Batch } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { ApiError, apiError, badRequest } from '../../core/errors.ts';
import { newUuid7 } from '../../core/ids.ts';
import { enter } from '../../runner/progress.ts';
import { findFile, newFileId } from '../files/index.ts';
import { resolveTarget } from '../inference/index.ts';
import type { Context } from '../types.ts';
import { batchMachine } from './machine.ts';

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const LONGEST_MS = 30 * UNIT_MS.d;

/** `30m`, `24h`, `7d`: the window in milliseconds, 1 minute to 30 days. */
export function windowMs(window: string): number {
  const m = /^([1-9][0-9]{0,5})([mhd])$/.exec(window);
  const ms = m ? Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS] : Number.NaN;
  if (!(ms <= LONGEST_MS))
    throw badRequest(
      `'completion_window' must be a whole number of minutes, hours or days (e.g. 30m, 24h, 7d), at most 30 days (got '${window}').`,
      'completion_window',
    );
  return ms;
}

export async function createBatchJob(ctx: Context<'createBatch'>): Promise<{ job: Batch; warning?: string }> {
  const { body, identity, db } = ctx;
  const window = body.completion_window ?? '24h';
  const deadlineIn = windowMs(window);
  const file = await findFile(ctx, identity.projectId, body.input_file_id);
  if (!file) throw apiError(404, 'file_not_found', `No file '${body.input_file_id}' was found: upload the input with POST /v1/files/upload.`, 'input_file_id');
  if (file.purpose !== 'batch-api' || file.fileType !== 'jsonl')
    throw badRequest(
      `File '${file.id}' is a ${file.fileType} file for '${file.purpose}': a batch reads a jsonl file uploaded with purpose batch-api.`,
      'input_file_id',
      'invalid_file',
    );
  const chat = body.endpoint === '/v1/chat/completions';
  if (body.model_id !== undefined && chat) {
    // A model that exists for the caller is one inference could address (a 503 "not ready now" still exists).
    await resolveTarget(db, identity, body.model_id, 'chat').catch((err) => {
      if (err instanceof ApiError && err.status !== 503) throw apiError(err.status, err.code, err.message, 'model_id');
      if (!(err instanceof ApiError)) throw err;
    });
  }
  const warnings = body.priority !== undefined ? ['priority is kept but does not reorder batches on this server.'] : [];
  const now = instant(ctx.clock);
  const job = await db.write(async (tx) => {
    const row = await tx.batch.create({
      data: {
        id: newUuid7(Number(now)),
        projectId: identity.projectId,
        userId: identity.apiKeyId,
        endpoint: body.endpoint,
        inputFileId: file.id,
        fileSizeBytes: file.bytes,
        modelId: body.model_id ?? null,
        completionWindow: window,
        priority: body.priority ?? null,
        status: 'VALIDATING',
        jobDeadline: now + BigInt(deadlineIn),
        outputFileId: newFileId(Number(now)),
        errorFileId: newFileId(Number(now)),
        createdAt: now,
        updatedAt: now,
      },
    });
    await enter(tx, ctx, batchMachine, { id: row.id, projectId: row.projectId, state: row.status });
    return row;
  });
  return { job, ...(warnings.length && { warning: warnings.join(' ') }) };
}
