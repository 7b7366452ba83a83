// POST /v1/fine-tunes/preview: the first rows of a training file, tokenized as SFT trains on them (cl100k_base, a
// plain role template), checked against token counts computed here from the same tokenizer: the loss mask of each
// format, train_on_inputs, message weights, truncation at the model's sequence length, top_k, every refusal, and
// the official together-ai client's fineTuning.preview.
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { decode, encode } from '../server/engines/tokens.ts';
import { expectError } from './support/expect.ts';
import { uploadFile } from './support/files.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
const SHORT = 'meta-llama/Llama-2-7b-hf';
let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

/** Uploads and validates a training file. */
async function dataset(rows: unknown[] | string, purpose: 'fine-tune' | 'eval' = 'fine-tune') {
  const id = await uploadFile(t.caller, purpose, rows);
  await t.advance(0);
  return id;
}
const previewOf = (body: Record<string, unknown>) => t.caller.http.post('/v1/fine-tunes/preview').send({ model: BASE, ...body });
const ok = async (body: Record<string, unknown>) => {
  const res = await previewOf(body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

describe('the loss mask of each format', () => {
  test('a conversation trains its assistant content only; its tokens, labels and span line up', async () => {
    const file = await dataset([
      {
        messages: [
          { role: 'user', content: 'Hi there' },
          { role: 'assistant', content: 'Hello!' },
        ],
      },
    ]);
    const body = await ok({ training_file: file });
    expect(body).toMatchObject({ model: BASE, dataset_format: 'conversation', train_on_inputs: false, max_seq_length: expect.any(Number) });
    const [row] = body.rows;
    const masked = [...encode('user: '), ...encode('Hi there\n'), ...encode('assistant: ')];
    const trained = encode('Hello!\n');
    expect(row.input_ids).toEqual([...masked, ...trained]);
    expect(row.labels).toEqual([...masked.map(() => -100), ...trained]);
    expect(row.trained_spans).toEqual([[masked.length, masked.length + trained.length]]);
    expect(row).toMatchObject({ num_tokens: masked.length + trained.length, num_trained_tokens: trained.length, truncated: false });
    expect(row.tokens).toEqual(row.input_ids.map((id: number) => decode([id])));
    expect(row.tokens.join('')).toBe('user: Hi there\nassistant: Hello!\n');
  });

  test('train_on_inputs trains every token; an assistant message of weight 0 is masked', async () => {
    const file = await dataset([
      {
        messages: [
          { role: 'user', content: 'A' },
          { role: 'assistant', content: 'first', weight: 0 },
          { role: 'user', content: 'B' },
          { role: 'assistant', content: 'second' },
        ],
      },
    ]);
    const all = (await ok({ training_file: file, train_on_inputs: true })).rows[0];
    expect(all.trained_spans).toEqual([[0, all.num_tokens]]);
    expect(all.labels).toEqual(all.input_ids);
    const masked = (await ok({ training_file: file })).rows[0];
    // Each segment (role prefix, content) is tokenized on its own, as SFT tokenizes message by message.
    const before = ['user: ', 'A\n', 'assistant: ', 'first\n', 'user: ', 'B\n', 'assistant: '].reduce((n, s) => n + encode(s).length, 0);
    expect(masked.trained_spans).toEqual([[before, before + encode('second\n').length]]);
    expect(masked.num_trained_tokens).toBe(encode('second\n').length);
  });

  test('an instruction trains its completion, a plain text all of it', async () => {
    const ins = await ok({ training_file: await dataset([{ prompt: 'Translate: chat', completion: ' cat' }]) });
    expect(ins.dataset_format).toBe('instruction');
    const p = encode('Translate: chat').length;
    expect(ins.rows[0].trained_spans).toEqual([[p, p + encode(' cat').length]]);
    const gen = await ok({ training_file: await dataset([{ text: 'Plain words to learn.' }]) });
    expect(gen.dataset_format).toBe('general');
    expect(gen.rows[0]).toMatchObject({
      num_tokens: encode('Plain words to learn.').length,
      num_trained_tokens: encode('Plain words to learn.').length,
      trained_spans: [[0, encode('Plain words to learn.').length]],
    });
  });
});

test("a row longer than the model's sequence length is cut there and says so; top_k takes the first rows in order", async () => {
  const long = { text: 'word '.repeat(5000) };
  const file = await dataset([long, ...[1, 2, 3, 4, 5, 6].map((i) => ({ text: `row ${i}` }))]);
  // A model of 4,096 tokens of context.
  const body = await ok({ training_file: file, top_k: 3, model: SHORT });
  expect(body.max_seq_length).toBe(4096);
  expect(body.rows).toHaveLength(3);
  expect(body.rows[0]).toMatchObject({ truncated: true, num_tokens: body.max_seq_length, num_trained_tokens: body.max_seq_length });
  expect(body.rows[0].input_ids).toHaveLength(body.max_seq_length);
  expect(body.rows.slice(1).map((r: { tokens: string[] }) => r.tokens.join(''))).toEqual(['row 1', 'row 2']);
  const limits = await t.caller.http.get('/v1/fine-tunes/models/limits').query({ model_name: SHORT });
  expect(body.max_seq_length).toBe(limits.body.max_seq_length_sft);
  expect((await ok({ training_file: file })).rows).toHaveLength(5);
});

test('refusals name the field, and nothing is written', async () => {
  const good = await dataset([{ text: 'x' }]);
  expectError(await previewOf({ training_file: 'file-nope' }), 404, { param: 'training_file', code: 'file_not_found' });
  expectError(await previewOf({ training_file: good, model: 'acme/nothing' }), 404, { param: 'model' });
  expectError(await previewOf({ training_file: good, model: 'BAAI/bge-base-en-v1.5' }), 400, { param: 'model' });
  expectError(await previewOf({ training_file: good, top_k: 0 }), 400, { param: 'top_k' });
  expectError(await previewOf({ training_file: good, top_k: 51 }), 400, { param: 'top_k' });
  expectError(await previewOf({ training_file: good, training_method: 'dpo' }), 400, { param: 'training_method' });
  expectError(await previewOf({}), 400, { param: 'training_file' });
  // Not validated yet (the runner has not run), invalid, another purpose, a preference dataset.
  const pending = await uploadFile(t.caller, 'fine-tune', [{ text: 'y' }]);
  expectError(await previewOf({ training_file: pending }), 400, { param: 'training_file', code: 'file_not_ready' });
  await t.advance(0);
  expectError(await previewOf({ training_file: await dataset('not json') }), 400, { param: 'training_file', code: 'file_invalid' });
  expectError(await previewOf({ training_file: await dataset([{ text: 'e' }], 'eval') }), 400, { param: 'training_file', code: 'file_invalid' });
  const dpo = await dataset([
    {
      input: { messages: [{ role: 'user', content: 'q' }] },
      preferred_output: [{ role: 'assistant', content: 'a' }],
      non_preferred_output: [{ role: 'assistant', content: 'b' }],
    },
  ]);
  expectError(await previewOf({ training_file: dpo }), 400, { param: 'training_file', code: 'preview_not_available' });
  // Another project's file is absent to this one.
  const theirs = await uploadFile(t.other, 'fine-tune', [{ text: 'z' }]);
  await t.advance(0);
  expectError(await previewOf({ training_file: theirs }), 404, { param: 'training_file' });
  expect((await t.other.http.post('/v1/fine-tunes/preview').send({ model: BASE, training_file: theirs })).status).toBe(200);
  expect(await t.services.db.prisma.fineTune.count()).toBe(0);
});

test('the official together-ai client previews a file', async () => {
  const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
  const file = await dataset([
    {
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello!' },
      ],
    },
  ]);
  const body = await client.fineTuning.preview({ model: BASE, training_file: file, top_k: 1 });
  expect(body.rows[0]!.num_trained_tokens).toBe(encode('Hello!\n').length);
  expect(body.dataset_format).toBe('conversation');
});
