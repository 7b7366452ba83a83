// Messages name the caller's things, never the server's: every kind of failure whose text comes from a tool or the
// file system (ffmpeg's stderr, fs errors such as ENOENT or ENOTDIR, the JSON Lines and parquet readers) is
// provoked here, and no answer (nor a record read back later) shows an absolute path or a piece of DATA_DIR.
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { withoutPaths } from '../server/core/errors.ts';
import { localUrls, startTestPlatform, type TestPlatform } from './support/platform.ts';

const MODEL = 'openai/whisper-large-v3';
const NOT_AUDIO = Buffer.from('these are not audio bytes\n'.repeat(50));

let t: TestPlatform;
let files: Server;
let filesUrl: string;
beforeAll(async () => {
  // Failures are given up at the first: the messages they leave are what is read back.
  t = await startTestPlatform({ config: { pocketsphinxPath: 'off', urlFetch: localUrls }, runner: { maxFailures: 1 } });
  files = createServer((_req, res) => void res.writeHead(200, { 'Content-Type': 'application/octet-stream' }).end(NOT_AUDIO));
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t?.close();
  files?.close();
});

/** Asserts that `body`, as sent, shows no absolute path, no piece of DATA_DIR, and no temporary file's name. */
function pathFree(body: unknown) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const pieces = t.config.dataDir.split('/').filter((p) => p.length > 3);
  for (const piece of pieces) expect(text, `names '${piece}' of DATA_DIR`).not.toContain(piece);
  expect(text).not.toMatch(/(^|[\s'"(=[])\/[\w.-]+\//);
  expect(text).not.toMatch(/upload-[0-9a-f]{8}|audio-[0-9a-f]{8}|\.pcm\b/);
}

test('withoutPaths: named paths become their names, other absolute paths go; URLs, ids and slashes in words stay', () => {
  expect(withoutPaths("ENOENT: no such file or directory, open '/data/files/p/file-1'", { '/data/files/p/file-1': 'file-1' })).toBe(
    "ENOENT: no such file or directory, open 'file-1'",
  );
  expect(withoutPaths('/srv/x/tmp/upload-1: Invalid data found\n[out] Error opening /srv/x/out.mp4.')).toBe(
    '<server path>: Invalid data found\n[out] Error opening <server path>',
  );
  expect(withoutPaths('https://host/a/b.wav answered 404 for meta-llama/Llama-3 (1/2)')).toBe('https://host/a/b.wav answered 404 for meta-llama/Llama-3 (1/2)');
});

const transcribe = () => t.caller.http.post('/v1/audio/transcriptions').field('model', MODEL);

describe('audio: ffmpeg and the file system', () => {
  test('an upload that is not audio: 400 unsupported_format naming the file as sent', async () => {
    const res = await transcribe().attach('file', NOT_AUDIO, 'notes.wav');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('unsupported_format');
    expect(res.body.error.message).toContain('notes.wav');
    pathFree(res.body);
  });

  test('audio by URL that is not audio: 400 unsupported_format naming the URL', async () => {
    const res = await transcribe().field('file', `${filesUrl}/notes.wav`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('unsupported_format');
    pathFree(res.body);
  });

  test('audio ffmpeg recognises but cannot decode: 400 unsupported_format', async () => {
    // A WAV header whose codec (0x1234) no decoder knows.
    const wav = Buffer.alloc(44 + 3200);
    wav.write('RIFF', 0);
    wav.writeUInt32LE(36 + 3200, 4);
    wav.write('WAVEfmt ', 8);
    wav.writeUInt32LE(16, 16);
    wav.writeUInt16LE(0x1234, 20);
    wav.writeUInt16LE(1, 22);
    wav.writeUInt32LE(16000, 24);
    wav.writeUInt32LE(32000, 28);
    wav.writeUInt16LE(2, 32);
    wav.writeUInt16LE(16, 34);
    wav.write('data', 36);
    wav.writeUInt32LE(3200, 40);
    const res = await transcribe().attach('file', wav, 'odd.wav');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('unsupported_format');
    pathFree(res.body);
  });
});

describe('uploads the disk refuses to store (ENOTDIR): 503 storage_unavailable', () => {
  const tmp = () => join(t.config.dataDir, 'tmp');
  beforeAll(() => {
    // DATA_DIR/tmp made a file: every temporary file under it fails to open.
    rmSync(tmp(), { recursive: true, force: true });
    writeFileSync(tmp(), 'in the way');
  });
  afterAll(() => {
    rmSync(tmp(), { force: true });
    mkdirSync(tmp());
  });

  test('a multipart audio upload, a multipart file upload, a signed upload', async () => {
    const audio = await transcribe().attach('file', NOT_AUDIO, 'notes.wav');
    const file = await t.caller.http
      .post('/v1/files/upload')
      .field('purpose', 'fine-tune')
      .field('file_name', 'data.jsonl')
      .attach('file', Buffer.from('{"text": "x"}\n'), 'data.jsonl');
    const started = await fetch(`${t.url}/v1/files`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: `Bearer ${t.caller.key}` },
      redirect: 'manual',
      body: new URLSearchParams({ purpose: 'fine-tune', file_name: 'data.jsonl' }).toString(),
    });
    const put = await fetch(started.headers.get('location')!, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/octet-stream' },
      body: '{"text": "x"}\n',
    });
    for (const res of [audio, file, { status: put.status, body: await put.json() }]) {
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(res.body.error.code).toBe('storage_unavailable');
      pathFree(res.body);
    }
  });
});

