// Speech synthesis (`POST /v1/audio/speech`) and voices (`GET /v1/voices`): every format and encoding decodes with
// ffprobe/ffmpeg at the asked rate; the stream carries the same samples as the whole answer; a round trip through
// both local engines (espeak-ng speaks, PocketSphinx transcribes) finds the words; bad input is a 400 naming the
// field; an absent synthesiser says so; the upstream route relays what it answers; and the official client's calls.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ffmpegPath } from '../server/engines/ffmpeg.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const KOKORO = 'hexgrad/Kokoro-82M';
const ORPHEUS = 'canopylabs/orpheus-3b-0.1-ft';
const SONIC = 'cartesia/sonic';
const SENTENCE = 'the weather is good today and the children play in the park';
/** Tests that run the recogniser or several syntheses: the machine is shared and may be slow. */
const SLOW = 120_000;

let t: TestPlatform;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'speech-test-'));
  t = await startTestPlatform();
});
afterAll(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const speech = (body: Record<string, unknown>, http = t.caller.http) =>
  http
    .post('/v1/audio/speech')
    .send(body)
    .buffer(true)
    .parse((res, done) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      // Errors are JSON envelopes (read as objects, as expectError wants); audio and events stay bytes.
      res.on('end', () => {
        const bytes = Buffer.concat(parts);
        done(null, /json/.test(res.headers['content-type'] ?? '') ? JSON.parse(bytes.toString()) : bytes);
      });
    });

// The ffprobe of the devDependency (the machine need not have one on its PATH).
const ffprobe = (createRequire(import.meta.url)('@ffprobe-installer/ffprobe') as { path: string }).path;

/** ffprobe's view of audio bytes: codec, sample rate, channels, duration (a raw format needs its demuxer options). */
function probe(bytes: Buffer, input: string[] = []) {
  const file = join(dir, `probe-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, bytes);
  const out = execFileSync(ffprobe, ['-v', 'error', ...input, '-show_entries', 'stream=codec_name,sample_rate,channels:format=duration', '-of', 'json', file]);
  rmSync(file);
  const parsed = JSON.parse(out.toString());
  return { ...parsed.streams[0], duration: Number(parsed.format.duration) } as { codec_name: string; sample_rate: string; channels: number; duration: number };
}

/** Decodes audio bytes fully with ffmpeg (a broken file fails here) and answers the samples it decoded. */
function decodedSamples(bytes: Buffer, input: string[] = []): number {
  const file = join(dir, `decode-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, bytes);
  const pcm = execFileSync(ffmpegPath(), ['-v', 'error', '-xerror', ...input, '-i', file, '-f', 's16le', '-ac', '1', 'pipe:1'], { maxBuffer: 1 << 28 });
  rmSync(file);
  return pcm.length / 2;
}

describe('GET /v1/voices', () => {
  test("every speech model with its voices, Kokoro's af_alloy and Orpheus's tara among them", async () => {
    const res = await t.caller.http.get('/v1/voices');
    expect(res.status).toBe(200);
    const models = res.body.data.map((m: { model: string }) => m.model);
    expect(models).toEqual(expect.arrayContaining([KOKORO, ORPHEUS, SONIC, 'cartesia/sonic-english']));
    const kokoro = res.body.data.find((m: { model: string }) => m.model === KOKORO);
    expect(kokoro.voices).toContainEqual({ id: `${KOKORO}:af_alloy`, name: 'af_alloy', gender: 'female', language: 'en-us' });
    expect(kokoro.voices).toContainEqual({ id: `${KOKORO}:ff_siwis`, name: 'ff_siwis', gender: 'female', language: 'fr' });
    const orpheus = res.body.data.find((m: { model: string }) => m.model === ORPHEUS);
    expect(orpheus.voices.map((v: { name: string }) => v.name)).toContain('tara');
  });

  test('?model= keeps one model; an unknown one is 404, one that does not speak 400', async () => {
    const one = await t.caller.http.get('/v1/voices').query({ model: SONIC });
    expect(one.status).toBe(200);
    expect(one.body.data).toHaveLength(1);
    expect(one.body.data[0].voices.map((v: { name: string }) => v.name)).toContain('friendly sidekick');
    expectError(await t.caller.http.get('/v1/voices').query({ model: 'nobody/nothing' }), 404, { code: 'model_not_found', param: 'model' });
    expectError(await t.caller.http.get('/v1/voices').query({ model: 'openai/whisper-large-v3' }), 400, { code: 'model_not_available', param: 'model' });
  });
});

