// The realtime websockets: GET /v1/realtime (transcription of streamed audio) and GET /v1/audio/speech/websocket
// (speech of streamed text). The pipeline has authenticated and validated the upgrade request; a handler checks the
// model and voice, then answers a websocket reply whose session speaks the events of the Audio tag's "Realtime
// audio over websockets" (engines/realtime.ts does the listening and the cutting of text).
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { WebSocket } from 'ws';
import { apiError, badRequest } from '../../core/errors.ts';
import { ffmpegPath } from '../../engines/ffmpeg.ts';
import { DEFAULT_TURN_DETECTION, StreamingTranscriber, TextBuffer, type TranscriptionEvent, type TurnDetection } from '../../engines/realtime.ts';
import { espeakLanguage, espeakLanguages, findSynthesiser, type SpeechRequest, synthesise, variantOf } from '../../engines/speech.ts';
import { findRecogniser } from '../../engines/transcription.ts';
import { reply } from '../../http/reply.ts';
import { speechVoices } from '../models/index.ts';
import type { Context } from '../types.ts';
import { transcriptionModel } from './rules.ts';
import { chooseVoice, quoted, speechModel } from './speech-rules.ts';

const MAX_TEXT = 10_000;
const MAX_BUFFERED_TEXT = 100_000;
const TTS_RATE = 24_000;

/** The error envelope's inner object, as the failed events carry it. */
const envelope = (code: string, message: string, param: string | null = null) => ({ message, type: 'invalid_request_error', param, code });

/** Parses one client message: its event, or why it is not one (answered with the session's failed event). */
type ClientEvent = { type: string; invalid?: undefined; [k: string]: unknown } | { invalid: string; code: string };
function eventOf(data: unknown, isBinary: boolean): ClientEvent {
  if (isBinary) return { invalid: 'Events are JSON text messages; a binary message is not one.', code: 'invalid_json' };
  try {
    const event = JSON.parse(String(data));
    if (typeof event?.type !== 'string') return { invalid: "An event is a JSON object with a string 'type'.", code: 'invalid_event' };
    return event;
  } catch {
    return { invalid: 'The message is not JSON.', code: 'invalid_json' };
  }
}

const send = (ws: WebSocket, event: object) => {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(event));
};

// ---------------------------------------------------------------------------------------------------------------

const TURN_RANGES: Record<Exclude<keyof TurnDetection, 'type'>, [number, number, boolean]> = {
  threshold: [0, 1, false],
  min_silence_duration_ms: [0, 10_000, true],
  min_speech_duration_ms: [0, 10_000, true],
  max_speech_duration_s: [0.5, 30, false],
  speech_pad_ms: [0, 2000, true],
};

/** Turn detection from an object of its fields (absent ones take the defaults); a bad field throws naming it. */
function turnDetection(given: Record<string, unknown>, prefix: string): TurnDetection {
  const out: TurnDetection = { ...DEFAULT_TURN_DETECTION };
  if (given.type !== undefined && given.type !== 'server_vad')
    throw badRequest("turn_detection's type is 'server_vad' (or send null for none).", `${prefix}type`);
  for (const [name, [min, max, whole]] of Object.entries(TURN_RANGES)) {
    const v = given[name];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !(v >= min && v <= max) || (whole && !Number.isInteger(v)))
      throw badRequest(`${name} must be ${whole ? 'a whole number' : 'a number'} from ${min} to ${max}.`, `${prefix}${name}`);
    (out as unknown as Record<string, number>)[name] = v;
  }
  return out;
}

