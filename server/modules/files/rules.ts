// The rules of a file: which formats a purpose takes, and what a valid fine-tuning dataset is (the platform's
// formats: conversation, instruction, plain text, preference; pre-tokenized parquet). Datasets are read as streams,
// a line (or a parquet row group) at a time, never whole.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet';
import { badRequest } from '../../core/errors.ts';
import { countTokens } from '../../engines/tokens.ts';
import type { Wire } from '../types.ts';

export type Purpose = 'fine-tune' | 'eval' | 'batch-api';
export type FileType = 'jsonl' | 'parquet' | 'csv';
export type Report = Wire<'FileValidationReport'>;

/** The file types each purpose takes (the platform's: no CSV for training data, no parquet for evaluations). */
const TYPES: Record<Purpose, FileType[]> = { 'fine-tune': ['jsonl', 'parquet'], eval: ['jsonl', 'csv'], 'batch-api': ['jsonl', 'csv'] };

export function checkPurpose(purpose: Purpose, fileType: FileType): void {
  if (!TYPES[purpose].includes(fileType)) {
    throw badRequest(`A '${purpose}' file must be ${TYPES[purpose].join(' or ')}, not ${fileType}.`, 'file_type', 'unsupported_file_type');
  }
}

/** How many bad lines a report names. */
export const MAX_LINE_ERRORS = 100;
const ROLES = ['system', 'user', 'assistant'];
const PARQUET_COLUMNS = ['input_ids', 'attention_mask', 'labels'];

type Format = 'CONVERSATION' | 'INSTRUCTION' | 'GENERAL' | 'PREFERENCE' | 'TOKENIZED';

/** A valid sample: its format, the text the model trains on (or its token count, when pre-tokenized), and what it uses. */
export interface Sample {
  format: Format;
  text?: string;
  tokens?: number;
  messageWeights?: boolean;
  tools?: boolean;
  reasoning?: boolean;
  multimodal?: boolean;
}

class Bad extends Error {}
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** Text of a message's content: a string, or (multimodal) a list of parts whose text parts count. */
function contentText(content: unknown, at: string, sample: Sample): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    sample.multimodal = true;
    return content.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).join(' ');
  }
  throw new Bad(`${at} \`content\` must be a string (found ${kind(content)}).`);
}

function messagesText(messages: unknown, sample: Sample, requireAssistant: boolean, field = 'messages'): string {
  if (!Array.isArray(messages)) throw new Bad(`\`${field}\` must be a list of messages (found ${kind(messages)}).`);
  if (messages.length === 0) throw new Bad(`\`${field}\` must not be empty.`);
  let previous: string | null = null;
  let assistant = false;
  const texts: string[] = [];
  messages.forEach((m, i) => {
    const at = `message ${i + 1}:`;
    if (!isObject(m)) throw new Bad(`${at} each message must be an object with \`role\` and \`content\` (found ${kind(m)}).`);
    if (!('role' in m)) throw new Bad(`${at} missing \`role\`.`);
    if (typeof m.role !== 'string' || !ROLES.includes(m.role)) throw new Bad(`${at} invalid role \`${String(m.role)}\`; roles are ${ROLES.join(', ')}.`);
    if (m.role === 'system' && i > 0) throw new Bad(`${at} a system message may only come first.`);
    if (previous !== null && m.role === previous)
      throw new Bad(`${at} after the optional system message, roles must alternate between user and assistant (two ${m.role} messages in a row).`);
    if (!('content' in m) && !('tool_calls' in m)) throw new Bad(`${at} missing \`content\`.`);
    if ('weight' in m) {
      if (m.weight !== 0 && m.weight !== 1) throw new Bad(`${at} \`weight\` must be 0 or 1 (found ${JSON.stringify(m.weight)}).`);
      sample.messageWeights = true;
    }
    if ('tool_calls' in m) sample.tools = true;
    if ('reasoning' in m || 'reasoning_content' in m) sample.reasoning = true;
    if ('content' in m && m.content !== null) texts.push(contentText(m.content, at, sample));
    previous = m.role;
    assistant ||= m.role === 'assistant';
  });
  if (requireAssistant && !assistant) throw new Bad('at least one message must have the assistant role.');
  return texts.join('\n');
}

