// Module `audio`: speech synthesis and the speech models' voices. parse -> model -> checks -> engine (local:
// espeak-ng then ffmpeg; or an upstream server, relayed as it answers) -> the audio, whole or as events.
import { ApiError, badRequest } from '../../core/errors.ts';
import { ffmpegPath } from '../../engines/ffmpeg.ts';
import type { UpstreamRoute } from '../../engines/routes.ts';
import { BYTES_PER_SAMPLE, espeakLanguage, espeakLanguages, findSynthesiser, type SpeechRequest, speak, synthesise, variantOf } from '../../engines/speech.ts';
import { upstreamFetch } from '../../engines/upstream.ts';
import { reply } from '../../http/reply.ts';
import { speechVoices } from '../models/index.ts';
import type { Context } from '../types.ts';
import { acceptSpeech, chooseVoice, quoted, type SpeechBody, speechModel } from './speech-rules.ts';
import { speechChunk, voicesWire } from './wire.ts';

const CONTENT_TYPES = { wav: 'audio/wav', mp3: 'audio/mpeg', raw: 'application/octet-stream' } as const;

export async function createSpeech(ctx: Context<'createSpeech'>) {
  const body = ctx.body as SpeechBody;
  const model = await speechModel(ctx.db.prisma, ctx.identity.projectId, body.model);
  const accepted = acceptSpeech(body, model.id);
  const route = ctx.engines.routeFor('speech', model.id);
  if (route.engine === 'upstream') return upstream(route, body);

  const { voice, note } = chooseVoice(model.id, body.voice);
  const espeak = findSynthesiser(ctx.config.espeakPath);
  if (!espeak) {
    throw new ApiError(
      503,
      'engine_unavailable',
      `The local speech engine, espeak-ng, is not installed on this server (install the espeak-ng package, or set ESPEAK_PATH to its binary), and ${model.id} is not routed to an upstream engine.`,
      null,
      'server_error',
    );
  }
  const language = espeakLanguage(body.language ?? voice.language, await espeakLanguages(espeak));
  if (!language)
    throw badRequest(`The local speech engine does not speak the language ${quoted(body.language ?? voice.language)}.`, 'language', 'unsupported_language');
  const request: SpeechRequest = { ...accepted, voice: `${language}+${variantOf(model.id, voice.name, voice.gender)}` };
  const headers = { 'x-speech-engine': `local-espeak-ng; voice=${request.voice}${note ? `; ${note}` : ''}` };
  const ffmpeg = ffmpegPath(ctx.config.ffmpegPath);
  if (accepted.stream) return reply.sse(events(espeak, ffmpeg, request, model.id), { headers });
  return reply.text(await speak(espeak, ffmpeg, request), CONTENT_TYPES[accepted.format], { headers });
}

/** The raw samples as `audio.tts.chunk` events, each of whole samples, as the engine makes them. */
async function* events(espeak: string, ffmpeg: string, request: SpeechRequest, model: string) {
  const size = BYTES_PER_SAMPLE[request.encoding];
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of synthesise(espeak, ffmpeg, request)) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    const whole = pending.length - (pending.length % size);
    if (!whole) continue;
    yield speechChunk(model, pending.subarray(0, whole));
    pending = pending.subarray(whole);
  }
  if (pending.length) yield speechChunk(model, pending);
}

/** The same body to the upstream's `/audio/speech` (its own model name when the route gives one), relayed as it arrives. */
async function upstream(route: UpstreamRoute, body: SpeechBody) {
  const res = await upstreamFetch(route, '/audio/speech', { ...body, model: route.model ?? body.model });
  const type = res.headers.get('content-type') ?? 'application/octet-stream';
  const chunks = (res.body ?? []) as AsyncIterable<Buffer>;
  return reply.stream(chunks, type, { headers: { 'x-speech-engine': 'upstream' } });
}

export async function listVoices({ db, identity, query }: Context<'listVoices'>) {
  const voices = speechVoices();
  if (query.model === undefined) return voicesWire(voices);
  const model = await speechModel(db.prisma, identity.projectId, query.model);
  return voicesWire(new Map([[model.id, voices.get(model.id)!]]));
}
