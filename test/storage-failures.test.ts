// Storage failing under a running server (issue 28 §3): folders under DATA_DIR removed or replaced while uploads
// stream, and bytes deleted behind the server's back. Every such failure answers 503 `storage_unavailable` (the
// storage's fault, retried by the official clients), or 410 `content_gone` for bytes gone while their storage is in
// place; never a 500, never a 400 blaming the caller's file, never a word of the server's paths.
import { existsSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let tmp: string;
let files: string;
beforeAll(async () => {
  t = await startTestPlatform();
  tmp = join(t.config.dataDir, 'tmp');
  files = join(t.config.dataDir, 'files');
});
afterAll(() => t?.close());

/** The 503 of a failing storage: the envelope, `Retry-After`, no server path. */
function expectStorageFailure(res: { status: number; body: any; headers: Record<string, any> }) {
  expectError(res, 503, { code: 'storage_unavailable', type: 'server_error', param: null });
  expect(res.headers['retry-after']).toBe('1');
  expect(JSON.stringify(res.body)).not.toContain(t.config.dataDir);
}

/**
 * Sends `head`, waits until the upload's temporary file is in DATA_DIR/tmp (a name not there before), runs `meanwhile` (the storage fails),
 * then sends `tail`: answers the response.
 */
function streamed(method: string, path: string, headers: Record<string, string>, head: Buffer, tail: Buffer, meanwhile: () => void) {
  return new Promise<{ status: number; body: any; headers: Record<string, any> }>((resolve, reject) => {
    const req = http.request(`${t.url}${path}`, { method, headers: { ...headers, 'Content-Length': String(head.length + tail.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
    });
    req.on('error', reject);
    const earlier = new Set(existsSync(tmp) ? readdirSync(tmp) : []);
    const fresh = () => existsSync(tmp) && readdirSync(tmp).some((name) => !earlier.has(name));
    req.write(head);
    (async () => {
      for (let i = 0; i < 500 && !fresh(); i++) await sleep(10);
      meanwhile();
      req.end(tail);
    })().catch(reject);
  });
}

const BOUNDARY = '----storage-failures';
const part = (name: string, value: string) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
const ROWS = '{"text": "row"}\n'.repeat(20_000);
const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });

/** A multipart body split after the start of its file part (the temporary file exists by then). */
function multipart(fields: Record<string, string>, file: Buffer | string, filename: string) {
  const head = Buffer.from(
    `${Object.entries(fields)
      .map(([k, v]) => part(k, v))
      .join('')}--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const bytes = Buffer.from(file);
  const half = Math.floor(bytes.length / 2);
  return {
    headers: { ...auth(), 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` },
    head: Buffer.concat([head, bytes.subarray(0, half)]),
    tail: Buffer.concat([bytes.subarray(half), Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]),
  };
}

const removeTmp = () => rmSync(tmp, { recursive: true, force: true });

describe('folders under DATA_DIR removed or replaced while uploads stream', () => {
  test('DATA_DIR/tmp removed mid-upload: 503 storage_unavailable (500 internal_error before), nothing kept; the next upload works', async () => {
    const before = (await t.caller.http.get('/v1/files')).body.data.length;
    const body = multipart({ purpose: 'eval', file_name: 'rows.jsonl' }, ROWS, 'rows.jsonl');
    expectStorageFailure(await streamed('POST', '/v1/files/upload', body.headers, body.head, body.tail, removeTmp));
    expect((await t.caller.http.get('/v1/files')).body.data.length).toBe(before);
    const again = multipart({ purpose: 'eval', file_name: 'rows.jsonl' }, ROWS, 'rows.jsonl');
    expect((await streamed('POST', '/v1/files/upload', again.headers, again.head, again.tail, () => {})).status).toBe(200);
  });

  test('the signed PUT with DATA_DIR/tmp removed mid-body: 503, and the file still awaits its bytes (its URL works once storage is back)', async () => {
    const begin = await t.caller.http.post('/v1/files').query({ purpose: 'eval', file_name: 'signed.jsonl', file_type: 'jsonl' }).redirects(0);
    expect(begin.status).toBe(302);
    const url = new URL(begin.headers.location);
    const path = `${url.pathname}${url.search}`;
    const bytes = Buffer.from(ROWS);
    const headers = { 'Content-Type': 'application/octet-stream' };
    expectStorageFailure(await streamed('PUT', path, headers, bytes.subarray(0, 1000), bytes.subarray(1000), removeTmp));
    const retried = await streamed('PUT', path, headers, bytes.subarray(0, 1000), bytes.subarray(1000), () => {});
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.bytes).toBe(bytes.length);
  });

  test('DATA_DIR/files replaced by a file: uploads and signed PUTs answer 503 (500 before)', async () => {
    const begin = await t.caller.http.post('/v1/files').query({ purpose: 'eval', file_name: 'late.jsonl', file_type: 'jsonl' }).redirects(0);
    const url = new URL(begin.headers.location);
    renameSync(files, `${files}.away`);
    writeFileSync(files, 'not a folder');
    try {
      const body = multipart({ purpose: 'eval', file_name: 'rows.jsonl' }, ROWS, 'rows.jsonl');
      expectStorageFailure(await streamed('POST', '/v1/files/upload', body.headers, body.head, body.tail, () => {}));
      const bytes = Buffer.from(ROWS);
      const headers = { 'Content-Type': 'application/octet-stream' };
      expectStorageFailure(await streamed('PUT', `${url.pathname}${url.search}`, headers, bytes.subarray(0, 10), bytes.subarray(10), () => {}));
    } finally {
      rmSync(files, { force: true });
      renameSync(`${files}.away`, files);
    }
  });

  test("audio whose temporary file goes mid-upload: 503 (400 unsupported_format naming 'No such file or directory', before)", async () => {
    // A WAV header and a second of silence: audio ffmpeg decodes when its file is there.
    const samples = 16_000;
    const wav = Buffer.alloc(44 + samples * 2);
    wav.write('RIFF', 0);
    wav.writeUInt32LE(36 + samples * 2, 4);
    wav.write('WAVEfmt ', 8);
    wav.writeUInt32LE(16, 16);
    wav.writeUInt16LE(1, 20);
    wav.writeUInt16LE(1, 22);
    wav.writeUInt32LE(16_000, 24);
    wav.writeUInt32LE(32_000, 28);
    wav.writeUInt16LE(2, 32);
    wav.writeUInt16LE(16, 34);
    wav.write('data', 36);
    wav.writeUInt32LE(samples * 2, 40);
    const body = multipart({ model: 'openai/whisper-large-v3' }, wav, 'silence.wav');
    const res = await streamed('POST', '/v1/audio/transcriptions', body.headers, body.head, body.tail, removeTmp);
    expectStorageFailure(res);
    const again = multipart({ model: 'openai/whisper-large-v3' }, wav, 'silence.wav');
    expect((await streamed('POST', '/v1/audio/transcriptions', again.headers, again.head, again.tail, () => {})).status).toBe(200);
  });
});

