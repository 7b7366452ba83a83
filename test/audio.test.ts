// Audio transcription and translation: the eight formats decoded by ffmpeg and measured (duration, speech segments
// found in the signal); words only from the offline recogniser (PocketSphinx, on speech espeak-ng synthesises
// here), never invented; the response formats; audio by URL, streamed with its 1 GB cap; the 80 MB upload limit
// enforced while the body streams; bad input; and the upstream engine, with a second server process as upstream.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ffmpegPath } from '../server/engines/ffmpeg.ts';
import { type ScratchDatabase, scratchDatabase } from './support/database.ts';
import { expectError } from './support/expect.ts';
import { silentWav, wavHeader } from './support/files.ts';
import { localUrls, startTestPlatform, type TestPlatform } from './support/platform.ts';
import { type ServerProcess, startServerProcess } from './support/server-process.ts';

const MODEL = 'openai/whisper-large-v3';
const FORMATS = { wav: 'pcm_s16le', mp3: 'libmp3lame', m4a: 'aac', webm: 'libopus', flac: 'flac', ogg: 'libvorbis', opus: 'libopus', aac: 'aac' } as const;
const SPOKEN = 'one two three four five six seven';
/** Tests that run the recogniser: PocketSphinx loads its English model on every request, which takes seconds on a busy machine. */
const SLOW = 300_000;

let dir: string;
/** A tone pattern with known speech-like stretches: 0.5 s quiet, 1 s tone, 0.6 s quiet, 0.8 s tone, 0.5 s quiet. */
let tone: Record<keyof typeof FORMATS, string>;
/** Speech synthesised by espeak-ng (16 kHz WAV). */
let speech: string;
let t: TestPlatform;
let files: Server;
let filesUrl: string;

const ffmpeg = (...args: string[]) => execFileSync(ffmpegPath(), ['-hide_banner', '-loglevel', 'error', '-y', ...args]);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'audio-test-'));
  const wav = join(dir, 'tone-source.wav');
  const quiet = (s: number) => ['-f', 'lavfi', '-t', String(s), '-i', 'anullsrc=r=16000:cl=mono'];
  const sine = (f: number, s: number) => ['-f', 'lavfi', '-i', `sine=f=${f}:r=16000:d=${s}`];
  ffmpeg(...quiet(0.5), ...sine(440, 1), ...quiet(0.6), ...sine(660, 0.8), ...quiet(0.5), '-filter_complex', '[0][1][2][3][4]concat=n=5:v=0:a=1', wav);
  tone = Object.fromEntries(
    Object.entries(FORMATS).map(([ext, codec]) => {
      const out = join(dir, `tone.${ext}`);
      ffmpeg('-i', wav, '-c:a', codec, out);
      return [ext, out];
    }),
  ) as typeof tone;
  const raw = join(dir, 'speech-22k.wav');
  execFileSync('espeak-ng', ['-v', 'en-us+klatt', '-s', '140', '-g', '8', '-w', raw, SPOKEN]);
  speech = join(dir, 'speech.wav');
  ffmpeg('-i', raw, '-ar', '16000', '-ac', '1', speech);
  writeFileSync(join(dir, 'notes.txt'), 'these are not audio bytes\n'.repeat(50));

  // Audio by URL: the test's own file server (and a few misbehaving routes).
  files = createServer((req, res) => {
    if (req.url === '/huge-declared') {
      res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': String(2 * 1024 ** 3) });
      res.write(Buffer.alloc(1024));
      return; // never finishes: the server must refuse by the declared length alone
    }
    if (req.url === '/endless') {
      // Chunked, no length: only counting the bytes as they arrive can stop it.
      res.writeHead(200, { 'Content-Type': 'audio/wav' });
      const chunk = Buffer.alloc(64 * 1024, 1);
      const pump = () => {
        while (res.write(chunk)) if (res.destroyed) return;
      };
      res.on('drain', pump);
      res.on('close', () => res.off('drain', pump));
      pump();
      return;
    }
    try {
      const body = readFileSync(join(dir, req.url!.slice(1)));
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end('no such file');
    }
  });
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  t = await startTestPlatform({ config: { urlFetch: localUrls } });
}, 60_000);
afterAll(async () => {
  await t?.close();
  files?.closeAllConnections();
  files?.close();
  rmSync(dir, { recursive: true, force: true });
});

