// Module `audio`: the rules of a speech request (the spec's createSpeech): which model, which voice, which text and
// which output. Every check answers a 400 naming its field before any audio is made.
import { apiError, badRequest, withArticle } from '../../core/errors.ts';
import type { Db } from '../../db/index.ts';
import { MP3_RATES, type SpeechEncoding, type SpeechFormat } from '../../engines/speech.ts';
import { capabilities, findModel, type SpeechVoice, speechVoices } from '../models/index.ts';

/** The longest `input`, in characters (this server's; the platform publishes none). */
export const MAX_INPUT_CHARS = 10_000;
/** The most rules `extra_params.pronunciation_dict` may hold (each is applied over the whole text). */
export const MAX_PRONUNCIATION_RULES = 1000;
export const MIN_RATE = 8000;
export const MAX_RATE = 48_000;

/** A value as messages quote it: at most 64 characters. */
export const quoted = (value: string) => `'${value.length > 64 ? `${value.slice(0, 63)}…` : value}'`;

/** A model's own output rate when the request gives none (the platform's: Kokoro and Orpheus 24 kHz, Cartesia 44.1 kHz). */
const nativeRate = (model: string) => (model.startsWith('cartesia/') ? 44_100 : 24_000);

export interface SpeechBody {
  model: string;
  input: string;
  voice: string;
  response_format?: SpeechFormat;
  language?: string;
  response_encoding?: SpeechEncoding;
  sample_rate?: number;
  bit_rate?: number;
  stream?: boolean;
  extra_params?: { pronunciation_dict?: string[] };
}

/** The catalogue model that speaks: 404 when unknown, 400 when it does not speak. */
export async function speechModel(db: Db, projectId: string, id: string) {
  const model = await findModel(db, projectId, id);
  if (!model) throw apiError(404, 'model_not_found', `The model '${id}' does not exist or is not available to this project.`, 'model');
  if (!capabilities(model).includes('speech') || !speechVoices().has(model.id)) {
    throw badRequest(
      `'${id}' is ${withArticle(model.type)} model that does not speak; use a speech model such as hexgrad/Kokoro-82M (GET /v1/voices lists them).`,
      'model',
      'model_not_available',
    );
  }
  return model;
}

export interface AcceptedSpeech {
  text: string;
  format: SpeechFormat;
  encoding: SpeechEncoding;
  sampleRate: number;
  bitRate: number;
  stream: boolean;
}

/** The output and text checks every engine's request passes (the voice and language are the local engine's). */
export function acceptSpeech(body: SpeechBody, model: string): AcceptedSpeech {
  const length = [...body.input].length;
  if (!body.input.trim()) throw badRequest("'input' is empty: give the text to speak.", 'input', 'invalid_input');
  if (length > MAX_INPUT_CHARS) {
    throw badRequest(`'input' has ${length} characters; at most ${MAX_INPUT_CHARS} are spoken in one request.`, 'input', 'input_too_long');
  }
  const stream = body.stream === true;
  const format = body.response_format ?? (stream ? 'raw' : 'wav');
  if (stream && format !== 'raw') {
    throw badRequest(`A stream carries raw samples only: send response_format 'raw' (or omit it) with stream true, not ${quoted(format)}.`, 'response_format');
  }
  const sampleRate = body.sample_rate ?? nativeRate(model);
  if (sampleRate < MIN_RATE || sampleRate > MAX_RATE) {
    throw badRequest(`'sample_rate' must be ${MIN_RATE} to ${MAX_RATE} Hz, not ${sampleRate}.`, 'sample_rate', 'invalid_sample_rate');
  }
  if (format === 'mp3' && !MP3_RATES.includes(sampleRate)) {
    throw badRequest(`MP3 has no ${sampleRate} Hz rate: use one of ${MP3_RATES.join(', ')}.`, 'sample_rate', 'invalid_sample_rate');
  }
  return {
    text: pronounce(body.input, body.extra_params?.pronunciation_dict ?? []),
    format,
    encoding: body.response_encoding ?? 'pcm_f32le',
    sampleRate,
    bitRate: body.bit_rate ?? 128_000,
    stream,
  };
}

/** `text` with each rule `<source>/<replacement>` applied in order, to whole words, ignoring case. */
export function pronounce(text: string, rules: string[]): string {
  const param = 'extra_params.pronunciation_dict';
  if (rules.length > MAX_PRONUNCIATION_RULES) throw badRequest(`At most ${MAX_PRONUNCIATION_RULES} pronunciation rules are taken.`, param);
  let out = text;
  for (const [i, rule] of rules.entries()) {
    const cut = rule.indexOf('/');
    const source = cut > 0 ? rule.slice(0, cut).trim() : '';
    if (!source) throw badRequest(`Pronunciation rule ${i} must be '<source>/<replacement>', such as 'omg/oh my god'.`, param);
    const escaped = source.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const replacement = rule.slice(cut + 1);
    out = out.replace(new RegExp(`(?<![\\p{L}\\p{N}])${escaped}(?![\\p{L}\\p{N}])`, 'giu'), () => replacement);
  }
  return out;
}

export interface ChosenVoice {
  voice: SpeechVoice;
  /** Set when a Kokoro mix was asked for: what the local engine does with it. */
  note?: string;
}

/**
 * The voice `voice` names among `model`'s: by name or id (`<model>:<name>`); for Kokoro, a mix `a(2)+b(1)` whose
 * heaviest voice (the first of equals) is the one the local engine speaks with.
 */
export function chooseVoice(model: string, voice: string): ChosenVoice {
  const voices = speechVoices().get(model) ?? [];
  const find = (name: string) => {
    const bare = name.startsWith(`${model}:`) ? name.slice(model.length + 1) : name;
    return voices.find((v) => v.name === bare) ?? voices.find((v) => v.name.toLowerCase() === bare.toLowerCase());
  };
  const unknown = (name: string) =>
    badRequest(
      `${quoted(name)} is not a voice of ${model}: use one GET /v1/voices?model=${encodeURIComponent(model)} lists, such as '${voices[0]?.name}'.`,
      'voice',
      'invalid_voice',
    );
  const single = find(voice.trim());
  if (single) return { voice: single };
  if (!voice.includes('+')) throw unknown(voice);
  if (model !== 'hexgrad/Kokoro-82M')
    throw badRequest(`${model} takes a single voice; only hexgrad/Kokoro-82M mixes voices with '+'.`, 'voice', 'invalid_voice');
  let heaviest: { voice: SpeechVoice; weight: number } | undefined;
  for (const part of voice.split('+')) {
    const m = /^\s*([^()]+?)\s*(?:\(\s*(\d+(?:\.\d+)?)\s*\))?\s*$/.exec(part);
    const found = m ? find(m[1]!) : undefined;
    if (!found) throw unknown(m?.[1] ?? part);
    const weight = m![2] === undefined ? 1 : Number(m![2]);
    if (!(weight > 0)) throw badRequest(`The weight of '${found.name}' in the mix must be above 0.`, 'voice', 'invalid_voice');
    if (!heaviest || weight > heaviest.weight) heaviest = { voice: found, weight };
  }
  return { voice: heaviest!.voice, note: `the mix is spoken with ${heaviest!.voice.name} only (espeak-ng cannot blend voices)` };
}
