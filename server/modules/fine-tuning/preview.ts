// biome-ignore-all lint/suspicious/noExplicitAny: a dataset row is any JSON object, checked field by field where it is read.
// The tokenized preview of a training file's first rows (POST /v1/fine-tunes/preview): what the local engine can
// compute exactly. Each row is rendered as text segments, each marked trained or not (the loss mask), tokenized with
// the server's tokenizer (cl100k_base, engines/tokens.ts: not the model's own), labelled (-100 where masked) and
// truncated to the model's SFT sequence length.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { badRequest } from '../../core/errors.ts';
import { decode, encode } from '../../engines/tokens.ts';
import type { Wire } from '../types.ts';

type Format = Wire<'FineTunePreviewResponse'>['dataset_format'];
type Row = Wire<'FineTunePreviewRow'>;
interface Segment {
  text: string;
  trained: boolean;
}

/** The label of a token that does not contribute to the loss. */
export const IGNORED = -100;

const isObject = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (content: unknown) =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).join(' ') : '';

/**
 * A validated sample as segments: a conversation's messages each on a `<role>:` line (the assistant's content
 * trained unless its `weight` is 0), an instruction's prompt then completion (the completion trained), a plain text
 * whole (trained). `trainOnInputs` trains every segment.
 */
export function segmentsOf(sample: Record<string, any>, trainOnInputs: boolean): { format: Format; segments: Segment[] } {
  if (Array.isArray(sample.messages)) {
    const segments = sample.messages.flatMap((m: Record<string, any>) => [
      { text: `${m.role}: `, trained: trainOnInputs },
      { text: `${text(m.content)}\n`, trained: trainOnInputs || (m.role === 'assistant' && m.weight !== 0) },
    ]);
    return { format: 'conversation', segments };
  }
  if (typeof sample.prompt === 'string')
    return {
      format: 'instruction',
      segments: [
        { text: sample.prompt, trained: trainOnInputs },
        { text: sample.completion, trained: true },
      ],
    };
  return { format: 'general', segments: [{ text: sample.text, trained: true }] };
}

/** One row's tokens, labels and trained spans (half-open token ranges), cut to `maxSeq` tokens. */
export function tokenizeRow(segments: Segment[], maxSeq: number): Row {
  const ids: number[] = [];
  const trained: boolean[] = [];
  for (const s of segments) {
    // Encoding stops once the row is past maxSeq: a long row costs maxSeq's work, not its own length.
    const part = encode(s.text, maxSeq - ids.length);
    ids.push(...part);
    trained.push(...part.map(() => s.trained));
    if (ids.length > maxSeq) break;
  }
  const truncated = ids.length > maxSeq;
  const input_ids = ids.slice(0, maxSeq);
  const mask = trained.slice(0, maxSeq);
  const spans: number[][] = [];
  mask.forEach((on, i) => {
    if (!on) return;
    const last = spans.at(-1);
    if (last && last[1] === i) last[1] = i + 1;
    else spans.push([i, i + 1]);
  });
  return {
    input_ids,
    tokens: input_ids.map((id) => decode([id])),
    labels: input_ids.map((id, i) => (mask[i] ? id : IGNORED)),
    trained_spans: spans,
    num_tokens: input_ids.length,
    num_trained_tokens: mask.filter(Boolean).length,
    truncated,
  };
}

/** The first `topK` samples of a validated JSON Lines training file (blank lines skipped). */
export async function firstSamples(path: string, topK: number): Promise<Record<string, any>[]> {
  const samples: Record<string, any>[] = [];
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      if (!line.trim()) continue;
      samples.push(JSON.parse(line));
      if (samples.length === topK) break;
    }
  } finally {
    lines.close();
  }
  return samples;
}

/** The preview of `samples`: one format for all (the file's, as its validation found it), each row tokenized. */
export function preview(samples: Record<string, any>[], trainOnInputs: boolean, maxSeq: number): { format: Format; rows: Row[] } {
  if (samples.some((s) => 'preferred_output' in s)) {
    throw badRequest(
      'A preference (DPO) dataset has no SFT preview: the preview takes conversation, instruction and plain-text datasets.',
      'training_file',
      'preview_not_available',
    );
  }
  const rows = samples.map((s) => segmentsOf(s, trainOnInputs));
  return { format: rows[0]?.format ?? 'general', rows: rows.map((r) => tokenizeRow(r.segments, maxSeq)) };
}