describe('bytes deleted behind the server: 410 content_gone for that content, 503 when the storage folder itself is gone', () => {
  test('a file, its signed storage read, an image and a video (v1 and v2): 410 (500 before); DATA_DIR/files replaced: 503', async () => {
    const up = await t.caller.http
      .post('/v1/files/upload')
      .field('purpose', 'eval')
      .field('file_name', 'weights.jsonl')
      .attach('file', Buffer.from(ROWS), 'weights.jsonl');
    expect(up.status).toBe(200);
    const read = await t.caller.http.get('/v1/deployments/storage/weights.jsonl/url');
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    const storageRead = () => {
      const u = new URL(read.body.url);
      return t.http.get(`${u.pathname}${u.search}`);
    };
    const image = await t.caller.http.post('/v1/images/generations').send({ model: 'black-forest-labs/FLUX.1-schnell', prompt: 'teal', width: 64, height: 64 });
    expect(image.status).toBe(200);
    const imagePath = new URL(image.body.data[0].url).pathname;
    const video = await t.caller.http
      .post('/v2/videos')
      .send({ model: 'Wan-AI/Wan2.2-T2V-A14B', prompt: 'fog', width: 128, height: 72, seconds: '1', fps: 12 });
    expect(video.status).toBe(200);
    await t.advance(0);
    expect((await t.caller.http.get(`/v2/videos/${video.body.id}`)).body.status).toBe('completed');
    const downloads = {
      file: () => t.caller.http.get(`/v1/files/${up.body.id}/content`),
      storage: storageRead,
      image: () => t.caller.http.get(imagePath),
      'video v2': () => t.caller.http.get(`/v2/videos/${video.body.id}/content`),
      'video v1': () => t.caller.http.get(`/v1/videos/${video.body.id}/content`),
    };
    for (const [what, get] of Object.entries(downloads)) expect((await get()).status, what).toBe(200);

    // DATA_DIR/files replaced by a file: the storage is failing, not the content gone.
    renameSync(files, `${files}.away`);
    writeFileSync(files, 'not a folder');
    try {
      expectStorageFailure(await downloads.file());
      expectStorageFailure(await downloads.storage());
    } finally {
      rmSync(files, { force: true });
      renameSync(`${files}.away`, files);
    }

    // The bytes themselves deleted, the folders in place.
    const row = await t.services.db.prisma.file.findUniqueOrThrow({ where: { id: up.body.id } });
    rmSync(join(t.config.dataDir, row.path));
    const img = await t.services.db.prisma.generatedImage.findFirstOrThrow({ where: { generationId: image.body.id } });
    rmSync(join(t.config.dataDir, img.file));
    const vid = await t.services.db.prisma.video.findUniqueOrThrow({ where: { id: video.body.id } });
    rmSync(join(t.config.dataDir, vid.file!));
    for (const [what, get, param] of [
      ['file', downloads.file, 'id'],
      ['storage', downloads.storage, 'file_id'],
      ['image', downloads.image, 'id'],
      ['video v2', downloads['video v2'], 'id'],
      ['video v1', downloads['video v1'], 'id'],
    ] as const) {
      const res = await get();
      expectError(res, 410, { code: 'content_gone', type: 'invalid_request_error', param });
      expect(res.headers['x-should-retry'], what).toBe('false');
      expect(JSON.stringify(res.body)).not.toContain(t.config.dataDir);
    }
    // The records remain.
    expect((await t.caller.http.get(`/v1/files/${up.body.id}`)).status).toBe(200);
  });
});