describe('POST /v1/audio/speech: formats', () => {
  test(
    'wav (the default): a RIFF WAVE file, 16-bit mono, at the model default rate (24 kHz Kokoro, 44.1 kHz Cartesia) or the asked one',
    async () => {
      const res = await speech({ model: KOKORO, input: 'Hello there.', voice: 'af_alloy' });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^audio\/wav/);
      expect(res.headers['x-speech-engine']).toBe('local-espeak-ng; voice=en-us+f2');
      expect(res.body.subarray(0, 4).toString()).toBe('RIFF');
      expect(res.body.readUInt32LE(4)).toBe(res.body.length - 8);
      expect(probe(res.body)).toMatchObject({ codec_name: 'pcm_s16le', sample_rate: '24000', channels: 1 });
      expect(decodedSamples(res.body)).toBeGreaterThan(24000 * 0.3);
      const sonic = await speech({ model: SONIC, input: 'Hello there.', voice: 'polite man' });
      expect(probe(sonic.body).sample_rate).toBe('44100');
      const asked = await speech({ model: ORPHEUS, input: 'Hello there.', voice: 'tara', sample_rate: 16000 });
      expect(probe(asked.body).sample_rate).toBe('16000');
    },
    SLOW,
  );

  test(
    'mp3 at the asked rate and bit rate',
    async () => {
      const res = await speech({
        model: KOKORO,
        input: 'Hello there, how are you?',
        voice: 'am_adam',
        response_format: 'mp3',
        sample_rate: 22050,
        bit_rate: 64000,
      });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^audio\/mpeg/);
      expect(probe(res.body)).toMatchObject({ codec_name: 'mp3', sample_rate: '22050', channels: 1 });
      expect(decodedSamples(res.body)).toBeGreaterThan(22050 * 0.5);
    },
    SLOW,
  );

  test.each([
    ['pcm_f32le', 'f32le', 4],
    ['pcm_s16le', 's16le', 2],
    ['pcm_mulaw', 'mulaw', 1],
    ['pcm_alaw', 'alaw', 1],
  ])(
    'raw %s: headerless samples that decode at the asked rate',
    async (encoding, demuxer, size) => {
      const res = await speech({ model: ORPHEUS, input: 'Hello there.', voice: 'dan', response_format: 'raw', response_encoding: encoding, sample_rate: 8000 });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/octet-stream/);
      expect(res.body.length % size).toBe(0);
      const input = ['-f', demuxer, '-ar', '8000', '-ac', '1'];
      expect(probe(res.body, input)).toMatchObject({ sample_rate: '8000', channels: 1 });
      expect(decodedSamples(res.body, input)).toBe(res.body.length / size);
    },
    SLOW,
  );

  test(
    'the same request gives the same bytes',
    async () => {
      const body = { model: KOKORO, input: 'Same words, same sound.', voice: 'bf_emma', response_format: 'raw', response_encoding: 'pcm_s16le' };
      const [a, b] = [await speech(body), await speech(body)];
      expect(a.body.equals(b.body)).toBe(true);
      // British English for a `b` voice.
      expect(a.headers['x-speech-engine']).toMatch(/^local-espeak-ng; voice=en-gb\+f\d$/);
    },
    SLOW,
  );
});

/** The events of a `text/event-stream` body: each `data:` payload. */
const events = (text: string) =>
  text
    .split('\n\n')
    .map((block) => block.replace(/^data: /, ''))
    .filter(Boolean);

