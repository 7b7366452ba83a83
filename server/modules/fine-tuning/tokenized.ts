// biome-ignore-all lint/suspicious/noExplicitAny: a dataset row is any JSON object, checked when its file was validated.
// The tokenized dataset of a fine-tuning job (GET /v1/fine-tunes/{id}/download-tokenized-dataset): its training (and
// validation) samples as the local engine tokenizes them, one JSON object a line, in a tar archive. What the engine
// can compute exactly: the preview's rendering and tokenizer (cl100k_base, not the model's own), each sample cut to
// the job's max_seq_length, one row per sample (no packing). Built once per job into DATA_DIR/tokenized/ (to a
// temporary name, then renamed, so a reader never sees half an archive) and rebuilt, byte for byte the same, when
// absent (another process's disk, a cleared folder): members and times come from the job, never from the clock.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { FineTune } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Config } from '../../core/config.ts';
import { apiError } from '../../core/errors.ts';
import { TarFileWriter } from '../../core/tar.ts';
import type { Database } from '../../db/index.ts';
import { datasetRows, type FileType, filePath, type Purpose } from '../files/index.ts';
import { segmentsOf, tokenizeRow } from './preview.ts';
import type { Accepted } from './rules.ts';

export const TOKENIZED_CONTENT_TYPE = 'application/x-tar';
export const tokenizedName = (job: FineTune) => `${job.id}-tokenized.tar`;
const archivePath = (config: Pick<Config, 'dataDir'>, job: FineTune) => join(config.dataDir, 'tokenized', job.projectId, tokenizedName(job));

interface Tokenized {
  input_ids: number[];
  attention_mask: number[];
  labels: number[];
}

const ones = (n: number) => new Array<number>(n).fill(1);

/** One sample's tokens: pre-tokenized rows as given (cut), others rendered and tokenized as the preview does. */
function tokenize(raw: Record<string, any>, format: string, trainOnInputs: boolean, maxSeq: number): Tokenized | { chosen: Tokenized; rejected: Tokenized } {
  if (format === 'TOKENIZED') {
    const ids = Array.from(raw.input_ids as ArrayLike<number>, Number).slice(0, maxSeq);
    const given = (c: string) => (raw[c] == null ? undefined : Array.from(raw[c] as ArrayLike<number>, Number).slice(0, maxSeq));
    return { input_ids: ids, attention_mask: given('attention_mask') ?? ones(ids.length), labels: given('labels') ?? ids };
  }
  const row = (sample: Record<string, any>): Tokenized => {
    const r = tokenizeRow(segmentsOf(sample, trainOnInputs).segments, maxSeq);
    return { input_ids: r.input_ids, attention_mask: ones(r.input_ids.length), labels: r.labels };
  };
  if (format === 'PREFERENCE') {
    const messages = raw.input?.messages ?? [];
    return {
      chosen: row({ messages: [...messages, ...raw.preferred_output] }),
      rejected: row({ messages: [...messages, ...raw.non_preferred_output] }),
    };
  }
  return row(raw);
}

interface Services {
  db: Database;
  config: Pick<Config, 'dataDir'>;
}

/** Writes one dataset's member; answers its rows and tokens. */
async function writeSet(services: Services, out: TarFileWriter, name: string, fileId: string, a: Accepted, mtimeMs: number) {
  const f = await services.db.prisma.file.findUnique({ where: { id: fileId } });
  if (!f) return null;
  const trainOnInputs = a.trainOnInputs === true;
  let rows = 0;
  let tokens = 0;
  out.begin(name, mtimeMs);
  for await (const r of datasetRows(filePath(services.config, f), f.fileType as FileType, f.purpose as Purpose)) {
    if (!('sample' in r)) continue;
    const t = tokenize(r.raw, r.sample.format, trainOnInputs, a.maxSeqLength);
    rows++;
    tokens += 'chosen' in t ? t.chosen.input_ids.length + t.rejected.input_ids.length : t.input_ids.length;
    await out.write(Buffer.from(`${JSON.stringify(t)}\n`));
  }
  await out.end();
  return { file: fileId, rows, tokens };
}

const README = (job: FineTune, a: Accepted) =>
  [
    `The tokenized dataset of fine-tuning job ${job.id} (${job.model}), as this server's local engine tokenizes it.`,
    '',
    "The tokenizer is the server's (cl100k_base), not the model's own: the ids are not the model's vocabulary.",
    'Conversations are rendered one message a line as `<role>: <content>`, instructions as prompt then completion,',
    'plain text whole; `labels` are -100 where a token is not trained on. Each sample is one row, cut to',
    `max_seq_length ${a.maxSeqLength}; rows are not packed. A pre-tokenized parquet dataset is given back as its rows.`,
    '',
    '  train.jsonl        the training samples, one {input_ids, attention_mask, labels} a line',
    '                     (a preference sample: {chosen: {...}, rejected: {...}})',
    '  validation.jsonl   the validation samples, when the job has a validation file',
    '  meta.json          the job, the tokenizer, and the rows and tokens of each set',
    '',
  ].join('\n');

async function build(services: Services, job: FineTune, path: string): Promise<void> {
  const a = JSON.parse(job.params) as Accepted;
  const mtimeMs = Number(job.createdAt);
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${randomBytes(6).toString('hex')}`;
  const out = await TarFileWriter.create(temporary);
  try {
    out.begin('README.txt', mtimeMs);
    await out.write(Buffer.from(README(job, a)));
    await out.end();
    const train = await writeSet(services, out, 'train.jsonl', job.trainingFile, a, mtimeMs);
    if (!train) throw gone(job);
    const validation = job.validationFile ? await writeSet(services, out, 'validation.jsonl', job.validationFile, a, mtimeMs) : null;
    const meta = { job_id: job.id, model: job.model, tokenizer: 'cl100k_base', max_seq_length: a.maxSeqLength, packing: false, train, validation };
    out.begin('meta.json', mtimeMs);
    await out.write(Buffer.from(`${JSON.stringify(meta, null, 2)}\n`));
    await out.end();
    await out.close();
    await rename(temporary, path);
  } catch (e) {
    await out.abort();
    await rm(temporary, { force: true });
    throw e;
  }
}

const gone = (job: FineTune) =>
  apiError(404, 'tokenized_dataset_not_found', `Job '${job.id}' has no tokenized dataset: its training file '${job.trainingFile}' has been deleted.`, 'id');

/** Only one build per archive at a time in this process; another process may build the same bytes meanwhile. */
const building = new Map<string, Promise<void>>();

/**
 * The job's tokenized archive on disk (built when absent) and its size. A job has one once its files are validated
 * (it has left `pending`): before, 404 `tokenized_dataset_not_ready`.
 */
export async function tokenizedArchive(services: Services, job: FineTune): Promise<{ path: string; size: number }> {
  if (job.status === 'pending')
    throw apiError(
      404,
      'tokenized_dataset_not_ready',
      `Job '${job.id}' is pending: its dataset is tokenized once its files are validated. Ask again when the job is queued or later.`,
      'id',
    );
  const path = archivePath(services.config, job);
  const existing = await stat(path).catch(() => null);
  if (existing) return { path, size: existing.size };
  let pending = building.get(path);
  if (!pending) {
    pending = build(services, job, path).finally(() => building.delete(path));
    building.set(path, pending);
  }
  await pending;
  return { path, size: (await stat(path)).size };
}

/** Removes a deleted job's archive (a later job never has its id). */
export async function forgetTokenized(services: Pick<Services, 'config'>, job: FineTune): Promise<void> {
  await rm(archivePath(services.config, job), { force: true });
}