/** Checks one parsed JSON line: answers the sample, or throws its reason. */
export function checkSample(value: unknown, purpose: Purpose): Sample {
  if (!isObject(value)) throw new Bad(`each line must be a JSON object (found ${kind(value)}).`);
  const keys = Object.keys(value);
  const has = (...k: string[]) => k.every((c) => keys.includes(c));
  if (has('messages')) {
    const sample: Sample = { format: 'CONVERSATION' };
    if ('tools' in value) sample.tools = true;
    sample.text = messagesText(value.messages, sample, purpose !== 'eval');
    return sample;
  }
  if (has('input', 'preferred_output', 'non_preferred_output')) {
    const sample: Sample = { format: 'PREFERENCE' };
    if (!isObject(value.input)) throw new Bad('`input` must be an object with `messages`.');
    const input = messagesText(value.input.messages, sample, false, 'input.messages');
    const outputs = (['preferred_output', 'non_preferred_output'] as const).map((k) => {
      const out = value[k];
      if (!Array.isArray(out) || out.length !== 1 || !isObject(out[0]) || out[0].role !== 'assistant') {
        throw new Bad(`\`${k}\` must be a list of exactly one assistant message.`);
      }
      return contentText(out[0].content, `${k}:`, sample);
    });
    sample.text = [input, ...outputs].join('\n');
    return sample;
  }
  if (has('prompt', 'completion') || keys.includes('prompt') || keys.includes('completion')) {
    for (const k of ['prompt', 'completion']) {
      if (!(k in value)) throw new Bad(`an instruction sample needs both \`prompt\` and \`completion\` (\`${k}\` is missing).`);
      if (typeof value[k] !== 'string') throw new Bad(`\`${k}\` must be a string (found ${kind(value[k])}).`);
    }
    return { format: 'INSTRUCTION', text: `${value.prompt}${value.completion}` };
  }
  if (has('text')) {
    if (typeof value.text !== 'string') throw new Bad(`\`text\` must be a string (found ${kind(value.text)}).`);
    return { format: 'GENERAL', text: value.text };
  }
  throw new Bad(
    `no dataset format matches the fields ${keys.map((k) => `\`${k}\``).join(', ') || '(none)'}: a sample is {"messages"} (conversation), {"prompt", "completion"} (instruction), {"text"} (plain text) or {"input", "preferred_output", "non_preferred_output"} (preference).`,
  );
}

/** One sample of a dataset (with the row as read, for those who tokenize it), or the reason its line is bad. */
export type Row = { line: number; sample: Sample; raw: Record<string, unknown> } | { line: number; error: string };

/** The samples of a JSON Lines dataset, a line at a time (blank lines skipped). */
async function* jsonlRows(path: string, purpose: Purpose): AsyncGenerator<Row> {
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  let line = 0;
  for await (const text of lines) {
    line++;
    if (text.trim() === '') continue;
    if (line === 1 && text.charCodeAt(0) === 0xfeff) {
      yield* oneLine(text.slice(1), line, purpose);
      continue;
    }
    yield* oneLine(text, line, purpose);
  }
}

function* oneLine(text: string, line: number, purpose: Purpose): Generator<Row> {
  if (text.includes('\ufffd')) return yield { line, error: 'the line is not valid UTF-8.' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return yield { line, error: `the line is not valid JSON (${(e as Error).message}).` };
  }
  try {
    yield { line, sample: checkSample(value, purpose), raw: value as Record<string, unknown> };
  } catch (e) {
    if (!(e instanceof Bad)) throw e;
    yield { line, error: e.message };
  }
}

const intList = (v: unknown): number[] | undefined => {
  const list = Array.isArray(v) ? v : ArrayBuffer.isView(v) ? Array.from(v as unknown as ArrayLike<number>) : undefined;
  return list?.every((x) => (typeof x === 'number' && Number.isInteger(x)) || typeof x === 'bigint') ? list.map(Number) : undefined;
};

/** The rows of a pre-tokenized parquet dataset, a row group at a time (the reader fetches byte ranges, not the file). */
async function* parquetRows(path: string): AsyncGenerator<Row> {
  const file = await asyncBufferFromFile(path);
  let metadata: Awaited<ReturnType<typeof parquetMetadataAsync>>;
  try {
    metadata = await parquetMetadataAsync(file);
  } catch (e) {
    return yield { line: 0, error: `the file is not a readable parquet file (${(e as Error).message}).` };
  }
  const columns = parquetSchema(metadata).children.map((c) => c.element.name);
  if (!columns.includes('input_ids')) return yield { line: 0, error: 'a parquet dataset needs an `input_ids` column (pre-tokenized rows).' };
  const extra = columns.filter((c) => !PARQUET_COLUMNS.includes(c));
  if (extra.length)
    return yield { line: 0, error: `unexpected column(s) ${extra.map((c) => `\`${c}\``).join(', ')}: only ${PARQUET_COLUMNS.join(', ')} are taken.` };
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    const rows = await parquetReadObjects({ file, metadata, rowStart, rowEnd, columns });
    for (const [i, row] of rows.entries()) {
      const line = rowStart + i + 1;
      const ids = intList(row.input_ids);
      if (!ids || ids.length === 0) {
        yield { line, error: '`input_ids` must be a non-empty list of integers.' };
        continue;
      }
      const mismatch = ['attention_mask', 'labels'].find((c) => c in row && row[c] !== null && intList(row[c])?.length !== ids.length);
      if (mismatch) yield { line, error: `\`${mismatch}\` must be a list of integers as long as \`input_ids\` (${ids.length}).` };
      else yield { line, sample: { format: 'TOKENIZED', tokens: ids.length }, raw: row };
    }
    rowStart = rowEnd;
  }
}