describe('POST /v1/audio/speech: stream', () => {
  test(
    'Server-Sent Events of audio.tts.chunk, whole samples each, ending with [DONE]: the same samples as the whole answer',
    async () => {
      const body = { model: KOKORO, input: 'One sentence. And then another sentence, somewhat longer than the first.', voice: 'af_heart', sample_rate: 16000 };
      const res = await speech({ ...body, stream: true });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
      const all = events(res.body.toString());
      expect(all.at(-1)).toBe('[DONE]');
      const chunks = all.slice(0, -1).map((e) => JSON.parse(e));
      expect(chunks.length).toBeGreaterThan(0);
      for (const c of chunks) {
        expect(c).toMatchObject({ object: 'audio.tts.chunk', model: KOKORO });
        expect(Buffer.from(c.b64, 'base64').length % 4).toBe(0); // pcm_f32le, the default encoding
      }
      const streamed = Buffer.concat(chunks.map((c) => Buffer.from(c.b64, 'base64')));
      const whole = await speech({ ...body, response_format: 'raw' });
      expect(streamed.equals(whole.body)).toBe(true);
    },
    SLOW,
  );

  test('a stream carries raw samples only: wav or mp3 with stream true is a 400 naming response_format', async () => {
    expectError(await speech({ model: KOKORO, input: 'Hi.', voice: 'af_alloy', stream: true, response_format: 'wav' }), 400, { param: 'response_format' });
    expectError(await speech({ model: KOKORO, input: 'Hi.', voice: 'af_alloy', stream: true, response_format: 'mp3' }), 400, { param: 'response_format' });
  });
});

describe('POST /v1/audio/speech: round trip through both local engines', () => {
  test(
    'what espeak-ng says, PocketSphinx hears: the transcript has words of the sentence',
    async () => {
      const said = await speech({ model: ORPHEUS, input: SENTENCE, voice: 'zac', sample_rate: 16000 });
      expect(said.status).toBe(200);
      const heard = await t.caller.http.post('/v1/audio/transcriptions').field('model', 'openai/whisper-large-v3').attach('file', said.body, 'said.wav');
      expect(heard.status, JSON.stringify(heard.body)).toBe(200);
      const words = new Set(heard.body.text.split(/\s+/));
      const found = ['weather', 'today', 'children', 'play', 'park'].filter((w) => words.has(w));
      expect(found.length, `heard: ${heard.body.text}`).toBeGreaterThanOrEqual(2);
    },
    SLOW * 2,
  );
});

describe('POST /v1/audio/speech: voices, language, pronunciation', () => {
  test(
    'a voice by id; a Kokoro mix spoken with its heaviest voice, which the header says',
    async () => {
      const byId = await speech({ model: KOKORO, input: 'Hi.', voice: `${KOKORO}:am_adam` });
      expect(byId.status).toBe(200);
      const mix = await speech({ model: KOKORO, input: 'Hi.', voice: 'af_bella(1)+am_adam(2)' });
      expect(mix.status).toBe(200);
      expect(mix.headers['x-speech-engine']).toBe(`${byId.headers['x-speech-engine']}; the mix is spoken with am_adam only (espeak-ng cannot blend voices)`);
    },
    SLOW,
  );

  test(
    "language picks espeak-ng's language (zh-hk: Cantonese); a Kokoro voice speaks its own when none is given",
    async () => {
      const yue = await speech({ model: ORPHEUS, input: '你好', voice: 'tara', language: 'zh-hk' });
      expect(yue.status).toBe(200);
      expect(yue.headers['x-speech-engine']).toMatch(/voice=yue\+/);
      const french = await speech({ model: KOKORO, input: 'Bonjour à tous.', voice: 'ff_siwis' });
      expect(french.headers['x-speech-engine']).toMatch(/voice=fr-fr\+f\d/);
    },
    SLOW,
  );

  test(
    'pronunciation_dict: a rule speaks its replacement (the same bytes as the replacement written out)',
    async () => {
      const base = { model: KOKORO, voice: 'am_adam', response_format: 'raw', response_encoding: 'pcm_s16le' };
      const ruled = await speech({ ...base, input: 'OMG, that is it.', extra_params: { pronunciation_dict: ['omg/oh my god'] } });
      const written = await speech({ ...base, input: 'oh my god, that is it.' });
      expect(ruled.status).toBe(200);
      expect(ruled.body.equals(written.body)).toBe(true);
    },
    SLOW,
  );

  test(
    'text is never an option: input starting with dashes is spoken, and writes no file',
    async () => {
      const target = join(dir, 'injected.wav');
      const res = await speech({ model: KOKORO, input: `-w ${target} --help`, voice: 'af_alloy' });
      expect(res.status).toBe(200);
      expect(decodedSamples(res.body)).toBeGreaterThan(0);
      expect(existsSync(target)).toBe(false);
    },
    SLOW,
  );
});

