// The official client's signed upload (together-ai 0.52.0 `files.upload`): POST /v1/files answers 302 with an upload
// URL of this server and the file id; the bytes are PUT there without a key, the URL's signature authorising them;
// the file is then validated as a multipart upload is. Driven with plain fetch exactly as the SDK sends it, and with
// the SDK itself (whose PUT, in 0.52.0, fails on Node 18+ before a byte leaves).
import { createReadStream, existsSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { findFile } from '../server/modules/files/index.ts';
import { expectError } from './support/expect.ts';
import { driverOutageError } from './support/outage-error.ts';
import { type Caller, startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const HOUR = 3_600_000;
const chat = (user: string, assistant: string) =>
  JSON.stringify({
    messages: [
      { role: 'user', content: user },
      { role: 'assistant', content: assistant },
    ],
  });
const dataset = `${chat('Hello', 'Hi there!')}\n${chat('2+2?', '4')}\n`;

/** The SDK's first request: form fields in both the query and the body, redirect not followed. */
async function start(fields: Record<string, string>, caller: Caller = t.caller, platform = t) {
  const params = new URLSearchParams(fields);
  return fetch(`${platform.url}/v1/files?${params}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: `Bearer ${caller.key}` },
    redirect: 'manual',
    body: params.toString(),
  });
}

/** Starts an upload and answers its URL and file id (asserting the 302). */
async function begin(fields: Record<string, string> = {}, caller: Caller = t.caller, platform = t) {
  const res = await start({ file_name: 'data.jsonl', file_type: 'jsonl', purpose: 'fine-tune', ...fields }, caller, platform);
  expect(res.status, await res.clone().text()).toBe(302);
  return { url: res.headers.get('location')!, id: res.headers.get('x-together-file-id')!, res };
}

/** The SDK's second request: the bytes, streamed, with no Authorization. */
async function put(url: string, content: string | Buffer, headers: Record<string, string> = {}) {
  const bytes = Buffer.from(content);
  const res = await fetch(url, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(bytes.length), ...headers },
    body: Readable.toWeb(Readable.from([bytes])) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.json() };
}

const get = (id: string, caller: Caller = t.caller) => caller.http.get(`/v1/files/${id}`);
const listed = async (caller: Caller = t.caller) => (await caller.http.get('/v1/files')).body.data.map((f: { id: string }) => f.id);
const stored = (platform = t) => {
  const dir = join(platform.config.dataDir, 'files', platform.caller.identity.projectId);
  return existsSync(dir) ? readdirSync(dir) : [];
};

describe('the flow, with plain fetch as the SDK sends it', () => {
  test('302 with the upload URL and id; the file awaits its bytes; the PUT stores them; the runner validates them', async () => {
    const { url, id, res } = await begin();
    expect(id).toMatch(/^file-[0-9a-z]{26}$/);
    expect(url).toMatch(new RegExp(`^${t.url}/v1/files/${id}/content\\?expires=\\d+&signature=[\\w-]+$`));
    expect(Number(new URL(url).searchParams.get('expires'))).toBe(Math.floor((t.clock.now() + HOUR) / 1000));
    const created = await res.json();
    expect(created).toMatchObject({
      id,
      object: 'file',
      filename: 'data.jsonl',
      purpose: 'fine-tune',
      FileType: 'jsonl',
      bytes: 0,
      Processed: false,
      processing_status: 'PENDING',
    });

    // Awaiting its bytes: shown (PENDING, 0 bytes), not listed, no content, absent to the other modules.
    expect((await get(id)).body).toEqual(created);
    expect(await listed()).not.toContain(id);
    expectError(await t.caller.http.get(`/v1/files/${id}/content`), 409, { code: 'file_not_uploaded', param: 'id' });
    expect(await findFile(t.services, t.caller.identity.projectId, id)).toBeNull();
    expectError(await t.caller.http.post('/v1/fine-tunes/estimate-price').send({ training_file: id }), 404, { code: 'file_not_found', param: 'training_file' });

    const uploaded = await put(url, dataset);
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    expect(uploaded.body).toMatchObject({ id, bytes: Buffer.byteLength(dataset), processing_status: 'PENDING', Processed: false });
    expect(stored()).toContain(id);
    expect(await listed()).toContain(id);

    await t.advance(0);
    const f = (await get(id)).body;
    expect(f).toMatchObject({ processing_status: 'COMPLETED', Processed: true, bytes: Buffer.byteLength(dataset) });
    expect(f.validation_report).toMatchObject({ valid: true, dataset_format: 'CONVERSATION', nlines: 2 });
    expect((await t.caller.http.get(`/v1/files/${id}/content`)).text).toBe(dataset);
    expect(await findFile(t.services, t.caller.identity.projectId, id)).not.toBeNull();
  });

  test('an invalid dataset is INVALID_FORMAT with its bad lines, as a multipart upload is', async () => {
    const { url, id } = await begin();
    expect((await put(url, `${chat('a', 'b')}\nnot json\n{"text": 1}\n`)).status).toBe(200);
    await t.advance(0);
    const f = (await get(id)).body;
    expect(f.processing_status).toBe('INVALID_FORMAT');
    expect(f.validation_report.line_errors.map((e: { line: number }) => e.line)).toEqual([2, 3]);
  });

  test('an eval file is COMPLETED once its bytes arrive (not validated as training data)', async () => {
    const { url, id } = await begin({ purpose: 'eval', file_type: 'csv', file_name: 'rows.csv' });
    const res = await put(url, 'prompt,answer\nhi,hello\n');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, purpose: 'eval', FileType: 'csv', processing_status: 'COMPLETED', Processed: true });
  });

  test('the fields may come in the body or the query alone; given both ways they must agree', async () => {
    const inBody = await fetch(`${t.url}/v1/files`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: `Bearer ${t.caller.key}` },
      redirect: 'manual',
      body: 'purpose=eval&file_name=b.jsonl',
    });
    expect(inBody.status).toBe(302);
    expect(await inBody.json()).toMatchObject({ filename: 'b.jsonl', purpose: 'eval', FileType: 'jsonl' });
    const inQuery = await t.caller.http.post('/v1/files').query({ purpose: 'eval', file_name: 'q.jsonl' });
    expect(inQuery.status).toBe(302);
    expect(inQuery.headers.location).toContain(`/v1/files/${inQuery.body.id}/content?`);
    expectError(await t.caller.http.post('/v1/files?purpose=eval').type('form').send({ purpose: 'fine-tune', file_name: 'x.jsonl' }), 400, {
      param: 'purpose',
    });
  });

  test("the multipart upload's validation: purpose, file_type, file_name, and a key", async () => {
    const bad = async (fields: Record<string, string>, param: string, code?: string) => {
      const res = await start(fields);
      expect(res.status).toBe(400);
      expectError({ status: res.status, body: await res.json(), headers: Object.fromEntries(res.headers) }, 400, { param, ...(code && { code }) });
    };
    await bad({ purpose: 'training', file_name: 'a.jsonl' }, 'purpose');
    await bad({ purpose: 'fine-tune', file_name: 'a.csv', file_type: 'csv' }, 'file_type', 'unsupported_file_type');
    await bad({ purpose: 'eval', file_name: 'a.parquet', file_type: 'parquet' }, 'file_type', 'unsupported_file_type');
    await bad({ purpose: 'fine-tune', file_name: 'a.txt', file_type: 'txt' }, 'file_type');
    await bad({ purpose: 'fine-tune' }, 'file_name', 'required');
    await bad({ file_name: 'a.jsonl' }, 'purpose', 'required');
    await bad({ purpose: 'fine-tune', file_name: 'x'.repeat(256) }, 'file_name');
    expectError(await t.http.post('/v1/files').query({ purpose: 'eval', file_name: 'a.jsonl' }), 401, { code: 'missing_api_key' });
  });
});

describe('the upload URL', () => {
  test('a bad, missing or tampered signature is 403 invalid_signature, and the file still awaits its bytes', async () => {
    const { url, id } = await begin();
    const u = new URL(url);
    const sig = u.searchParams.get('signature')!;
    const variant = (edit: (p: URLSearchParams) => void, path = u.pathname) => {
      const p = new URLSearchParams(u.search);
      edit(p);
      return `${u.origin}${path}?${p}`;
    };
    for (const bad of [
      variant((p) => p.set('signature', `${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`)),
      variant((p) => p.set('signature', 'x')),
      variant((p) => p.delete('signature')),
      variant((p) => p.set('expires', String(Number(p.get('expires')) + 3600))),
    ]) {
      expectError(await put(bad, dataset), 403, { code: 'invalid_signature', param: 'signature' });
    }
    // Refused before the body is read, which is discarded: a large one still gets its answer.
    expectError(
      await put(
        variant((p) => p.set('signature', 'x')),
        Buffer.alloc(8 * 1024 * 1024, 'z'),
      ),
      403,
      { code: 'invalid_signature' },
    );
    // Another file's id under this URL's signature.
    const other = await begin();
    expectError(
      await put(
        variant(() => {}, `/v1/files/${other.id}/content`),
        dataset,
      ),
      403,
      { code: 'invalid_signature' },
    );
    // An API key is no substitute for the signature.
    expectError(
      await put(
        variant((p) => p.delete('signature')),
        dataset,
        { Authorization: `Bearer ${t.caller.key}` },
      ),
      403,
      { code: 'invalid_signature' },
    );
    expect((await get(id)).body).toMatchObject({ processing_status: 'PENDING', bytes: 0 });
    expect(stored()).not.toContain(id);
    expect((await put(url, dataset)).status).toBe(200);
  });

  test('an expired URL is 403 signature_expired; the file still waiting then is deleted by the runner', async () => {
    const { url, id } = await begin();
    t.clock.advance(HOUR - 1000);
    const early = await begin();
    t.clock.advance(1000);
    expectError(await put(url, dataset), 403, { code: 'signature_expired', param: 'expires' });
    await t.advance(0);
    expectError(await get(id), 404, { code: 'not_found' });
    expectError(await put(url, dataset), 403, { code: 'signature_expired' });
    // A URL made later still works, and its file outlives the first one's expiry.
    expect((await get(early.id)).status).toBe(200);
    expect((await put(early.url, dataset)).status).toBe(200);
  });

  test('a second PUT after success is 409 file_already_uploaded, and the first bytes stay', async () => {
    const { url, id } = await begin();
    expect((await put(url, dataset)).status).toBe(200);
    expectError(await put(url, `${chat('other', 'bytes')}\n`), 409, { code: 'file_already_uploaded', param: 'id' });
    expect((await t.caller.http.get(`/v1/files/${id}/content`)).text).toBe(dataset);
  });

  test("two PUTs at once: one stores its bytes, the other is 409, and the stored bytes are the winner's whole", async () => {
    const { url, id } = await begin();
    const one = `${chat('one', 'first')}\n`.repeat(200);
    const two = `${chat('two', 'second')}\n`.repeat(300);
    const results = await Promise.all([put(url, one), put(url, two)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    const winner = results.find((r) => r.status === 200)!.body;
    expect([Buffer.byteLength(one), Buffer.byteLength(two)]).toContain(winner.bytes);
    expect((await t.caller.http.get(`/v1/files/${id}/content`)).text).toBe(winner.bytes === Buffer.byteLength(one) ? one : two);
  });

  test('an empty body is 400 empty_file and the URL stays usable', async () => {
    const { url, id } = await begin();
    expectError(await put(url, ''), 400, { code: 'empty_file', param: 'file' });
    expect((await get(id)).body.bytes).toBe(0);
    expect((await put(url, dataset)).status).toBe(200);
  });

  test('a file deleted before its bytes arrive: the PUT is 404', async () => {
    const { url, id } = await begin();
    expect((await t.caller.http.delete(`/v1/files/${id}`)).body).toEqual({ id, deleted: true });
    expectError(await put(url, dataset), 404, { code: 'not_found' });
    expect(stored()).not.toContain(id);
  });

  test('other media types: 415 (the POST takes a form, the PUT octet-stream)', async () => {
    expectError(await t.caller.http.post('/v1/files').send({ purpose: 'eval', file_name: 'a.jsonl' }), 415, { code: 'unsupported_media_type' });
    const { url, id } = await begin();
    const res = await fetch(url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: dataset });
    expectError({ status: res.status, body: await res.json(), headers: Object.fromEntries(res.headers) }, 415, { code: 'unsupported_media_type' });
    expect((await get(id)).body.bytes).toBe(0);
  });

  test('an unexpected failure during a signed PUT: the generic 500, and the file still awaits its bytes', async () => {
    const { url, id } = await begin();
    const restore = t.breakDatabase();
    try {
      expectError(await put(url, dataset), 500, { code: 'internal_error', type: 'server_error', param: null });
    } finally {
      restore();
    }
    expect((await get(id)).body.bytes).toBe(0);
    expect(stored()).not.toContain(id);
  });

  test('a database outage during a signed PUT: 503 database_unavailable with Retry-After, and the file still awaits its bytes', async () => {
    const { url, id } = await begin();
    const restore = t.breakDatabase(await driverOutageError(t.services.db.provider));
    try {
      const res = await put(url, dataset);
      expectError(res, 503, { code: 'database_unavailable', type: 'server_error', param: null });
      expect(res.headers['retry-after']).toBe('1');
    } finally {
      restore();
    }
    expect((await get(id)).body.bytes).toBe(0);
    expect(stored()).not.toContain(id);
  });

  test('another project sees neither the pending file nor its content (404, as absent)', async () => {
    const { id } = await begin();
    expectError(await get(id, t.other), 404, { code: 'not_found' });
    expectError(await t.other.http.get(`/v1/files/${id}/content`), 404);
    expectError(await t.other.http.delete(`/v1/files/${id}`), 404);
    expect(await listed(t.other)).not.toContain(id);
  });
});

describe('the size limit (FILES_MAX_BYTES)', () => {
  let small: TestPlatform;
  beforeAll(async () => {
    small = await startTestPlatform({ config: { filesMaxBytes: 64 } });
  });
  afterAll(() => small?.close());

  const tmp = (p: TestPlatform) => (existsSync(join(p.config.dataDir, 'tmp')) ? readdirSync(join(p.config.dataDir, 'tmp')) : []);
  async function settles<T>(read: () => T, want: T) {
    for (let i = 0; i < 50 && JSON.stringify(read()) !== JSON.stringify(want); i++) await new Promise((r) => setTimeout(r, 20));
    expect(read()).toEqual(want);
  }

  test('over the limit by Content-Length, or while streaming without one: 413 file_too_large naming file, nothing kept', async () => {
    const { url, id } = await begin({}, small.caller, small);
    expectError(await put(url, 'x'.repeat(65)), 413, { code: 'file_too_large', param: 'file' });
    // Chunked, no length: refused once the 65th byte arrives.
    const res = await fetch(url, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/octet-stream' },
      body: Readable.toWeb(Readable.from([Buffer.alloc(40, 'a'), Buffer.alloc(40, 'b')])) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    expectError({ status: res.status, body: await res.json(), headers: Object.fromEntries(res.headers) }, 413, { code: 'file_too_large', param: 'file' });
    expect((await get(id, small.caller)).body).toMatchObject({ bytes: 0, processing_status: 'PENDING' });
    expect(stored(small)).toEqual([]);
    await settles(() => tmp(small), []);
    // At the limit: taken.
    expect((await put(url, `{"text": "${'y'.repeat(64 - 13)}"}\n`)).status).toBe(200);
  });

  test('exactly the limit while streaming without a length: taken', async () => {
    const { url } = await begin({}, small.caller, small);
    const line = Buffer.from(`{"text": "${'y'.repeat(64 - 13)}"}\n`);
    const res = await fetch(url, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/octet-stream' },
      body: Readable.toWeb(Readable.from([line.subarray(0, 40), line.subarray(40)])) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(200);
    expect((await res.json()).bytes).toBe(64);
  });
});

describe('the official client (together-ai 0.52.0)', () => {
  test("files.upload: the 302 is followed by a PUT that Node's fetch refuses before a byte leaves (no duplex)", async () => {
    // upload.js reads TOGETHER_API_BASE_URL when it is loaded, so the SDK is loaded after setting it. Its CommonJS
    // build (require): the ESM build (import) loads Node's file APIs with `require`, which ESM lacks, so there the
    // helper rejects 'File does not exists' before any request.
    process.env.TOGETHER_API_BASE_URL = `${t.url}/v1`;
    const require = createRequire(import.meta.url);
    // Loaded afresh (a test file before this one in the same worker may have loaded it with another environment).
    for (const loaded of Object.keys(require.cache)) if (loaded.includes('/node_modules/together-ai/')) delete require.cache[loaded];
    const Together = require('together-ai') as typeof import('together-ai').default;
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const dir = mkdtempSync(join(tmpdir(), 'sdk-upload-'));
    const path = join(dir, 'train.jsonl');
    writeFileSync(path, dataset);
    expect(statSync(path).size).toBe(Buffer.byteLength(dataset));
    const before = new Set(await t.services.db.prisma.file.findMany({ select: { id: true } }).then((r) => r.map((f) => f.id)));

    // In 0.52.0 the PUT streams the file without `duplex: 'half'`. When the SDK is fixed this rejection goes away:
    // then assert that the upload succeeds (the flow above is what it will send).
    await expect(client.files.upload(path, 'fine-tune')).rejects.toThrow(/duplex option is required when sending a body/);

    // The POST went through (the file, named by the path the SDK sent, awaits its bytes); no byte arrived.
    const started = (await t.services.db.prisma.file.findMany({ where: { projectId: t.caller.identity.projectId } })).filter((f) => !before.has(f.id));
    expect(started.map((f) => ({ filename: f.filename, status: f.status, bytes: Number(f.bytes) }))).toEqual([
      { filename: path, status: 'UPLOADING', bytes: 0 },
    ]);
    expect(stored()).not.toContain(started[0]!.id);
    // Its upload URL takes the same file with duplex set: what a fixed SDK will send.
    const location = (await t.caller.http.post('/v1/files').query({ purpose: 'fine-tune', file_name: path, file_type: 'jsonl' })).headers.location;
    const res = await fetch(location, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(statSync(path).size) },
      body: Readable.toWeb(createReadStream(path)) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(200);
    const id = (await res.json()).id;
    await t.advance(0);
    expect(await client.files.retrieve(id)).toMatchObject({ id, filename: path, processing_status: 'COMPLETED' });
  });
});