export async function realtimeTranscription(ctx: Context<'realtimeTranscription'>) {
  const { query } = ctx;
  const model = await transcriptionModel(ctx.db.prisma, ctx.identity.projectId, query.model, 'transcribe');
  const { turn_detection: mode, input_audio_format: _, model: __, ...fields } = query;
  const turn = mode === 'none' ? null : turnDetection(fields, '');
  const recogniser = findRecogniser(ctx.config.pocketsphinxPath);
  const tmpDir = join(ctx.config.dataDir, 'tmp');
  return reply.websocket((ws) => {
    const session = { id: `sess_${randomUUID().replace(/-/g, '')}`, object: 'realtime.session', modalities: ['audio'], model: model.id, turn_detection: turn };
    const failed = (error: ReturnType<typeof envelope>, itemId: string | null = null) =>
      send(ws, { type: 'conversation.item.input_audio_transcription.failed', ...(itemId ? { item_id: itemId } : {}), error });
    const emit = (e: TranscriptionEvent) => {
      if (e.kind === 'delta') send(ws, { type: 'conversation.item.input_audio_transcription.delta', item_id: e.itemId, delta: e.text });
      else if (e.kind === 'completed') send(ws, { type: 'conversation.item.input_audio_transcription.completed', item_id: e.itemId, transcript: e.text });
      else failed(envelope(e.code, e.message), e.itemId);
    };
    const transcriber = new StreamingTranscriber(recogniser, tmpDir, emit);
    transcriber.setTurnDetection(turn);
    send(ws, { type: 'session.created', session });
    ws.on('message', (data, isBinary) => {
      const event = eventOf(data, isBinary);
      if (event.invalid !== undefined) return failed(envelope(event.code, event.invalid));
      switch (event.type) {
        case 'input_audio_buffer.append': {
          const audio = event.audio;
          if (typeof audio !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(audio) || audio.length % 4 !== 0)
            return failed(envelope('invalid_audio', "'audio' is base64 of 16 kHz 16-bit little-endian mono PCM.", 'audio'));
          return transcriber.append(Buffer.from(audio, 'base64'));
        }
        case 'input_audio_buffer.commit':
          return transcriber.commit();
        case 'transcription_session.updated': {
          const given = (event.session as { turn_detection?: unknown } | undefined)?.turn_detection;
          try {
            if (given !== null && (typeof given !== 'object' || Array.isArray(given)))
              throw badRequest('session.turn_detection is an object of turn detection settings, or null for none.', 'session.turn_detection');
            session.turn_detection = given === null ? null : turnDetection(given as Record<string, unknown>, 'session.turn_detection.');
          } catch (err) {
            const e = err as { message: string; param: string | null };
            return failed(envelope('invalid_event', e.message, e.param));
          }
          transcriber.setTurnDetection(session.turn_detection);
          return send(ws, { type: 'transcription_session.updated', session: { turn_detection: session.turn_detection } });
        }
        default:
          return failed(
            envelope(
              'invalid_event',
              `${quoted(event.type)} is not an event of this websocket (input_audio_buffer.append, input_audio_buffer.commit, transcription_session.updated).`,
              'type',
            ),
          );
      }
    });
    ws.on('close', () => void transcriber.close());
  });
}

// ---------------------------------------------------------------------------------------------------------------