describe('POST /v1/audio/speech: bad input, each a 400 naming its field (404 for an unknown model)', () => {
  const ok = { model: KOKORO, input: 'Hello.', voice: 'af_alloy' };
  test.each([
    ['empty input', { input: '   ' }, 'input', 'invalid_input'],
    ['input over 10,000 characters', { input: 'a '.repeat(5001) }, 'input', 'input_too_long'],
    ['an unknown voice', { voice: 'nobody' }, 'voice', 'invalid_voice'],
    ["another model's voice", { voice: 'tara' }, 'voice', 'invalid_voice'],
    ['a mix with an unknown voice', { voice: 'af_alloy+nobody' }, 'voice', 'invalid_voice'],
    ['a mix weighted 0', { voice: 'af_alloy(0)+am_adam' }, 'voice', 'invalid_voice'],
    ['a mix for a model that takes one voice', { model: ORPHEUS, voice: 'tara+dan' }, 'voice', 'invalid_voice'],
    ['a language espeak-ng lacks', { language: 'xx' }, 'language', 'unsupported_language'],
    ['a sample rate under 8 kHz', { sample_rate: 4000 }, 'sample_rate', 'invalid_sample_rate'],
    ['a sample rate over 48 kHz', { sample_rate: 96000 }, 'sample_rate', 'invalid_sample_rate'],
    ['an mp3 rate MP3 lacks', { response_format: 'mp3', sample_rate: 23000 }, 'sample_rate', 'invalid_sample_rate'],
    ['a pronunciation rule without /', { extra_params: { pronunciation_dict: ['omg'] } }, 'extra_params.pronunciation_dict', 'invalid_value'],
    ['a model that does not speak', { model: 'openai/whisper-large-v3' }, 'model', 'model_not_available'],
  ])('%s', async (_name, change, param, code) => {
    expectError(await speech({ ...ok, ...change }), 400, { param, code });
  });

  test('fields the contract refuses: the validator names them', async () => {
    expectError(await speech({ model: KOKORO, input: 'Hello.' }), 400, { param: 'voice' });
    expectError(await speech({ ...ok, response_format: 'ogg' }), 400, { param: 'response_format' });
    expectError(await speech({ ...ok, bit_rate: 100 }), 400, { param: 'bit_rate' });
  });

  test('an unknown model: 404 model_not_found', async () => {
    expectError(await speech({ ...ok, model: 'nobody/nothing' }), 404, { code: 'model_not_found', param: 'model' });
  });
});

describe('without espeak-ng', () => {
  test('503 engine_unavailable saying it is not installed; voices still listed', async () => {
    const bare = await startTestPlatform({ config: { espeakPath: 'off' } });
    try {
      const res = await speech({ model: KOKORO, input: 'Hello.', voice: 'af_alloy' }, bare.caller.http);
      expectError(res, 503, { code: 'engine_unavailable', type: 'server_error' });
      expect(res.body.error.message).toMatch(/espeak-ng, is not installed/);
      expect((await bare.caller.http.get('/v1/voices')).status).toBe(200);
    } finally {
      await bare.close();
    }
  });
});

