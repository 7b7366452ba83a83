// IN_PROGRESS: one chunk of lines per runner step. `runChunk` runs the lines outside any transaction (under the
// runner's lease) through the inference module's own path (answerText: target, engine route, scripted answers,
// served-request records) behind the organization's rate limits, as single requests; `applyChunk` then commits the
// chunk, fenced: the batch's offsets first (a compare-and-set on where the chunk started), then the result bytes at
// the committed ends of the files. A chunk that does not commit leaves nothing the next one keeps: it starts from
// the committed offsets and cuts off whatever a killed process wrote past them.
import type { Batch } from '../../../generated/prisma/sqlite/client/client.ts';
import { ApiError, internalError } from '../../core/errors.ts';
import type { Identity } from '../../core/identity.ts';
import { newId } from '../../core/ids.ts';
import type { Tx } from '../../db/index.ts';
import { Reply } from '../../http/reply.ts';
import { type Admitted, estimateTokens } from '../../limits/rate-limits.ts';
import { transcribeByUrl } from '../audio/index.ts';
import { answerText } from '../inference/index.ts';
import type { Services } from '../types.ts';
import { writeAt } from './files.ts';
import { identityOf } from './identity.ts';
import { inputPath, linesFrom } from './input.ts';
import { customIdIn, requestOf } from './lines.ts';

/** Lines per chunk, and the work a chunk stops after (an upstream engine's lines may be slow; the lease must hold). */
export const CHUNK_LINES = 500;
const CHUNK_MS = 1000;

export interface Chunk {
  /** The committed offset the chunk started from (its fence), and where it ended. */
  from: number;
  to: number;
  toLine: number;
  requests: number;
  output: string;
  outputLines: number;
  errors: string;
  errorLines: number;
  /** The rate limits refused the chunk's first line: the next chunk is due when the refusing window ends. */
  retryInMs?: number;
}

/** The error line's body: the envelope the single request would answer. */
const envelope = (e: ApiError) => ({ error: { message: e.message, type: e.type, param: e.param, code: e.code } });

export async function runChunk(services: Services, row: Batch): Promise<Chunk> {
  const chunk: Chunk = {
    from: Number(row.inputOffset),
    to: Number(row.inputOffset),
    toLine: row.inputLine,
    requests: 0,
    output: '',
    outputLines: 0,
    errors: '',
    errorLines: 0,
  };
  const path = await inputPath(services, row);
  if (!path) throw new Error(`The input file '${row.inputFileId}' no longer exists.`);
  const identity = await identityOf(services, row);
  const limits = services.limits;
  const duplicates = new Set<number>(JSON.parse(row.duplicates));
  const started = performance.now();
  for await (const line of linesFrom(path, chunk.from, row.inputLine + 1)) {
    if (chunk.requests >= CHUNK_LINES || (chunk.requests > 0 && performance.now() - started > CHUNK_MS)) break;
    if (!line.text.trim()) {
      chunk.to = line.end;
      chunk.toLine = line.number;
      continue;
    }
    let parsed: unknown;
    let customId: string | null = null;
    const requestId = newId('req', services.clock.now());
    let admitted: Admitted | undefined;
    try {
      try {
        parsed = JSON.parse(line.text);
      } catch {
        throw new ApiError(400, 'invalid_json', 'The line is not valid JSON.', null);
      }
      customId = customIdIn(parsed);
      const request = requestOf(row, parsed, duplicates.has(line.number), services.config.strictRequests);
      if (limits.config.enabled) {
        const outcome = await admit(services, identity, request.body);
        // Refused: not the line's error; the chunk ends before it, and the next one starts with it.
        if ('waitMs' in outcome) {
          if (chunk.requests === 0) chunk.retryInMs = Math.max(1, outcome.waitMs);
          break;
        }
        admitted = outcome.admitted;
      }
      const body = await answer(services, identity, row.endpoint, request.body);
      if (body === undefined) throw internalError();
      if (admitted) limits.settle(admitted, (body as { usage?: { total_tokens?: number } }).usage?.total_tokens);
      chunk.output += `${JSON.stringify({ id: requestId, custom_id: customId, response: { status_code: 200, request_id: requestId, body }, error: null })}\n`;
      chunk.outputLines++;
    } catch (err) {
      if (admitted) limits.release(admitted);
      // Anything unexpected is the server's failure, worded as the pipeline words a 500 (never its cause).
      const e = err instanceof ApiError ? err : internalError();
      if (!(err instanceof ApiError)) services.log.warn({ err, batch: row.id, line: line.number }, 'batch line failed');
      const error = { code: e.code, message: e.message };
      chunk.errors += `${JSON.stringify({ id: requestId, custom_id: customId, line: line.number, response: { status_code: e.status, request_id: requestId, body: envelope(e) }, error })}\n`;
      chunk.errorLines++;
    }
    chunk.requests++;
    chunk.to = line.end;
    chunk.toLine = line.number;
  }
  return chunk;
}

/** What the single request to `endpoint` answers: its JSON body (or a text format's text). */
async function answer(services: Services, identity: Identity, endpoint: string, body: Record<string, unknown>): Promise<unknown> {
  if (endpoint === '/v1/audio/transcriptions') return transcribeByUrl(services, identity, 'transcribe', body);
  if (endpoint === '/v1/audio/translations') return transcribeByUrl(services, identity, 'translate', body);
  const reply = await answerText('chat', { ...services, operationId: 'createChatCompletion', body, identity });
  return reply instanceof Reply && reply.content.kind === 'json' ? reply.content.value : undefined;
}

/** The line admitted by the organization's limits on its model, as a single request is (without its short wait), or how long until the refusing window ends. */
async function admit(services: Services, identity: Identity, body: Record<string, unknown>): Promise<{ admitted: Admitted } | { waitMs: number }> {
  const limits = services.limits;
  const model = String(body.model);
  const outcome = await limits.attempt(identity, model, body);
  return 'admitted' in outcome ? outcome : { waitMs: outcome.waitMs };
}

/** Commits a chunk where it started (null when the batch moved meanwhile: the chunk is dropped, nothing written). */
export async function applyChunk(tx: Tx, services: Pick<Services, 'clock' | 'config'>, row: Batch, chunk: Chunk): Promise<Batch | null> {
  const out = Buffer.from(chunk.output);
  const err = Buffer.from(chunk.errors);
  // The compare-and-set first: it takes the row's lock, so the bytes below are written by the one committing chunk.
  const [moved] = await tx.batch.updateManyAndReturn({
    where: { id: row.id, status: 'IN_PROGRESS', inputOffset: BigInt(chunk.from) },
    data: {
      inputOffset: BigInt(chunk.to),
      inputLine: chunk.toLine,
      linesDone: { increment: chunk.requests },
      outputBytes: { increment: out.length },
      errorBytes: { increment: err.length },
      outputLines: { increment: chunk.outputLines },
      errorLines: { increment: chunk.errorLines },
      updatedAt: BigInt(services.clock.now()),
    },
  });
  if (!moved) return null;
  await writeAt(services.config, row.projectId, row.outputFileId, Number(row.outputBytes), out);
  await writeAt(services.config, row.projectId, row.errorFileId, Number(row.errorBytes), err);
  return moved;
}