export async function realtimeSpeech(ctx: Context<'realtimeSpeech'>) {
  const { query } = ctx;
  const model = await speechModel(ctx.db.prisma, ctx.identity.projectId, query.model ?? 'hexgrad/Kokoro-82M');
  const maxPartial = query.max_partial_length ?? 250;
  if (!Number.isInteger(maxPartial) || maxPartial < 1 || maxPartial > MAX_TEXT)
    throw badRequest(`max_partial_length must be 1 to ${MAX_TEXT}.`, 'max_partial_length');
  const firstVoice = speechVoices().get(model.id)![0]!.name;
  let chosen = chooseVoice(model.id, query.voice ?? firstVoice);
  const espeak = findSynthesiser(ctx.config.espeakPath);
  if (!espeak)
    throw apiError(
      503,
      'engine_unavailable',
      'The local speech engine, espeak-ng, is not installed on this server (install espeak-ng, or set ESPEAK_PATH).',
      null,
    );
  const language = espeakLanguage(query.language ?? 'en', await espeakLanguages(espeak));
  if (!language) throw badRequest(`The local speech engine does not speak the language ${quoted(query.language ?? 'en')}.`, 'language', 'unsupported_language');
  const ffmpeg = ffmpegPath(ctx.config.ffmpegPath);
  return reply.websocket((ws) => {
    const session = {
      id: `sess_${randomUUID().replace(/-/g, '')}`,
      object: 'realtime.tts.session',
      modalities: ['text', 'audio'],
      model: model.id,
      voice: chosen.voice.name,
    };
    const failed = (code: string, message: string, param: string | null = null) =>
      send(ws, { type: 'conversation.item.tts.failed', error: envelope(code, message, param) });
    const text = new TextBuffer(maxPartial);
    let items = 0;
    let chain: Promise<void> = Promise.resolve();
    let open = true;
    // Pieces are spoken one after another, in order, each with the voice in force when it was cut.
    const speak = (piece: string) => {
      const itemId = `tts_${++items}`;
      const request: SpeechRequest = {
        text: piece,
        format: 'raw',
        encoding: 'pcm_s16le',
        sampleRate: TTS_RATE,
        bitRate: 128_000,
        voice: `${language}+${variantOf(model.id, chosen.voice.name, chosen.voice.gender)}`,
      };
      chain = chain.then(async () => {
        if (!open) return;
        try {
          for await (const chunk of synthesise(espeak, ffmpeg, request)) {
            if (!open) break;
            send(ws, { type: 'conversation.item.audio_output.delta', item_id: itemId, delta: chunk.toString('base64') });
          }
          send(ws, { type: 'conversation.item.audio_output.done', item_id: itemId });
        } catch (err) {
          failed('engine_unavailable', `The speech engine failed: ${(err as Error).message}`);
        }
      });
    };
    send(ws, { event_id: `evt_${randomUUID().replace(/-/g, '')}`, type: 'session.created', session });
    ws.on('message', (data, isBinary) => {
      const event = eventOf(data, isBinary);
      if (event.invalid !== undefined) return failed(event.code, event.invalid);
      switch (event.type) {
        case 'input_text_buffer.append': {
          const t = event.text;
          if (typeof t !== 'string') return failed('invalid_event', "input_text_buffer.append carries the text as a string 'text'.", 'text');
          if (t.length > MAX_TEXT) return failed('input_too_long', `A message's text is at most ${MAX_TEXT} characters; this one has ${t.length}.`, 'text');
          if (text.length + t.length > MAX_BUFFERED_TEXT)
            return failed('input_too_long', `The buffer holds at most ${MAX_BUFFERED_TEXT} characters: commit what it holds first.`, 'text');
          send(ws, { type: 'conversation.item.input_text.received', text: t });
          for (const piece of text.append(t)) speak(piece);
          return;
        }
        case 'input_text_buffer.commit': {
          const rest = text.flush();
          if (rest) speak(rest);
          return;
        }
        case 'input_text_buffer.clear':
          return text.clear();
        case 'tts_session.updated': {
          const voice = (event.session as { voice?: unknown } | undefined)?.voice;
          if (voice !== undefined) {
            try {
              if (typeof voice !== 'string') throw badRequest('session.voice is a string.', 'session.voice', 'invalid_voice');
              chosen = chooseVoice(model.id, voice);
            } catch (err) {
              return failed('invalid_voice', (err as Error).message, 'session.voice');
            }
            session.voice = chosen.voice.name;
          }
          return send(ws, { type: 'tts_session.updated', session });
        }
        default:
          return failed(
            'invalid_event',
            `${quoted(event.type)} is not an event of this websocket (input_text_buffer.append, input_text_buffer.commit, input_text_buffer.clear, tts_session.updated).`,
            'type',
          );
      }
    });
    ws.on('close', () => {
      open = false;
    });
  });
}
