// Batches: a JSON Lines file of chat requests (and audio by URL) run by the runner through the single requests' path, answers and errors
// written to Files in input order; bad lines to the error file; cancel; expiry past job_deadline; lists; another
// project's batch 404; the official client's batches.create/retrieve/list/cancel.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPlatformClient } from '@inference-platform/client';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../server/core/config.ts';
import { CHUNK_LINES } from '../server/modules/batches/run.ts';
import { expectError } from './support/expect.ts';
import { uploadFile } from './support/files.ts';
import { type Caller, localUrls, startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
/** More lines than one chunk runs (a chunk may also stop early, after its time), and the progress of `done` of them. */
const LONG = CHUNK_LINES + 70;
const progressOf = (done: number) => Math.floor((done * 10_000) / LONG) / 100;
const line = (id: string, content: string, extra: Record<string, unknown> = {}) => ({
  custom_id: id,
  body: { model: CHAT, messages: [{ role: 'user', content }], max_tokens: 8, ...extra },
});

let t: TestPlatform;
/** Chunks an hour apart on the test clock, so a test can stop a batch between two. */
let slow: TestPlatform;
beforeAll(async () => {
  // Limits well above these tests' lines (one test below holds a batch back by them on purpose).
  const rateLimits = { ...loadConfig({}).rateLimits, baseRequests: 1000, baseTokens: 2_000_000 };
  t = await startTestPlatform({ config: { rateLimits } });
  const base = loadConfig({});
  // Without limits: a chunk there ends only at its size or its time (a window of the limiter's wall clock would cut
  // chunks as the machine's speed decides).
  slow = await startTestPlatform({ config: { rateLimits: { ...rateLimits, enabled: false }, durations: { ...base.durations, batch_chunk: 3_600_000 } } });
});
afterAll(async () => {
  await t?.close();
  await slow?.close();
});

async function createBatch(caller: Caller, rows: unknown[] | string, extra: Record<string, unknown> = {}) {
  const input = await uploadFile(caller, 'batch-api', rows, 'batch.jsonl');
  const res = await caller.http.post('/v1/batches').send({ endpoint: '/v1/chat/completions', input_file_id: input, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.job;
}

/** Runs the runner until the batch has ended. */
async function finish(id: string, caller = t.caller, on: TestPlatform = t) {
  for (let i = 0; i < 200; i++) {
    const b = (await caller.http.get(`/v1/batches/${id}`)).body;
    if (!['VALIDATING', 'IN_PROGRESS'].includes(b.status)) return b;
    await on.advance(on === slow ? 3_600_000 : 1000);
  }
  throw new Error('the batch did not end');
}

async function lines(caller: Caller, fileId: string) {
  const res = await caller.http
    .get(`/v1/files/${fileId}/content`)
    .buffer(true)
    .parse((r, cb) => {
      let s = '';
      r.on('data', (c) => (s += c));
      r.on('end', () => cb(null, s));
    });
  expect(res.status).toBe(200);
  return (res.body as string)
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}

describe('a batch runs end to end', () => {
  test('chat lines are answered in order in the output file, bad lines errored in order in the error file', async () => {
    const rows = [
      line('a', 'Hello there'),
      'not json at all',
      line('b', 'Second request'),
      { custom_id: 'c' },
      line('a', 'a repeated custom_id'),
      line('d', 'streamed', { stream: true }),
      line('e', 'bad role', { messages: [{ role: 'wizard', content: 'x' }] }),
      line('f', 'unknown model', { model: 'no/such-model' }),
      '',
      // Fields the contract does not declare are ignored, as in a single request (open bodies).
      line('g', 'Last one', { store: true, metadata: { run: 'ci' } }),
    ].map((r) => (typeof r === 'string' ? r : JSON.stringify(r)));
    const job = await createBatch(t.caller, rows.join('\n'));
    expect(job).toMatchObject({ status: 'VALIDATING', endpoint: '/v1/chat/completions', progress: 0, user_id: t.caller.identity.apiKeyId });
    expect(job.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Date.parse(job.job_deadline) - Date.parse(job.created_at)).toBe(24 * 3600_000);
    const done = await finish(job.id);
    expect(done).toMatchObject({ status: 'COMPLETED', progress: 100 });
    expect(done.completed_at).toBeDefined();
    const out = await lines(t.caller, done.output_file_id);
    expect(out.map((l) => l.custom_id)).toEqual(['a', 'b', 'g']);
    for (const l of out) {
      expect(l.response.status_code).toBe(200);
      expect(l.response.body.object).toBe('chat.completion');
      expect(l.response.body.model).toBe(CHAT);
      expect(l.error).toBeNull();
    }
    const errors = await lines(t.caller, done.error_file_id);
    expect(errors.map((l) => [l.line, l.custom_id, l.response.status_code, l.error.code])).toEqual([
      [2, null, 400, 'invalid_json'],
      [4, 'c', 400, 'invalid_body'],
      [5, 'a', 400, 'duplicate_custom_id'],
      [6, 'd', 400, 'stream_not_supported'],
      [7, 'e', 400, 'enum'],
      [8, 'f', 404, 'model_not_found'],
    ]);
    expect(errors[4].response.body.error.param).toBe('body.messages.0.role');
    // The result files are the project's, in Files.
    const listed = (await t.caller.http.get(`/v1/files/${done.output_file_id}`)).body;
    expect(listed).toMatchObject({ purpose: 'batch-api', FileType: 'jsonl' });
  });

  test('a file over one chunk runs in several; progress moves between them', async () => {
    const rows = Array.from({ length: LONG }, (_, i) => line(`r${i}`, `request number ${i}`));
    // A window of 30 days holds 720 chunks an hour apart: more than lines, however slowly each chunk runs.
    const job = await createBatch(slow.caller, rows, { completion_window: '30d' });
    await slow.advance(0); // validated
    await slow.advance(3_600_000); // the first chunk
    const mid = (await slow.caller.http.get(`/v1/batches/${job.id}`)).body;
    expect(mid.status).toBe('IN_PROGRESS');
    expect(mid.progress).toBeGreaterThan(0);
    expect(mid.progress).toBeLessThan(100);
    const done = await finish(job.id, slow.caller, slow);
    expect(done.status).toBe('COMPLETED');
    const out = await lines(slow.caller, done.output_file_id);
    expect(out.map((l) => l.custom_id)).toEqual(rows.map((r) => r.custom_id));
    expect(done.error_file_id).toBeUndefined();
  });

  test('a batch holds its input file until it has ended; its result files are not held', async () => {
    const input = await uploadFile(t.caller, 'batch-api', [line('h1', 'hold')]);
    const job = (await t.caller.http.post('/v1/batches').send({ endpoint: '/v1/chat/completions', input_file_id: input })).body.job;
    const refused = await t.caller.http.delete(`/v1/files/${input}`);
    expectError(refused, 409, { code: 'file_in_use', param: 'id' });
    expect(refused.body.error.message).toContain(`batch '${job.id}', which is VALIDATING`);
    const done = await finish(job.id);
    expect((await t.caller.http.delete(`/v1/files/${done.output_file_id}`)).status).toBe(200);
    expect((await t.caller.http.delete(`/v1/files/${input}`)).status).toBe(200);
  });

  test('a file with no requests fails the batch, saying why', async () => {
    const job = await createBatch(t.caller, '\n\n');
    const done = await finish(job.id);
    expect(done.status).toBe('FAILED');
    expect(done.error).toMatch(/no requests/);
  });
});

describe('cancel and expiry', () => {
  test('cancel ends a running batch CANCELLED keeping the lines done; cancelling again is 409', async () => {
    const rows = Array.from({ length: LONG }, (_, i) => line(`c${i}`, `cancel me ${i}`));
    const job = await createBatch(slow.caller, rows);
    await slow.advance(0);
    await slow.advance(3_600_000);
    const res = await slow.caller.http.post(`/v1/batches/${job.id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('CANCELLED');
    expect(res.body.completed_at).toBeDefined();
    const out = await lines(slow.caller, res.body.output_file_id);
    expect(out.length).toBeGreaterThan(0);
    expect(out.length).toBeLessThanOrEqual(CHUNK_LINES);
    expect(out.map((l) => l.custom_id)).toEqual(rows.slice(0, out.length).map((r) => r.custom_id));
    await slow.advance(3_600_000);
    expect((await slow.caller.http.get(`/v1/batches/${job.id}`)).body).toMatchObject({ status: 'CANCELLED', progress: progressOf(out.length) });
    expectError(await slow.caller.http.post(`/v1/batches/${job.id}/cancel`), 409, { code: 'invalid_state_transition' });
  });

  test('a batch past its job_deadline ends EXPIRED with its done lines kept', async () => {
    const rows = Array.from({ length: LONG }, (_, i) => line(`x${i}`, `expire me ${i}`));
    // Chunks an hour apart: the first runs within the 90 minutes, the second would not.
    const job = await createBatch(slow.caller, rows, { completion_window: '90m' });
    expect(Date.parse(job.job_deadline) - Date.parse(job.created_at)).toBe(90 * 60_000);
    const control = createPlatformClient({ baseUrl: slow.url, apiKey: TEST_CONTROL_KEY });
    const { response } = await control.POST('/_control/time/advance', { body: { seconds: 3 * 3600 } });
    expect(response.status).toBe(200);
    await slow.services.runner.drain();
    const done = (await slow.caller.http.get(`/v1/batches/${job.id}`)).body;
    const out = await lines(slow.caller, done.output_file_id);
    expect(out.length).toBeGreaterThan(0);
    expect(out.length).toBeLessThan(LONG);
    expect(done).toMatchObject({ status: 'EXPIRED', progress: progressOf(out.length) });
    expect(done.error).toContain(`completion window (90m): ${out.length} of ${LONG}`);
    expect(out.map((l) => l.custom_id)).toEqual(rows.slice(0, out.length).map((r) => r.custom_id));
  });
});

describe('rate limits', () => {
  test("a line the organization's limit refuses waits for its window, it is not errored", async () => {
    const caller = await t.newCaller();
    const control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
    const organization_id = caller.identity.organizationId;
    await control.PATCH('/_control/rate-limits', {
      body: { organization_id, model: CHAT, limit: { requests: 2 }, usage: { requests: 2 }, resets_in_ms: 60_000 },
    });
    const job = await createBatch(caller, [line('l1', 'one'), line('l2', 'two')]);
    await t.advance(0);
    await t.advance(0);
    expect((await caller.http.get(`/v1/batches/${job.id}`)).body).toMatchObject({ status: 'IN_PROGRESS', progress: 0 });
    // The window ends: both lines run, counted as requests of the organization.
    await control.PATCH('/_control/rate-limits', { body: { organization_id, model: CHAT, usage: { requests: 0, tokens: 0 }, resets_in_ms: 60_000 } });
    const done = await finish(job.id, caller);
    expect(done).toMatchObject({ status: 'COMPLETED', progress: 100 });
    expect(done.error_file_id).toBeUndefined();
    const { data } = await control.GET('/_control/rate-limits', { params: { query: { organization_id, model: CHAT } } });
    expect(data!.usage.requests).toBe(2);
  });
});

describe('the request', () => {
  test('input file, completion_window and model_id are checked before anything is stored', async () => {
    const before = (await t.caller.http.get('/v1/batches')).body.length;
    expectError(await t.caller.http.post('/v1/batches').send({ endpoint: '/v1/chat/completions', input_file_id: 'file-nope' }), 404, {
      code: 'file_not_found',
      param: 'input_file_id',
    });
    const evalFile = await uploadFile(t.caller, 'eval', [{ a: 1 }]);
    expectError(await t.caller.http.post('/v1/batches').send({ endpoint: '/v1/chat/completions', input_file_id: evalFile }), 400, {
      code: 'invalid_file',
      param: 'input_file_id',
    });
    const input = await uploadFile(t.caller, 'batch-api', [line('a', 'x')]);
    for (const w of ['0h', '24', '31d', 'soon'])
      expectError(await t.caller.http.post('/v1/batches').send({ endpoint: '/v1/chat/completions', input_file_id: input, completion_window: w }), 400, {
        param: 'completion_window',
      });
    expectError(await t.caller.http.post('/v1/batches').send({ endpoint: '/v1/chat/completions', input_file_id: input, model_id: 'no/such-model' }), 404, {
      code: 'model_not_found',
      param: 'model_id',
    });
    expectError(await t.caller.http.post('/v1/batches').send({ endpoint: '/v1/embeddings', input_file_id: input }), 400, { param: 'endpoint' });
    expect((await t.caller.http.get('/v1/batches')).body.length).toBe(before);
  });

  test('model_id fills lines without a model and errors lines naming another', async () => {
    const rows = [
      { custom_id: 'm1', body: { messages: [{ role: 'user', content: 'hi' }] } },
      line('m2', 'other', { model: 'Qwen/Qwen2.5-72B-Instruct-Turbo' }),
    ];
    const job = await createBatch(t.caller, rows, { model_id: CHAT });
    expect(job.model_id).toBe(CHAT);
    const done = await finish(job.id);
    expect((await lines(t.caller, done.output_file_id)).map((l) => l.response.body.model)).toEqual([CHAT]);
    expect((await lines(t.caller, done.error_file_id)).map((l) => l.error.code)).toEqual(['model_mismatch']);
  });

  test('audio lines are transcribed (and translated) from their URL exactly as the single request; a line without a URL is its error', async () => {
    // A platform that may fetch this machine's addresses, and a server of one spoken WAV file.
    const dir = mkdtempSync(join(tmpdir(), 'batch-audio-'));
    const wav = join(dir, 'speech.wav');
    execFileSync('espeak-ng', ['-v', 'en-us+klatt', '-s', '140', '-w', wav, 'The weather is nice today.']);
    const files = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'audio/wav' }).end(readFileSync(wav)));
    await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(files.address() as AddressInfo).port}/speech.wav`;
    const local = await startTestPlatform({ config: { urlFetch: localUrls } });
    try {
      for (const [endpoint, single] of [
        ['/v1/audio/transcriptions', '/v1/audio/transcriptions'],
        ['/v1/audio/translations', '/v1/audio/translations'],
      ] as const) {
        const rows = [
          { custom_id: 'a1', body: { file: url, response_format: 'verbose_json' } },
          { custom_id: 'a2', body: { file: 'not a url' } },
        ];
        const input = await uploadFile(local.caller, 'batch-api', rows, 'audio.jsonl');
        const res = await local.caller.http.post('/v1/batches').send({ endpoint, input_file_id: input, priority: 1 });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        expect(res.body.warning).toMatch(/priority/);
        const done = await finish(res.body.job.id, local.caller, local);
        expect(done.status).toBe('COMPLETED');
        const [out] = await lines(local.caller, done.output_file_id);
        const direct = await local.caller.http.post(single).field('file', url).field('response_format', 'verbose_json');
        expect(direct.status).toBe(200);
        expect(out.response.body).toEqual(direct.body);
        expect(out.response.body.text.length).toBeGreaterThan(0);
        const [error] = await lines(local.caller, done.error_file_id);
        expect([error.custom_id, error.response.status_code, error.response.body.error.param]).toEqual(['a2', 400, 'file']);
      }
    } finally {
      await local.close();
      files.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('lists and scoping', () => {
  test("newest first, the project's only; another project's batch is 404 like an absent one", async () => {
    const other = await t.newCaller();
    const a = await createBatch(other, [line('o1', 'one')]);
    const b = await createBatch(other, [line('o2', 'two')]);
    const listed = (await other.http.get('/v1/batches')).body;
    expect(listed.map((x: { id: string }) => x.id)).toEqual([b.id, a.id]);
    expect((await other.http.get('/v1/batches').query({ limit: 1 })).body).toHaveLength(1);
    expectError(await other.http.get('/v1/batches').query({ limit: -1 }), 400, { param: 'limit' });
    expect((await t.caller.http.get('/v1/batches')).body.map((x: { id: string }) => x.id)).not.toContain(a.id);
    expectError(await t.caller.http.get(`/v1/batches/${a.id}`), 404, { param: 'id' });
    expectError(await t.caller.http.post(`/v1/batches/${a.id}/cancel`), 404, { param: 'id' });
    expectError(await t.caller.http.get('/v1/batches/00000000-0000-7000-8000-000000000000'), 404);
  });
});

describe('the official client', () => {
  test('batches.create, retrieve, list and cancel', async () => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const input = await uploadFile(t.caller, 'batch-api', [line('sdk', 'from the SDK')]);
    const created = await client.batches.create({ endpoint: '/v1/chat/completions', input_file_id: input });
    expect(created.job?.status).toBe('VALIDATING');
    const id = created.job!.id!;
    expect((await client.batches.retrieve(id)).id).toBe(id);
    expect((await client.batches.list()).map((b) => b.id)).toContain(id);
    expect((await client.batches.cancel(id)).status).toBe('CANCELLED');
    const done = await (async () => {
      const again = await client.batches.create({ endpoint: '/v1/chat/completions', input_file_id: input });
      return finish(again.job!.id!);
    })();
    expect(done.status).toBe('COMPLETED');
  });
});