/** Every row of a dataset, valid or not, in order. Line 0 is the file as a whole. */
export function datasetRows(path: string, fileType: FileType, purpose: Purpose): AsyncGenerator<Row> {
  return fileType === 'parquet' ? parquetRows(path) : jsonlRows(path, purpose);
}

/** A sample's tokens, as the server's tokenizer counts them (with `atMost`, any number above it once it is longer). */
export const sampleTokens = (s: Sample, atMost = Infinity) => s.tokens ?? countTokens(s.text ?? '', atMost);

/** Reads a whole dataset and reports on it. */
export async function validateDataset(path: string, fileType: FileType, purpose: Purpose, fileId: string): Promise<Report> {
  const errors: { line: number; reason: string }[] = [];
  let bad = 0;
  let nlines = 0;
  let tokens = 0;
  let format: Format | undefined;
  const flags = { messageWeights: false, tools: false, reasoning: false, multimodal: false };
  for await (const row of datasetRows(path, fileType, purpose)) {
    if (row.line > 0) nlines++;
    let error = 'error' in row ? row.error : undefined;
    if (!error && 'sample' in row) {
      format ??= row.sample.format;
      if (row.sample.format !== format) error = `all samples must have one format: this line is ${row.sample.format}, the first sample ${format}.`;
      else {
        tokens += sampleTokens(row.sample);
        for (const k of Object.keys(flags) as (keyof typeof flags)[]) flags[k] ||= !!row.sample[k];
      }
    }
    if (error) {
      bad++;
      if (errors.length < MAX_LINE_ERRORS) errors.push({ line: row.line, reason: error });
    }
  }
  if (nlines === 0 && bad === 0) {
    bad++;
    errors.push({ line: 0, reason: 'the file has no sample.' });
  }
  const report: Report = {
    valid: bad === 0,
    file_id: fileId,
    nlines,
    ...(format && { dataset_format: format }),
    dataset_has_sample_weights: false,
    dataset_has_message_weights: flags.messageWeights,
    dataset_is_multimodal: flags.multimodal,
    dataset_has_tools: flags.tools,
    dataset_has_parallel_tool_calls: false,
    dataset_has_reasoning: flags.reasoning,
  };
  if (bad === 0) return { ...report, token_count: tokens };
  const first = errors[0]!;
  return {
    ...report,
    error_type: 'INVALID_FORMAT',
    error: `${first.line > 0 ? `Line ${first.line}: ` : ''}${first.reason}${bad > 1 ? ` (${bad} bad lines in all.)` : ''}`,
    line_errors: errors,
  };
}