const transcribe = (fields: Record<string, string | string[]>, file?: string, path = '/v1/audio/transcriptions', http = t.caller.http) => {
  let req = http.post(path);
  // `model` first, as the platform asks, then the file, then the rest.
  if (fields.model !== undefined) req = req.field('model', fields.model as string);
  if (file) req = req.attach('file', file);
  for (const [k, v] of Object.entries(fields)) if (k !== 'model') for (const x of [v].flat()) req = req.field(k, x);
  return req;
};

describe('the eight formats, decoded and measured', () => {
  test.each(Object.keys(FORMATS))('%s: duration and speech segments measured on the decoded signal', async (ext) => {
    const res = await transcribe({ model: MODEL, response_format: 'verbose_json', language: 'fr' }, tone[ext as keyof typeof FORMATS]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // French: the recogniser knows English only, so no words, and the header says so.
    expect(res.body.text).toBe('');
    expect(res.headers['x-transcription-engine']).toMatch(/^local; the recogniser knows English only/);
    expect(res.body.task).toBe('transcribe');
    expect(res.body.language).toBe('fr');
    expect(res.body.duration).toBeGreaterThan(3.35);
    expect(res.body.duration).toBeLessThan(3.6);
    expect(res.body.segments).toHaveLength(2);
    const [a, b] = res.body.segments;
    expect(a.id).toBe(0);
    expect(b.id).toBe(1);
    for (const [got, want] of [
      [a.start, 0.5],
      [a.end, 1.5],
      [b.start, 2.1],
      [b.end, 2.9],
    ]) {
      expect(Math.abs(got - want), JSON.stringify(res.body.segments)).toBeLessThan(0.1);
    }
    expect(a.text).toBe('');
  });
});

describe('the local recogniser (PocketSphinx) on speech espeak-ng synthesised', () => {
  test(
    'words come from the recogniser, with times inside the audio, and the same audio gives the same words',
    async () => {
      const res = await transcribe({ model: MODEL, response_format: 'verbose_json', 'timestamp_granularities[]': ['word', 'segment'] }, speech);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers['x-transcription-engine']).toBe('local-pocketsphinx');
      const { text, words, segments, duration } = res.body;
      expect(text.length).toBeGreaterThan(0);
      expect(words.length).toBeGreaterThan(2);
      expect(words.map((w: { word: string }) => w.word).join(' ')).toBe(text);
      for (const w of words) {
        expect(w.start).toBeGreaterThanOrEqual(0);
        expect(w.end).toBeGreaterThan(w.start);
        expect(w.end).toBeLessThanOrEqual(duration + 0.05);
      }
      // The segments hold the same words, in order.
      expect(
        segments
          .map((s: { text: string }) => s.text)
          .filter(Boolean)
          .join(' '),
      ).toBe(text);
      // Real recognition of synthetic speech is imperfect, but it hears some of the numbers spoken.
      const heard = SPOKEN.split(' ').filter((w) => text.split(' ').includes(w));
      expect(heard.length, `heard "${text}" for "${SPOKEN}"`).toBeGreaterThanOrEqual(2);
      const again = await transcribe({ model: MODEL }, speech);
      expect(again.body).toEqual({ text });
    },
    SLOW,
  );

  test(
    'without a recogniser: the measured segments with empty text, and the header says why',
    async () => {
      const bare = await startTestPlatform({ config: { pocketsphinxPath: 'off' } });
      try {
        const res = await transcribe({ model: MODEL, response_format: 'verbose_json' }, speech, undefined, bare.caller.http);
        expect(res.status).toBe(200);
        expect(res.body.text).toBe('');
        expect(res.body.segments.length).toBeGreaterThan(0);
        expect(res.body.segments.every((s: { text: string }) => s.text === '')).toBe(true);
        expect(res.headers['x-transcription-engine']).toMatch(/^local; no speech recogniser is installed/);
      } finally {
        await bare.close();
      }
    },
    SLOW,
  );

  test(
    'a translation is the English transcript, task translate',
    async () => {
      const res = await transcribe({ model: MODEL, response_format: 'verbose_json' }, speech, '/v1/audio/translations');
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.task).toBe('translate');
      expect(res.body.language).toBe('en');
      expect(res.body.text.length).toBeGreaterThan(0);
      expect(res.body.words).toBeUndefined();
    },
    SLOW,
  );
});

