// The realtime websockets (the Audio tag's "Realtime audio over websockets") with a plain `ws` client, as the
// platform's documentation connects: a spoken sentence streamed in 100 ms chunks is heard as it arrives (partial
// results before its end) and in full (a final transcript with its words); text streamed in is spoken a sentence at
// a time; the upgrade request is authenticated and checked like any call.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { ffmpegPath } from '../server/engines/ffmpeg.ts';
import { findRecogniser } from '../server/engines/transcription.ts';
import { expectError, until } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

interface Conn {
  ws: WebSocket;
  events: any[];
  next(type: string, timeoutMs?: number): Promise<any>;
}

function connect(path: string, key: string | null = t.caller.key): Promise<Conn> {
  const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}${path}`, { headers: key ? { Authorization: `Bearer ${key}` } : {} });
  const events: any[] = [];
  let seen = 0;
  ws.on('message', (m) => events.push(JSON.parse(String(m))));
  // Each call takes the next event of that type after the last one taken.
  const next = async (type: string, timeoutMs = 30_000) => {
    const found = () => events.findIndex((e, i) => i >= seen && e.type === type);
    if (!(await until(() => found() >= 0, timeoutMs))) throw new Error(`no ${type} event; got ${JSON.stringify(events.map((e) => e.type))}`);
    const i = found();
    seen = i + 1;
    return events[i];
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, events, next }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body: JSON.parse(body) })));
    });
    ws.once('error', reject);
  });
}

const refused = (p: Promise<unknown>) =>
  p.then(
    () => ({ status: 101, body: undefined }),
    (e) => e as { status: number; body: any },
  );
const REALTIME = '/v1/realtime?model=openai/whisper-large-v3&input_audio_format=pcm_s16le_16000';

/** espeak-ng speaking `text` as 16 kHz 16-bit mono PCM. */
function spoken(text: string): Buffer {
  const wav = spawnSync('espeak-ng', ['-v', 'en-us+f2', '-s', '140', '--stdout', text]).stdout;
  return spawnSync(ffmpegPath(undefined), ['-loglevel', 'error', '-i', 'pipe:0', '-ac', '1', '-ar', '16000', '-f', 's16le', 'pipe:1'], { input: wav }).stdout;
}

describe('GET /v1/realtime: transcription', () => {
  test.runIf(findRecogniser(undefined) !== undefined)(
    'a sentence streamed in 100 ms chunks: partial results before its end, then a final transcript with its words',
    async () => {
      const c = await connect(REALTIME);
      const created = await c.next('session.created');
      expect(created.session).toMatchObject({ object: 'realtime.session', modalities: ['audio'], model: 'openai/whisper-large-v3' });
      const audio = Buffer.concat([spoken('the children are playing in the garden'), Buffer.alloc(32_000)]); // then 1 s of silence
      const chunks: Buffer[] = [];
      for (let i = 0; i < audio.length; i += 3200) chunks.push(audio.subarray(i, i + 3200));
      const send = (b: Buffer) => c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: b.toString('base64') }));
      const cut = Math.floor((chunks.length - 10) * 0.7);
      chunks.slice(0, cut).forEach(send);
      // The rest of the sentence has not been sent: what comes now is a partial result.
      const partial = await c.next('conversation.item.input_audio_transcription.delta');
      expect(partial.delta).toMatch(/\w/);
      chunks.slice(cut).forEach(send);
      const done = await c.next('conversation.item.input_audio_transcription.completed');
      expect(done.item_id).toBe(partial.item_id);
      const words = done.transcript.split(' ');
      expect(
        ['playing', 'garden'].filter((w) => words.includes(w)),
        done.transcript,
      ).not.toEqual([]);
      c.ws.close();
    },
    60_000,
  );

  test('turn detection is configured by an event and acknowledged; a bad event or audio answers a failed event', async () => {
    const c = await connect(`${REALTIME}&turn_detection=none`);
    expect((await c.next('session.created')).session.turn_detection).toBeNull();
    c.ws.send(JSON.stringify({ type: 'transcription_session.updated', session: { turn_detection: { threshold: 0.5, min_silence_duration_ms: 800 } } }));
    expect((await c.next('transcription_session.updated')).session.turn_detection).toMatchObject({
      type: 'server_vad',
      threshold: 0.5,
      min_silence_duration_ms: 800,
    });
    c.ws.send(JSON.stringify({ type: 'transcription_session.updated', session: { turn_detection: { threshold: 2 } } }));
    expect((await c.next('conversation.item.input_audio_transcription.failed')).error).toMatchObject({
      code: 'invalid_event',
      param: 'session.turn_detection.threshold',
    });
    c.ws.send('not json');
    expect((await c.next('conversation.item.input_audio_transcription.failed')).error).toMatchObject({ code: 'invalid_json', type: 'invalid_request_error' });
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: '***' }));
    expect((await c.next('conversation.item.input_audio_transcription.failed')).error).toMatchObject({ code: 'invalid_audio', param: 'audio' });
    c.ws.close();
  });

  test('the upgrade is authenticated and checked like any call: 401, 400, 404 as HTTP answers; a plain GET 426', async () => {
    expect(await refused(connect(REALTIME, null))).toMatchObject({ status: 401, body: { error: { code: 'missing_api_key' } } });
    expect(await refused(connect(REALTIME, 'tpk_nope'))).toMatchObject({ status: 401, body: { error: { code: 'invalid_api_key' } } });
    const chat = await refused(connect('/v1/realtime?model=meta-llama/Llama-3.3-70B-Instruct-Turbo&input_audio_format=pcm_s16le_16000'));
    expect(chat).toMatchObject({ status: 400, body: { error: { code: 'model_not_available', param: 'model' } } });
    expect(await refused(connect('/v1/realtime?model=acme/none&input_audio_format=pcm_s16le_16000'))).toMatchObject({ status: 404 });
    expect(await refused(connect('/v1/realtime?model=openai/whisper-large-v3&input_audio_format=mp3'))).toMatchObject({
      status: 400,
      body: { error: { param: 'input_audio_format' } },
    });
    expectError(await t.caller.http.get(REALTIME), 426, { code: 'upgrade_required' });
    expectError(await t.caller.http.get('/v1/audio/speech/websocket'), 426, { code: 'upgrade_required' });
  });
});

describe('GET /v1/audio/speech/websocket: speech', () => {
  test('text is spoken a sentence at a time as it arrives, the rest at the commit; the voice can change', async () => {
    const c = await connect('/v1/audio/speech/websocket?model=hexgrad/Kokoro-82M&voice=af_heart');
    expect((await c.next('session.created')).session).toMatchObject({ object: 'realtime.tts.session', model: 'hexgrad/Kokoro-82M', voice: 'af_heart' });
    c.ws.send(JSON.stringify({ type: 'input_text_buffer.append', text: 'Hello there. How are' }));
    expect((await c.next('conversation.item.input_text.received')).text).toBe('Hello there. How are');
    // The first sentence is spoken before the text ends.
    expect((await c.next('conversation.item.audio_output.done')).item_id).toBe('tts_1');
    const first = c.events.filter((e) => e.type === 'conversation.item.audio_output.delta').map((e) => Buffer.from(e.delta, 'base64'));
    const seconds = Buffer.concat(first).length / 2 / 24_000;
    expect(seconds).toBeGreaterThan(0.3);
    expect(seconds).toBeLessThan(3);
    c.ws.send(JSON.stringify({ type: 'tts_session.updated', session: { voice: 'am_adam' } }));
    expect((await c.next('tts_session.updated')).session.voice).toBe('am_adam');
    c.ws.send(JSON.stringify({ type: 'tts_session.updated', session: { voice: 'nobody' } }));
    expect((await c.next('conversation.item.tts.failed')).error).toMatchObject({ code: 'invalid_voice', param: 'session.voice' });
    c.ws.send(JSON.stringify({ type: 'input_text_buffer.append', text: ' you today' }));
    c.ws.send(JSON.stringify({ type: 'input_text_buffer.commit' }));
    expect((await c.next('conversation.item.audio_output.done')).item_id).toBe('tts_2');
    c.ws.close();
  });

  test('a max_partial_length out of range, or a voice the model lacks, is refused before the upgrade', async () => {
    expect(await refused(connect('/v1/audio/speech/websocket?max_partial_length=0'))).toMatchObject({
      status: 400,
      body: { error: { param: 'max_partial_length' } },
    });
    expect(await refused(connect('/v1/audio/speech/websocket?voice=nobody'))).toMatchObject({ status: 400, body: { error: { param: 'voice' } } });
  });
});
