// GET /v1/fine-tunes/{id}/download-tokenized-dataset: a signed URL of this server, and the archive at it: every valid
// sample tokenized as the preview shows it (checked against POST /v1/fine-tunes/preview), the validation set, a
// preference dataset's chosen and rejected rows; the same bytes every time; the signature's refusals; a pending
// job's 404; a deleted job's URL; and the official together-ai client's fineTuning.retrieveTokenizedDataset.
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError } from './support/expect.ts';
import { binaryBody, uploadFile } from './support/files.ts';
import { expectSignedReadFailures } from './support/outage-error.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';
import { byName, untar } from './support/tar.ts';

const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
let t: TestPlatform;
let train: string;
let validation: string;

const chat = (i: number) => ({
  messages: [
    { role: 'user', content: `Question number ${i}?` },
    { role: 'assistant', content: `Answer ${i}.` },
  ],
});
const jsonl = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

/** A GET of a URL the server handed out, as given, without a key. */
const fetchUrl = (url: string) => t.http.get(url.slice(t.url.length)).buffer(true).parse(binaryBody);

async function job(body: object) {
  const res = await t.caller.http.post('/v1/fine-tunes').send({ model: BASE, training_file: train, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as string;
}

beforeAll(async () => {
  t = await startTestPlatform();
  train = await uploadFile(
    t.caller,
    'fine-tune',
    Array.from({ length: 6 }, (_, i) => chat(i)),
  );
  validation = await uploadFile(
    t.caller,
    'fine-tune',
    Array.from({ length: 3 }, (_, i) => chat(100 + i)),
  );
  await t.advance(0);
});
afterAll(() => t?.close());

describe('a job on a conversation dataset with a validation set', () => {
  let id: string;
  let info: any;
  let archive: Buffer;
  beforeAll(async () => {
    id = await job({ validation_file: validation, n_evals: 1 });
    await t.advance(0);
    const res = await t.caller.http.get(`/v1/fine-tunes/${id}/download-tokenized-dataset`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    info = res.body;
    const got = await fetchUrl(info.url);
    expect(got.status).toBe(200);
    archive = got.body;
  });

  test('the answer: a signed URL of this server, the file name, size, type and an expiry an hour away', () => {
    expect(info.url.startsWith(`${t.url}/v1/fine-tunes/${id}/tokenized-dataset?`)).toBe(true);
    expect(new URL(info.url).searchParams.get('signature')).toBeTruthy();
    expect(info.filename).toBe(`${id}-tokenized.tar`);
    expect(info.content_type).toBe('application/x-tar');
    expect(info.size).toBe(archive.length);
    expect(Date.parse(info.expires_at) - t.clock.now()).toBeGreaterThan(3_500_000);
    expect(Date.parse(info.expires_at) - t.clock.now()).toBeLessThanOrEqual(3_600_000);
  });

  test('the archive: README, the training and validation rows as the preview tokenizes them, and meta.json', async () => {
    const members = untar(archive);
    expect(members.map((m) => m.name)).toEqual(['README.txt', 'train.jsonl', 'validation.jsonl', 'meta.json']);
    const files = byName(members);
    expect(files['README.txt']).toContain('cl100k_base');
    const rows = jsonl(files['train.jsonl']!);
    expect(rows).toHaveLength(6);
    const preview = await t.caller.http.post('/v1/fine-tunes/preview').send({ model: BASE, training_file: train, top_k: 6 });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    rows.forEach((row, i) => {
      expect(row.input_ids).toEqual(preview.body.rows[i].input_ids);
      expect(row.labels).toEqual(preview.body.rows[i].labels);
      expect(row.attention_mask).toEqual(row.input_ids.map(() => 1));
      // The user's turn is not trained on: its tokens are labelled -100, the assistant's keep their ids.
      expect(row.labels).toContain(-100);
      expect(row.labels.some((l: number) => l >= 0)).toBe(true);
    });
    expect(jsonl(files['validation.jsonl']!)).toHaveLength(3);
    const meta = JSON.parse(files['meta.json']!);
    expect(meta).toMatchObject({ job_id: id, model: BASE, tokenizer: 'cl100k_base', packing: false });
    expect(meta.train).toEqual({ file: train, rows: 6, tokens: rows.reduce((n, r) => n + r.input_ids.length, 0) });
    expect(meta.validation.rows).toBe(3);
  });

  test('the same bytes on every request, and HEAD answers its length', async () => {
    const again = await t.caller.http.get(`/v1/fine-tunes/${id}/download-tokenized-dataset`);
    expect((await fetchUrl(again.body.url)).body.equals(archive)).toBe(true);
    const head = await t.http.head(info.url.slice(t.url.length));
    expect(head.status).toBe(200);
    expect(Number(head.headers['content-length'])).toBe(archive.length);
    expect(head.headers['content-disposition']).toBe(`attachment; filename=${id}-tokenized.tar`);
  });

  test('the signature authorises exactly its URL until it expires', async () => {
    const url = new URL(info.url);
    const path = url.pathname;
    const q = Object.fromEntries(url.searchParams);
    expectError(await t.http.get(path).query({ expires: q.expires }), 403, { code: 'invalid_signature', param: 'signature' });
    expectError(await t.http.get(path).query({ ...q, expires: Number(q.expires) + 1 }), 403, { code: 'invalid_signature', param: 'signature' });
    expectError(await t.http.get(path).query({ ...q, signature: `${q.signature!.slice(0, -2)}AA` }), 403, { code: 'invalid_signature' });
    // A key is no substitute for the signature.
    expectError(await t.caller.http.get(path).query({ expires: q.expires }), 403, { code: 'invalid_signature' });
    await t.advance(3_600_000);
    expectError(await t.http.get(path).query(q), 403, { code: 'signature_expired', param: 'expires' });
  });
});

test('a pending job has no tokenized dataset yet: 404 tokenized_dataset_not_ready; once queued, it has', async () => {
  const id = await job({});
  expectError(await t.caller.http.get(`/v1/fine-tunes/${id}/download-tokenized-dataset`), 404, { code: 'tokenized_dataset_not_ready', param: 'id' });
  await t.advance(0);
  expect((await t.caller.http.get(`/v1/fine-tunes/${id}/download-tokenized-dataset`)).status).toBe(200);
});

test('a preference dataset: each sample a chosen and a rejected row', async () => {
  const pref = (i: number) => ({
    input: { messages: [{ role: 'user', content: `Pick ${i}` }] },
    preferred_output: [{ role: 'assistant', content: `Good answer ${i}` }],
    non_preferred_output: [{ role: 'assistant', content: `Bad ${i}` }],
  });
  train = await uploadFile(t.caller, 'fine-tune', [pref(1), pref(2)]);
  await t.advance(0);
  const id = await job({ training_method: { method: 'dpo' } });
  await t.advance(0);
  const info = (await t.caller.http.get(`/v1/fine-tunes/${id}/download-tokenized-dataset`)).body;
  const rows = jsonl(byName(untar((await fetchUrl(info.url)).body))['train.jsonl']!);
  expect(rows).toHaveLength(2);
  for (const r of rows) {
    expect(r.chosen.input_ids.length).toBeGreaterThan(r.rejected.input_ids.length - 5);
    expect(r.chosen.input_ids).not.toEqual(r.rejected.input_ids);
    expect(r.chosen.labels).toContain(-100);
  }
});

test("a deleted job's URL answers 404, and an unknown id 404", async () => {
  const id = await job({});
  await t.advance(0);
  const info = (await t.caller.http.get(`/v1/fine-tunes/${id}/download-tokenized-dataset`)).body;
  expect((await t.caller.http.delete(`/v1/fine-tunes/${id}`).query({ force: true })).status).toBe(200);
  expectError(await fetchUrl(info.url), 404, { type: 'not_found_error' });
  expectError(await t.caller.http.get('/v1/fine-tunes/ft-nope/download-tokenized-dataset'), 404, { param: 'id' });
});

test("the official client's fineTuning.retrieveTokenizedDataset", async () => {
  const id = await job({});
  await t.advance(0);
  const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
  const got = await client.fineTuning.retrieveTokenizedDataset(id);
  expect(got.filename).toBe(`${id}-tokenized.tar`);
  const res = await fetch(got.url);
  expect(res.status).toBe(200);
  expect((await res.arrayBuffer()).byteLength).toBe(got.size);
});

test('the signed download when the database fails: the generic 500; an outage: 503 with Retry-After', async () => {
  const id = await job({});
  await t.advance(0);
  const path = (await t.caller.http.get(`/v1/fine-tunes/${id}/download-tokenized-dataset`)).body.url.slice(t.url.length);
  await expectSignedReadFailures(t, path);
});