describe('the upstream route: the same body posted to <url>/audio/speech, its answer relayed', () => {
  let upstream: Server;
  let received: { path?: string; body?: Record<string, unknown> } = {};
  let routed: TestPlatform;
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => resolve(text));
    });

  beforeAll(async () => {
    upstream = createServer(async (req, res) => {
      const body = JSON.parse(await read(req));
      received = { path: req.url, body };
      if (body.input === 'refuse')
        return res.writeHead(400, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: { message: 'no such voice', param: 'voice' } }));
      if (body.input === 'fail') return res.writeHead(500).end('boom');
      if (body.input === 'hang') return; // never answers: the route's timeoutMs passes
      if (body.stream) {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ object: 'audio.tts.chunk', model: body.model, b64: 'AAAA' })}\n\n`);
        return res.end('data: [DONE]\n\n');
      }
      res.writeHead(200, { 'Content-Type': 'audio/wav' }).end(Buffer.from('RIFF-upstream-bytes'));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    routed = await startTestPlatform({
      config: { engines: { routes: [{ models: ['hexgrad/*'], capabilities: ['speech'], engine: 'upstream', url, model: 'kokoro-local', timeoutMs: 500 }] } },
    });
  });
  afterAll(async () => {
    await routed?.close();
    upstream?.closeAllConnections();
    await new Promise((r) => upstream?.close(r));
  });

  test('bytes and streams are relayed as the upstream answers them, with its content type', async () => {
    const res = await speech({ model: KOKORO, input: 'Hello.', voice: 'any-voice-upstream-knows' }, routed.caller.http);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^audio\/wav/);
    expect(res.headers['x-speech-engine']).toBe('upstream');
    expect(res.body.toString()).toBe('RIFF-upstream-bytes');
    // The route's model name; the contract's defaults are filled in as the platform reads them.
    expect(received).toEqual({
      path: '/v1/audio/speech',
      body: { model: 'kokoro-local', input: 'Hello.', voice: 'any-voice-upstream-knows', response_encoding: 'pcm_f32le', bit_rate: 128000, stream: false },
    });
    const streamed = await speech({ model: KOKORO, input: 'Hello.', voice: 'x', stream: true }, routed.caller.http);
    expect(streamed.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(events(streamed.body.toString())).toEqual([JSON.stringify({ object: 'audio.tts.chunk', model: 'kokoro-local', b64: 'AAAA' }), '[DONE]']);
  });

  test("the upstream's 4xx is passed on; its failure is a 502, its silence a 504", async () => {
    expectError(await speech({ model: KOKORO, input: 'refuse', voice: 'x' }, routed.caller.http), 400, { code: 'upstream_refused', param: 'voice' });
    expectError(await speech({ model: KOKORO, input: 'fail', voice: 'x' }, routed.caller.http), 502, { code: 'upstream_failed' });
    expectError(await speech({ model: KOKORO, input: 'hang', voice: 'x' }, routed.caller.http), 504, { code: 'upstream_timeout' });
  });
});

describe('the official client (together-ai), unchanged but for baseURL', () => {
  test(
    'audio.speech.create: the audio as a Response; with stream true, the chunks; audio.voices.list',
    async () => {
      const together = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
      const res = await together.audio.speech.create({ model: KOKORO, input: 'Hello from the official client.', voice: 'af_alloy', response_format: 'mp3' });
      const mp3 = Buffer.from(await res.arrayBuffer());
      expect(probe(mp3)).toMatchObject({ codec_name: 'mp3', sample_rate: '24000' });
      const stream = await together.audio.speech.create({ model: KOKORO, input: 'Streaming now.', voice: 'af_alloy', stream: true });
      const chunks: Buffer[] = [];
      for await (const chunk of stream) {
        expect(chunk.object).toBe('audio.tts.chunk');
        chunks.push(Buffer.from(chunk.b64, 'base64'));
      }
      expect(Buffer.concat(chunks).length).toBeGreaterThan(0);
      const voices = await together.audio.voices.list();
      expect(voices.data.find((m) => m.model === ORPHEUS)?.voices.map((v) => v.name)).toContain('tara');
    },
    SLOW,
  );
});
