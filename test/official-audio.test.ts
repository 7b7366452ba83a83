// The official clients, unchanged but for `baseURL`, transcribe and translate: together-ai 0.52.0
// (`client.audio.transcriptions.create` / `client.audio.translations.create`) and openai 6.49 (the same methods),
// each with a file upload and with the audio's URL as `file`.
import { execFileSync } from 'node:child_process';
import { createReadStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ffmpegPath } from '../server/engines/ffmpeg.ts';
import { localUrls, startTestPlatform, type TestPlatform } from './support/platform.ts';

const MODEL = 'openai/whisper-large-v3';
let t: TestPlatform;
let dir: string;
let speech: string;
let files: Server;
let speechUrl: string;
let together: Together;
let openai: OpenAI;
/** What the server answers for the speech file, through plain HTTP. */
let expected: { text: string; segments: unknown[] };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'official-audio-'));
  const raw = join(dir, 'raw.wav');
  execFileSync('espeak-ng', ['-v', 'en-us+klatt', '-s', '140', '-w', raw, 'three four five']);
  speech = join(dir, 'speech.mp3');
  execFileSync(ffmpegPath(), ['-hide_banner', '-loglevel', 'error', '-y', '-i', raw, '-c:a', 'libmp3lame', speech]);
  files = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'audio/mpeg' }).end(readFileSync(speech)));
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  speechUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}/speech.mp3`;
  t = await startTestPlatform({ config: { urlFetch: localUrls } });
  together = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1` });
  openai = new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1` });
  const res = await t.caller.http.post('/v1/audio/transcriptions').field('model', MODEL).attach('file', speech).field('response_format', 'verbose_json');
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expected = res.body;
  expect(expected.text.length, 'the recogniser heard words').toBeGreaterThan(0);
}, 300_000);
afterAll(async () => {
  await t?.close();
  files?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('together-ai', () => {
  test('audio.transcriptions.create: a file, then a URL', async () => {
    const fromFile = await together.audio.transcriptions.create({ model: MODEL, file: createReadStream(speech), response_format: 'verbose_json' });
    expect(fromFile).toMatchObject({ text: expected.text, segments: expected.segments, task: 'transcribe' });
    const fromUrl = await together.audio.transcriptions.create({ model: MODEL, file: speechUrl });
    expect(fromUrl).toEqual({ text: expected.text });
  }, 300_000);

  test('audio.translations.create with a URL', async () => {
    const res = await together.audio.translations.create({ model: MODEL, file: speechUrl, response_format: 'verbose_json' });
    expect(res).toMatchObject({ text: expected.text, task: 'translate', language: 'en' });
  }, 300_000);

  test('an unknown model: NotFoundError naming model', async () => {
    const err = await together.audio.transcriptions.create({ model: 'nobody/none' as typeof MODEL, file: speechUrl }).catch((e) => e);
    expect(err).toBeInstanceOf(Together.NotFoundError);
    expect(err.error.error.param).toBe('model');
  }, 300_000);
});

describe('openai', () => {
  test('audio.transcriptions.create: a file (words asked for), then a URL', async () => {
    const fromFile = await openai.audio.transcriptions.create({
      model: MODEL,
      file: createReadStream(speech),
      response_format: 'verbose_json',
      timestamp_granularities: ['word'],
    });
    expect(fromFile.text).toBe(expected.text);
    expect(fromFile.words?.map((w) => w.word).join(' ')).toBe(expected.text);
    // openai types `file` as an upload; the platform also takes a URL, which the client sends as a text field.
    const fromUrl = await openai.audio.transcriptions.create({ model: MODEL, file: speechUrl as unknown as File, response_format: 'text' });
    expect(fromUrl).toBe(expected.text);
  }, 300_000);

  test('audio.translations.create with a file', async () => {
    const res = await openai.audio.translations.create({ model: MODEL, file: createReadStream(speech) });
    expect(res.text).toBe(expected.text);
  }, 300_000);
});