describe('response formats', () => {
  test(
    'json (the default), text, srt, vtt',
    async () => {
      const json = await transcribe({}, speech);
      expect(json.status).toBe(200);
      expect(Object.keys(json.body)).toEqual(['text']);
      const text = await transcribe({ model: MODEL, response_format: 'text' }, speech);
      expect(text.headers['content-type']).toMatch(/^text\/plain/);
      expect(text.text).toBe(json.body.text);
      const verbose = await transcribe({ model: MODEL, response_format: 'verbose_json' }, speech);
      const segs = verbose.body.segments.filter((s: { text: string }) => s.text);
      const srt = await transcribe({ model: MODEL, response_format: 'srt' }, speech);
      expect(srt.headers['content-type']).toMatch(/^text\/plain/);
      expect(srt.text).toMatch(/^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n/);
      const vtt = await transcribe({ model: MODEL, response_format: 'vtt' }, speech);
      expect(vtt.headers['content-type']).toMatch(/^text\/vtt/);
      expect(vtt.text).toMatch(/^WEBVTT\n\n\d\d:\d\d:\d\d\.\d{3} --> /);
      for (const s of segs) {
        expect(srt.text).toContain(s.text);
        expect(vtt.text).toContain(s.text);
      }
    },
    SLOW,
  );
});

describe('audio by URL', () => {
  test(
    'an http URL in `file` is fetched and transcribed like the upload',
    async () => {
      const upload = await transcribe({ model: MODEL, response_format: 'verbose_json' }, speech);
      const byUrl = await transcribe({ model: MODEL, response_format: 'verbose_json', file: `${filesUrl}/speech.wav` });
      expect(byUrl.status, JSON.stringify(byUrl.body)).toBe(200);
      expect(byUrl.body).toEqual(upload.body);
    },
    SLOW,
  );

  test('a URL that answers 404, or cannot be reached: 400 file_unreachable', async () => {
    expectError(await transcribe({ model: MODEL, file: `${filesUrl}/missing.wav` }), 400, { code: 'file_unreachable', param: 'file' });
    expectError(await transcribe({ model: MODEL, file: 'http://127.0.0.1:1/a.wav' }), 400, { code: 'file_unreachable', param: 'file' });
  });

  test('over 1 GB by its declared length: refused at once', async () => {
    expectError(await transcribe({ model: MODEL, file: `${filesUrl}/huge-declared` }), 400, { code: 'file_too_large', param: 'file' });
  });

  test(
    'no declared length: the cap is enforced while it streams',
    async () => {
      const small = await startTestPlatform({ config: { audioUrlLimit: 2 * 1024 * 1024, urlFetch: localUrls } });
      try {
        const res = await transcribe({ model: MODEL, file: `${filesUrl}/endless` }, undefined, undefined, small.caller.http);
        expectError(res, 400, { code: 'file_too_large', param: 'file' });
        expect(res.body.error.message).toMatch(/2 MB limit of audio by URL/);
      } finally {
        await small.close();
      }
    },
    SLOW,
  );
});