describe('fine-tuning datasets: the JSON Lines and parquet readers', () => {
  const upload = (content: Buffer, name: string, fileType: 'jsonl' | 'parquet') =>
    t.caller.http.post('/v1/files/upload').field('purpose', 'fine-tune').field('file_name', name).field('file_type', fileType).attach('file', content, name);
  const bytesOf = (id: string) => join(t.config.dataDir, 'files', t.caller.identity.projectId, id);

  test.each([
    ['jsonl', Buffer.from('{"text": "x"}\n')],
    ['parquet', Buffer.from(parquetWriteBuffer({ columnData: [{ name: 'input_ids', data: [[1, 2, 3]], type: 'JSON' }] }))],
  ] as const)('%s whose bytes are gone (ENOENT): FAILED, the report naming the file, not its place', async (fileType, content) => {
    const res = await upload(content, `data.${fileType}`, fileType);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    rmSync(bytesOf(res.body.id));
    await t.advance(0);
    const f = (await t.caller.http.get(`/v1/files/${res.body.id}`)).body;
    expect(f.processing_status).toBe('FAILED');
    expect(f.validation_report.error).toMatch(/ENOENT/);
    expect(f.validation_report.error).toContain(`'${res.body.id}'`);
    pathFree(f);
  });

  test('whose bytes are a directory (EISDIR): FAILED, without a path', async () => {
    const res = await upload(Buffer.from('{"text": "x"}\n'), 'data.jsonl', 'jsonl');
    rmSync(bytesOf(res.body.id));
    mkdirSync(bytesOf(res.body.id));
    await t.advance(0);
    const f = (await t.caller.http.get(`/v1/files/${res.body.id}`)).body;
    expect(f.processing_status).toBe('FAILED');
    pathFree(f);
    rmSync(bytesOf(res.body.id), { recursive: true });
  });

  test('a parquet file that is not parquet: INVALID_FORMAT, the reader’s reason without a path', async () => {
    await t.advance(0);
    const res = await upload(Buffer.from('PAR1 not really parquet PAR1'), 'data.parquet', 'parquet');
    await t.advance(0);
    const f = (await t.caller.http.get(`/v1/files/${res.body.id}`)).body;
    expect(f.processing_status).toBe('INVALID_FORMAT');
    pathFree(f);
  });

  test("a file's content whose bytes are gone: an error without a path", async () => {
    const res = await t.caller.http
      .post('/v1/files/upload')
      .field('purpose', 'eval')
      .field('file_name', 'e.jsonl')
      .attach('file', Buffer.from('{"a": 1}\n'), 'e.jsonl');
    rmSync(bytesOf(res.body.id));
    const content = await t.caller.http.get(`/v1/files/${res.body.id}/content`);
    expect(content.status).toBeGreaterThanOrEqual(400);
    pathFree(content.body);
  });
});

describe('work given up by the runner', () => {
  test('a video whose render fails (ffmpeg cannot start; cannot write its output): the error names no path', async () => {
    const T2V = 'Wan-AI/Wan2.2-T2V-A14B';
    const SMALL = { width: 128, height: 72, seconds: '1', fps: 12 };
    const broken = await startTestPlatform({ config: { ffmpegPath: '/nonexistent/ffmpeg' }, runner: { maxFailures: 1 } });
    try {
      const res = await broken.caller.http.post('/v2/videos').send({ model: T2V, prompt: 'doomed', ...SMALL });
      await broken.advance(60_000);
      const job = (await broken.caller.http.get(`/v2/videos/${res.body.id}`)).body;
      expect(job.status).toBe('failed');
      expect(JSON.stringify(job)).not.toContain('/nonexistent');
      pathFree(job);
    } finally {
      await broken.close();
    }
    // ffmpeg cannot open its output (a link into a directory that does not exist): its stderr names the file.
    const doomed = await t.caller.http.post('/v2/videos').send({ model: T2V, prompt: 'doomed', ...SMALL });
    const dir = join(t.config.dataDir, 'videos', t.caller.identity.projectId);
    mkdirSync(dir, { recursive: true });
    symlinkSync(join(t.config.dataDir, 'nowhere', 'x.mp4'), join(dir, `${doomed.body.id}.mp4.partial`));
    await t.advance(60_000);
    const job = (await t.caller.http.get(`/v2/videos/${doomed.body.id}`)).body;
    expect(job.status).toBe('failed');
    expect(job.error.message).toMatch(/ffmpeg exited/);
    pathFree(job);
    // DATA_DIR/videos made a file: the output's directory cannot be made (ENOTDIR).
    const videos = join(t.config.dataDir, 'videos');
    rmSync(videos, { recursive: true, force: true });
    writeFileSync(videos, 'in the way');
    try {
      const res = await t.caller.http.post('/v2/videos').send({ model: T2V, prompt: 'doomed', ...SMALL });
      await t.advance(60_000);
      const job = (await t.caller.http.get(`/v2/videos/${res.body.id}`)).body;
      expect(job.status).toBe('failed');
      expect(job.error.message).toMatch(/ENOTDIR/);
      pathFree(job);
    } finally {
      rmSync(videos, { force: true });
    }
  });
});
