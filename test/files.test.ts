// Files: multipart upload streamed to disk, list, get, content (with Range), delete; the validation of fine-tuning
// datasets on the runner (conversation, instruction, plain text, preference, pre-tokenized parquet), with each bad
// line named and its reason; refused uploads leave nothing behind; the module's API for other modules.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { countTokens } from '../server/engines/tokens.ts';
import { findFile, readFileContent, storeFile } from '../server/modules/files/index.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const jsonl = (...rows: unknown[]) => `${rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n')}\n`;

function upload(content: Buffer | string, fields: Record<string, string> = {}, platform = t) {
  let req = platform.caller.http.post('/v1/files/upload');
  for (const [k, v] of Object.entries({ purpose: 'fine-tune', file_name: 'data.jsonl', ...fields })) req = req.field(k, v);
  return req.attach('file', Buffer.isBuffer(content) ? content : Buffer.from(content), 'data.jsonl');
}

/** Uploads, lets the runner validate, and answers the file as it then stands. */
async function validated(content: Buffer | string, fields: Record<string, string> = {}) {
  const res = await upload(content, fields);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await t.advance(0);
  return (await t.caller.http.get(`/v1/files/${res.body.id}`)).body;
}

const stored = (platform = t) => {
  const dir = join(platform.config.dataDir, 'files', platform.caller.identity.projectId);
  return existsSync(dir) ? readdirSync(dir) : [];
};
const incoming = (platform = t) => (existsSync(join(platform.config.dataDir, 'incoming')) ? readdirSync(join(platform.config.dataDir, 'incoming')) : []);

/** Waits (up to a second) until `read()` equals `want`: a refused upload's part is removed as its response closes. */
async function settles<T>(read: () => T, want: T) {
  for (let i = 0; i < 50 && JSON.stringify(read()) !== JSON.stringify(want); i++) await new Promise((r) => setTimeout(r, 20));
  expect(read()).toEqual(want);
}

const chat = (user: string, assistant: string) => ({
  messages: [
    { role: 'user', content: user },
    { role: 'assistant', content: assistant },
  ],
});

describe('upload, then validation on the runner', () => {
  test('a conversation dataset: PENDING at upload, then COMPLETED with its report (format, samples, tokens)', async () => {
    const content = jsonl(chat('Hello', 'Hi there!'), { messages: [{ role: 'system', content: 'Be brief.' }, ...chat('2+2?', '4').messages] });
    const res = await upload(content);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      object: 'file',
      filename: 'data.jsonl',
      purpose: 'fine-tune',
      FileType: 'jsonl',
      bytes: Buffer.byteLength(content),
      Processed: false,
      processing_status: 'PENDING',
    });
    expect(res.body.id).toMatch(/^file-[0-9a-z]{26}$/);
    expect(res.body.validation_report).toBeUndefined();
    expect(stored()).toContain(res.body.id);

    await t.advance(0);
    const f = (await t.caller.http.get(`/v1/files/${res.body.id}`)).body;
    expect(f).toMatchObject({ processing_status: 'COMPLETED', Processed: true });
    expect(f.validation_report).toEqual({
      valid: true,
      file_id: res.body.id,
      nlines: 2,
      dataset_format: 'CONVERSATION',
      dataset_has_sample_weights: false,
      dataset_has_message_weights: false,
      dataset_is_multimodal: false,
      dataset_has_tools: false,
      dataset_has_parallel_tool_calls: false,
      dataset_has_reasoning: false,
      token_count: countTokens('Hello\nHi there!') + countTokens('Be brief.\n2+2?\n4'),
    });
  });

  test('instruction, plain text and preference datasets are valid; blank lines are skipped', async () => {
    const instruction = await validated(jsonl({ prompt: 'Q: 1+1?', completion: ' 2' }, '', { prompt: 'Q: 2+2?', completion: ' 4' }));
    expect(instruction.validation_report).toMatchObject({
      valid: true,
      dataset_format: 'INSTRUCTION',
      nlines: 2,
      token_count: countTokens('Q: 1+1? 2') + countTokens('Q: 2+2? 4'),
    });
    const text = await validated(jsonl({ text: 'Once upon a time.' }));
    expect(text.validation_report).toMatchObject({ valid: true, dataset_format: 'GENERAL', nlines: 1 });
    const preference = await validated(
      jsonl({
        input: { messages: [{ role: 'user', content: 'Hi' }] },
        preferred_output: [{ role: 'assistant', content: 'Hello!' }],
        non_preferred_output: [{ role: 'assistant', content: 'Go away.' }],
      }),
    );
    expect(preference.validation_report).toMatchObject({ valid: true, dataset_format: 'PREFERENCE' });
    const weighted = await validated(
      jsonl({
        messages: [
          { role: 'user', content: 'a', weight: 0 },
          { role: 'assistant', content: 'b', weight: 1 },
        ],
      }),
    );
    expect(weighted.validation_report).toMatchObject({ valid: true, dataset_has_message_weights: true });
  });

  test('INVALID_FORMAT: every bad line is named with its reason; the good lines are not', async () => {
    const f = await validated(
      jsonl(
        chat('ok', 'fine'),
        '{"messages": [',
        {
          messages: [
            { role: 'user', content: 'a' },
            { role: 'user', content: 'b' },
          ],
        },
        { messages: [{ role: 'user', content: 'no answer' }] },
        {
          messages: [
            { role: 'robot', content: 'x' },
            { role: 'assistant', content: 'y' },
          ],
        },
        { messages: 'not a list' },
        { prompt: 'only a prompt' },
        { text: 5 },
        { foo: 'bar' },
        [1, 2],
        { text: 'a plain text line among conversations' },
        {
          messages: [
            { role: 'user', content: 'a', weight: 2 },
            { role: 'assistant', content: 'b' },
          ],
        },
        chat('also', 'fine'),
      ),
    );
    expect(f.processing_status).toBe('INVALID_FORMAT');
    expect(f.Processed).toBe(true);
    const r = f.validation_report;
    expect(r).toMatchObject({ valid: false, error_type: 'INVALID_FORMAT', nlines: 13, dataset_format: 'CONVERSATION' });
    expect(r.line_errors.map((e: { line: number }) => e.line)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const reason = (line: number) => r.line_errors.find((e: { line: number }) => e.line === line).reason;
    expect(reason(2)).toMatch(/not valid JSON/);
    expect(reason(3)).toMatch(/alternate between user and assistant/);
    expect(reason(4)).toMatch(/assistant role/);
    expect(reason(5)).toMatch(/invalid role `robot`/);
    expect(reason(6)).toMatch(/`messages` must be a list/);
    expect(reason(7)).toMatch(/`completion` is missing/);
    expect(reason(8)).toMatch(/`text` must be a string/);
    expect(reason(9)).toMatch(/no dataset format matches the fields `foo`/);
    expect(reason(10)).toMatch(/JSON object \(found array\)/);
    expect(reason(11)).toMatch(/one format: this line is GENERAL, the first sample CONVERSATION/);
    expect(reason(12)).toMatch(/`weight` must be 0 or 1/);
    expect(r.error).toMatch(/^Line 2: .*\(11 bad lines in all\.\)$/);
    expect(r.token_count).toBeUndefined();
  });

  test('a file of blank lines has no sample: INVALID_FORMAT', async () => {
    const f = await validated('\n\n  \n');
    expect(f.processing_status).toBe('INVALID_FORMAT');
    expect(f.validation_report.line_errors).toEqual([{ line: 0, reason: 'the file has no sample.' }]);
  });

  test('parquet: pre-tokenized rows are valid (tokens counted from input_ids); a bad row or column is named', async () => {
    const ok = await validated(
      listParquet(
        [
          [1, 2, 3],
          [4, 5],
        ],
        [
          [1, 1, 1],
          [1, 1],
        ],
      ),
      { file_type: 'parquet', file_name: 'data.parquet' },
    );
    expect(ok.processing_status, JSON.stringify(ok.validation_report)).toBe('COMPLETED');
    expect(ok.validation_report).toMatchObject({ valid: true, dataset_format: 'TOKENIZED', nlines: 2, token_count: 5 });

    const badRow = await validated(
      listParquet(
        [
          [1, 2, 3],
          [4, 5],
        ],
        [[1, 1, 1], [1]],
      ),
      { file_type: 'parquet', file_name: 'bad.parquet' },
    );
    expect(badRow.processing_status).toBe('INVALID_FORMAT');
    expect(badRow.validation_report.line_errors).toEqual([{ line: 2, reason: '`attention_mask` must be a list of integers as long as `input_ids` (2).' }]);

    const extra = await validated(Buffer.from(parquetWriteBuffer({ columnData: [{ name: 'text', data: ['hello'], type: 'STRING' }] })), {
      file_type: 'parquet',
      file_name: 'text.parquet',
    });
    expect(extra.processing_status).toBe('INVALID_FORMAT');
    expect(extra.validation_report.line_errors[0]).toEqual({ line: 0, reason: 'a parquet dataset needs an `input_ids` column (pre-tokenized rows).' });

    const notParquet = await validated('{"text": "hello"}\n', { file_type: 'parquet', file_name: 'fake.parquet' });
    expect(notParquet.processing_status).toBe('INVALID_FORMAT');
    expect(notParquet.validation_report.line_errors[0].reason).toMatch(/not a readable parquet file/);
  });

  test('eval and batch-api files are COMPLETED at once (not validated as training data); csv is taken for them', async () => {
    const res = await upload('a,b\n1,2\n', { purpose: 'eval', file_type: 'csv', file_name: 'eval.csv' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ purpose: 'eval', FileType: 'csv', processing_status: 'COMPLETED', Processed: true });
    const batch = await upload(jsonl({ custom_id: '1', body: {} }), { purpose: 'batch-api' });
    expect(batch.body).toMatchObject({ purpose: 'batch-api', FileType: 'jsonl', processing_status: 'COMPLETED' });
  });
});

/** A parquet file of `input_ids` and `attention_mask` as lists of integers. */
function listParquet(ids: number[][], mask: number[][]): Buffer {
  return Buffer.from(
    parquetWriteBuffer({
      columnData: [
        { name: 'input_ids', data: ids },
        { name: 'attention_mask', data: mask },
      ],
    }),
  );
}

describe('refused uploads: 4xx naming the field, nothing kept', () => {
  test('csv for fine-tuning, parquet for an evaluation: 400 naming file_type', async () => {
    const before = stored();
    expectError(await upload('a,b\n', { file_type: 'csv' }), 400, { code: 'unsupported_file_type', param: 'file_type' });
    expectError(await upload('x', { purpose: 'eval', file_type: 'parquet' }), 400, { code: 'unsupported_file_type', param: 'file_type' });
    await settles(stored, before);
    await settles(incoming, []);
  });

  test('missing or wrong fields: 400 naming them', async () => {
    expectError(await t.caller.http.post('/v1/files/upload').field('purpose', 'fine-tune').field('file_name', 'x.jsonl'), 400, { param: 'file' });
    expectError(await t.caller.http.post('/v1/files/upload').field('file_name', 'x.jsonl').attach('file', Buffer.from('{}'), 'x.jsonl'), 400, {
      param: 'purpose',
    });
    expectError(await upload('{}', { purpose: 'training' }), 400, { param: 'purpose' });
    expectError(await upload('{}', { file_type: 'txt' }), 400, { param: 'file_type' });
    expectError(await upload('{}', { file_name: '' }), 400, { param: 'file_name' });
    expectError(await upload('', {}), 400, { code: 'empty_file', param: 'file' });
    await settles(incoming, []);
  });

  test('a JSON body: 415', async () => {
    expectError(await t.caller.http.post('/v1/files/upload').send({ purpose: 'fine-tune', file_name: 'x' }), 415, { code: 'unsupported_media_type' });
  });
});

describe('list, get, content, delete', () => {
  test("the project's files, newest first; content as uploaded, with Range; delete removes row and bytes", async () => {
    const other = await t.newCaller();
    const a = (await upload(jsonl({ text: 'first' }))).body;
    t.clock.advance(1000);
    const b = (await upload(jsonl({ text: 'second file' }), { file_name: 'b.jsonl' })).body;
    const list = (await t.caller.http.get('/v1/files')).body;
    expect(list.object).toBe('list');
    const ids = list.data.map((f: { id: string }) => f.id);
    expect(ids[0]).toBe(b.id);
    expect(ids).toContain(a.id);
    expect((await other.http.get('/v1/files')).body.data).toEqual([]);

    const content = await t.caller.http.get(`/v1/files/${b.id}/content`).buffer(true);
    expect(content.status).toBe(200);
    expect(content.headers['content-type']).toMatch(/^text\/plain/);
    expect(content.text).toBe(jsonl({ text: 'second file' }));
    const part = await t.caller.http.get(`/v1/files/${b.id}/content`).set('Range', 'bytes=2-5').buffer(true);
    expect(part.status).toBe(206);
    expect(part.text).toBe('text');
    expectError(await t.caller.http.get(`/v1/files/${b.id}/content`).set('Range', 'bytes=9000-9999'), 416, { code: 'range_not_satisfiable' });

    expect((await t.caller.http.delete(`/v1/files/${a.id}`)).body).toEqual({ id: a.id, deleted: true });
    expect(stored()).not.toContain(a.id);
    expectError(await t.caller.http.get(`/v1/files/${a.id}`), 404, { param: 'id' });
    expectError(await t.caller.http.delete(`/v1/files/${a.id}`), 404, { param: 'id' });
    expectError(await t.caller.http.get(`/v1/files/${a.id}/content`), 404, { param: 'id' });
  });

  test("the module's API: store a project's file from a stream, find it, read it back as a stream", async () => {
    async function* lines() {
      for (let i = 0; i < 1000; i++) yield `{"i": ${i}}\n`;
    }
    const f = await storeFile(t.services, { projectId: t.caller.identity.projectId, filename: 'results.jsonl', purpose: 'eval', fileType: 'jsonl' }, lines());
    expect(f.status).toBe('COMPLETED');
    expect(await findFile(t.services, 'another-project', f.id)).toBeNull();
    const found = (await findFile(t.services, t.caller.identity.projectId, f.id))!;
    let text = '';
    for await (const chunk of readFileContent(t.services, found)) text += chunk;
    expect(text.split('\n')).toHaveLength(1001);
    expect(Number(found.bytes)).toBe(Buffer.byteLength(text));
    expect((await t.caller.http.get(`/v1/files/${f.id}`)).body).toMatchObject({ filename: 'results.jsonl', purpose: 'eval', processing_status: 'COMPLETED' });
  });
});

describe('limits and failures', () => {
  let small: TestPlatform;
  beforeAll(async () => {
    small = await startTestPlatform({ config: { filesMaxBytes: 1000 }, runner: { maxFailures: 1 } });
  });
  afterAll(() => small?.close());

  test('a file over FILES_MAX_BYTES: 413 file_too_large, nothing kept', async () => {
    expectError(await upload('x'.repeat(5000), {}, small), 413, { code: 'file_too_large', param: 'file' });
    await settles(() => stored(small), []);
    await settles(() => incoming(small), []);
  });

  test('exactly FILES_MAX_BYTES is taken; one byte more is 413', async () => {
    const line = (bytes: number) => `{"text": "${'y'.repeat(bytes - 13)}"}\n`;
    expect(line(1000)).toHaveLength(1000);
    const at = await upload(line(1000), {}, small);
    expect(at.status, JSON.stringify(at.body)).toBe(200);
    expect(at.body.bytes).toBe(1000);
    expectError(await upload(line(1001), {}, small), 413, { code: 'file_too_large', param: 'file' });
  });

  test('a dataset whose bytes cannot be read: FAILED, with the reason', async () => {
    const res = await upload(jsonl({ text: 'x' }), {}, small);
    const { rmSync } = await import('node:fs');
    rmSync(join(small.config.dataDir, 'files', small.caller.identity.projectId, res.body.id));
    await small.advance(0);
    const f = (await small.caller.http.get(`/v1/files/${res.body.id}`)).body;
    expect(f.processing_status).toBe('FAILED');
    expect(f.validation_report).toMatchObject({ valid: false });
    expect(f.validation_report.error).toMatch(/could not be read.*ENOENT/);
  });
});