/**
 * Streams `total` bytes of a file part (no Content-Length: chunked), stopping once an answer arrives. The part
 * begins with `opts.start` (e.g. a WAV header), then 7s; `opts.fields` are sent between `model` and the file.
 */
function streamUpload(
  total: number,
  declareLength: boolean,
  model = MODEL,
  path = '/v1/audio/transcriptions',
  opts: { start?: Buffer; fields?: Record<string, string> } = {},
): Promise<{ status: number; body: any; sent: number }> {
  const boundary = 'xxBOUNDARYxx';
  const field = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const fields = Object.entries({ model, ...opts.fields })
    .map(([k, v]) => field(k, v))
    .join('');
  const head = Buffer.concat([
    Buffer.from(`${fields}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`),
    opts.start ?? Buffer.alloc(0),
  ]);
  const first = opts.start?.length ?? 0;
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const url = new URL(path, t.url);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = httpRequest(url, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${t.caller.key}`,
        'Content-Type': `multipart/form-data; boundary=${boundary}`,
        ...(declareLength ? { 'Content-Length': String(head.length - first + total + tail.length) } : {}),
      },
    });
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        resolve({ status: res.statusCode!, body: JSON.parse(text), sent });
        req.destroy();
      });
    });
    req.on('error', (err) => (answered ? undefined : reject(err)));
    const chunk = Buffer.alloc(1024 * 1024, 7);
    req.write(head);
    sent = first;
    const pump = () => {
      while (!answered && sent < total) {
        const n = Math.min(chunk.length, total - sent);
        sent += n;
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void req.once('drain', pump);
      }
      if (!answered) req.end(tail);
    };
    pump();
  });
}

describe('the 80 MB limit of a binary upload', () => {
  const total = 200 * 1024 * 1024;

  test('a streamed upload over 80 MB: 413 naming file and advising a URL, answered before the body ends', async () => {
    const res = await streamUpload(total, false);
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'file_too_large', param: 'file', type: 'invalid_request_error' });
    expect(res.body.error.message).toMatch(/80 MB limit of a binary upload.*URL/);
    // The server answered while the client was still sending: it did not wait for (or hold) the whole body.
    expect(res.sent).toBeLessThan(total);
  }, 60_000);

  test('an unknown model sent before the file: 404, the upload discarded unstored', async () => {
    const res = await streamUpload(50 * 1024 * 1024, false, 'nobody/none');
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'model_not_found', param: 'model' });
    expect(readdirSync(join(t.config.dataDir, 'tmp'))).toEqual([]);
  }, 60_000);

  test.each(['/v1/audio/transcriptions', '/v1/audio/translations'])(
    '%s: a declared Content-Length over 80 MB: 413 before anything is read',
    async (path) => {
      const res = await streamUpload(total, true, MODEL, path);
      expect(res.status).toBe(413);
      expect(res.body.error).toMatchObject({ code: 'file_too_large', param: 'file' });
      expect(res.sent).toBeLessThan(total / 2);
    },
    60_000,
  );
});

describe('the limit is inclusive, and holds at any size', () => {
  const LIMIT = 80 * 1024 * 1024;

  test('exactly 80 MB (83,886,080 bytes) is transcribed; one byte more is 413', async () => {
    // A constant signal (the streamed 7s): decoded and measured, no speech found; German, so no recogniser runs.
    const fields = { language: 'de', response_format: 'verbose_json' };
    const at = await streamUpload(LIMIT, false, MODEL, '/v1/audio/transcriptions', { start: wavHeader(LIMIT - 44), fields });
    expect(at.status, JSON.stringify(at.body)).toBe(200);
    expect(at.body.duration).toBeCloseTo((LIMIT - 44) / 32000, 2);
    const over = await streamUpload(LIMIT + 1, false, MODEL, '/v1/audio/transcriptions', { start: wavHeader(LIMIT + 1 - 44), fields });
    expect(over.status).toBe(413);
    expect(over.body.error).toMatchObject({ code: 'file_too_large', param: 'file' });
  }, 120_000);

  describe('AUDIO_UPLOAD_LIMIT_BYTES=1000', () => {
    let small: TestPlatform;
    beforeAll(async () => {
      small = await startTestPlatform({ config: { audioUploadLimit: 1000, pocketsphinxPath: 'off' } });
    });
    afterAll(() => small?.close());

    const send = (bytes: number, model: boolean, path = '/v1/audio/transcriptions') => {
      let req = small.caller.http.post(path);
      if (model) req = req.field('model', MODEL);
      return req.attach('file', silentWav(bytes), 'short.wav');
    };

    test.each([
      ['model before the file', true],
      ['no model', false],
    ])('%s: exactly the limit is transcribed; 1,001, 4,096 and 100,000 bytes are 413, nothing kept', async (_, model) => {
      for (const path of ['/v1/audio/transcriptions', '/v1/audio/translations']) {
        const at = await send(1000, model, path);
        expect(at.status, JSON.stringify(at.body)).toBe(200);
        for (const bytes of [1001, 4096, 100_000]) expectError(await send(bytes, model, path), 413, { code: 'file_too_large', param: 'file' });
      }
      for (let i = 0; i < 50 && readdirSync(join(small.config.dataDir, 'tmp')).length; i++) await new Promise((r) => setTimeout(r, 20));
      expect(readdirSync(join(small.config.dataDir, 'tmp'))).toEqual([]);
    });
  });
});

describe('bad input', () => {
  test('not multipart: 415', async () => {
    expectError(await t.caller.http.post('/v1/audio/transcriptions').send({ model: MODEL, file: `${filesUrl}/speech.wav` }), 415, {
      code: 'unsupported_media_type',
    });
    expectError(await t.caller.http.post('/v1/audio/translations').send({ model: MODEL, file: `${filesUrl}/speech.wav` }), 415, {
      code: 'unsupported_media_type',
    });
  });

  test('no file: 400 naming file', async () => {
    expectError(await transcribe({ model: MODEL }), 400, { param: 'file', code: 'required' });
  });

  test('an unknown model: 404 naming model; a model that does not transcribe: 400 naming model', async () => {
    expectError(await transcribe({ model: 'nobody/whisper-nope' }, speech), 404, { code: 'model_not_found', param: 'model' });
    expectError(await transcribe({ model: 'nobody/whisper-nope' }, speech, '/v1/audio/translations'), 404, { code: 'model_not_found', param: 'model' });
    expectError(await transcribe({ model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo' }, speech), 400, { code: 'model_not_available', param: 'model' });
    expectError(await transcribe({ model: 'cartesia/sonic' }, speech, '/v1/audio/translations'), 400, { code: 'model_not_available', param: 'model' });
  });

  test('a file that is not audio of the eight formats: 400 unsupported_format naming file', async () => {
    expectError(await transcribe({ model: MODEL }, join(dir, 'notes.txt')), 400, { code: 'unsupported_format', param: 'file' });
    expectError(await transcribe({ model: MODEL, file: `${filesUrl}/notes.txt` }), 400, { code: 'unsupported_format', param: 'file' });
  });

  test(
    'model after the file is still read (and checked)',
    async () => {
      const after = await t.caller.http.post('/v1/audio/transcriptions').attach('file', tone.flac).field('model', 'nobody/none');
      expectError(after, 404, { code: 'model_not_found', param: 'model' });
      const ok = await t.caller.http.post('/v1/audio/transcriptions').attach('file', tone.flac).field('model', MODEL).field('language', 'de');
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ text: '' });
    },
    SLOW,
  );

  test('file as text that is not an http(s) URL: 400 naming file', async () => {
    expectError(await transcribe({ model: MODEL, file: 'ftp://example.com/a.wav' }), 400, { param: 'file' });
    expectError(await transcribe({ model: MODEL, file: 'just words' }), 400, { param: 'file' });
  });

  test('the other fields are validated against the contract', async () => {
    expectError(await transcribe({ model: MODEL, response_format: 'xml' }, speech), 400, { param: 'response_format', code: 'enum' });
    expectError(await transcribe({ model: MODEL, temperature: '2' }, speech), 400, { param: 'temperature', code: 'maximum' });
    expectError(await transcribe({ model: MODEL, timestamp_granularities: 'char' }, speech), 400, { param: 'timestamp_granularities' });
    // A field the contract does not declare is ignored and named (open bodies), in a form as in JSON.
    expect((await transcribe({ model: MODEL, surprise: 'x' }, speech)).headers['x-ignored-fields']).toBe('surprise');
    expectError(await transcribe({ model: MODEL, diarize: 'true' }, speech), 400, { param: 'diarize', code: 'diarization_not_supported' });
  });

  test('prompt and temperature are accepted', async () => {
    const res = await transcribe({ model: MODEL, prompt: 'numbers', temperature: '0.2', language: 'de' }, tone.wav);
    expect(res.status).toBe(200);
  });
});

describe('the upstream engine: a second server process as the upstream', () => {
  let upstreamDb: ScratchDatabase;
  let upstream: ServerProcess;
  let front: TestPlatform;
  beforeAll(async () => {
    upstreamDb = await scratchDatabase('sqlite');
    upstream = await startServerProcess({ DATABASE_URL: upstreamDb.url, DATA_DIR: join(dir, 'upstream-data'), URL_FETCH_ALLOW_HOSTS: '127.0.0.1' });
    front = await startTestPlatform({
      config: {
        engines: {
          routes: [{ models: ['openai/*'], capabilities: ['transcription'], engine: 'upstream', url: `${upstream.url}/v1`, apiKey: upstream.key }],
        },
      },
    });
  }, SLOW);
  afterAll(async () => {
    await front?.close();
    await upstream?.stop();
    await upstreamDb?.drop();
  });

  test(
    'uploads and URLs are answered by the upstream, with its words',
    async () => {
      const local = await transcribe({ model: MODEL, response_format: 'verbose_json', 'timestamp_granularities[]': 'word' }, speech);
      const viaUpload = await transcribe(
        { model: MODEL, response_format: 'verbose_json', 'timestamp_granularities[]': 'word' },
        speech,
        undefined,
        front.caller.http,
      );
      expect(viaUpload.status, JSON.stringify(viaUpload.body)).toBe(200);
      expect(viaUpload.headers['x-transcription-engine']).toBe('upstream');
      expect(viaUpload.body).toEqual(local.body);
      const viaUrl = await transcribe({ model: MODEL, file: `${filesUrl}/speech.wav` }, undefined, '/v1/audio/translations', front.caller.http);
      expect(viaUrl.status).toBe(200);
      expect(viaUrl.body.text).toBe(local.body.text);
    },
    SLOW,
  );

  test(
    "the upstream's refusal is passed on, naming the field",
    async () => {
      expectError(await transcribe({ model: MODEL }, join(dir, 'notes.txt'), undefined, front.caller.http), 400, { param: 'file' });
    },
    SLOW,
  );

  test(
    'an upstream that cannot be reached: 502',
    async () => {
      const down = await startTestPlatform({
        config: { engines: { routes: [{ models: ['*'], engine: 'upstream', url: 'http://127.0.0.1:1/v1' }] } },
      });
      try {
        expectError(await transcribe({ model: MODEL }, speech, undefined, down.caller.http), 502, { code: 'upstream_unreachable' });
        expectError(await transcribe({ model: MODEL }, speech, '/v1/audio/translations', down.caller.http), 502, { code: 'upstream_unreachable' });
      } finally {
        await down.close();
      }
    },
    SLOW,
  );
});
