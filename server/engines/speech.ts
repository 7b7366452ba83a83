// The speech engine interface, and its local engine: espeak-ng (a formant synthesiser: intelligible, robotic, far from
// a neural voice) speaks the text, and ffmpeg resamples and encodes what it says. espeak-ng runs without a shell and
// reads the text on its standard input, so no text can become an option or a command; SSML and other markup are off
// (the text is spoken as written).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { onPath } from './tools.ts';

export type SpeechFormat = 'mp3' | 'wav' | 'raw';
export type SpeechEncoding = 'pcm_f32le' | 'pcm_s16le' | 'pcm_mulaw' | 'pcm_alaw';

export interface SpeechRequest {
  text: string;
  /** An espeak-ng voice: a language, optionally `+` a variant (`en-us+m3`). */
  voice: string;
  format: SpeechFormat;
  /** For `raw` only: `wav` is 16-bit PCM, `mp3` is MP3. */
  encoding: SpeechEncoding;
  sampleRate: number;
  /** For `mp3` only, in bits per second. */
  bitRate: number;
}

/** Bytes per sample of each raw encoding (mono). */
export const BYTES_PER_SAMPLE: Record<SpeechEncoding, number> = { pcm_f32le: 4, pcm_s16le: 2, pcm_mulaw: 1, pcm_alaw: 1 };

/** The sample rates an MP3 stream can have (MPEG-1, 2 and 2.5). */
export const MP3_RATES = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000];

export class SpeechEngineFailed extends Error {}

/** The configured synthesiser: `ESPEAK_PATH` (when that file exists), else `espeak-ng` on the PATH; `off` disables it. */
export function findSynthesiser(configured: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (configured === 'off') return undefined;
  if (configured) return existsSync(configured) ? configured : undefined;
  return onPath('espeak-ng', env);
}

// Variants of espeak-ng's standard set, by gender (the novelty ones, whisper and croak, are left out).
const VARIANTS = { female: ['f1', 'f2', 'f3', 'f4', 'f5'], male: ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'] } as const;

/** FNV-1a of a string: a stable small hash, the same on every machine and release. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h;
}

/** A voice's espeak-ng variant: one of its gender's, chosen by the FNV-1a hash of `<model>/<voice name>`. */
export const variantOf = (model: string, name: string, gender: 'female' | 'male'): string => {
  const pool = VARIANTS[gender];
  return pool[fnv1a(`${model}/${name}`) % pool.length]!;
};

// Language codes (the platform's ISO 639-1 codes and lower-case locales) whose espeak-ng voice has another name.
const LANGUAGE_ALIASES: Record<string, string> = {
  en: 'en-us',
  fr: 'fr-fr',
  zh: 'cmn',
  'zh-cn': 'cmn',
  'zh-tw': 'cmn',
  'zh-hk': 'yue',
  'pt-pt': 'pt',
  'es-es': 'es',
  'es-mx': 'es-419',
  'en-uk': 'en-gb',
};

/**
 * The espeak-ng language of a language code, or undefined when espeak-ng has none: an alias above, else the code
 * itself, else its language part (`de-at` -> `de`). `languages` are espeak-ng's (`espeakLanguages`).
 */
export function espeakLanguage(code: string, languages: ReadonlySet<string>): string | undefined {
  const lower = code.toLowerCase();
  for (const c of [lower, lower.split('-')[0]!]) {
    const name = LANGUAGE_ALIASES[c] ?? c;
    if (languages.has(name)) return name;
  }
  return undefined;
}

const listed = new Map<string, Promise<ReadonlySet<string>>>();

/** The languages the installed espeak-ng speaks (`espeak-ng --voices`), read once per binary. */
export function espeakLanguages(espeak: string): Promise<ReadonlySet<string>> {
  let languages = listed.get(espeak);
  if (!languages) {
    languages = new Promise((resolve, reject) => {
      const child = spawn(espeak, ['--voices'], { stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      child.stdout.on('data', (c) => (out += c));
      child.once('error', (e) => reject(new SpeechEngineFailed(`espeak-ng could not start: ${e.message}`)));
      child.once('close', (code) => {
        if (code !== 0) return reject(new SpeechEngineFailed(`espeak-ng --voices exited with ${code}`));
        // Lines `Pty Language Age/Gender VoiceName File Other...`.
        resolve(
          new Set(
            out
              .split('\n')
              .slice(1)
              .map((l) => l.trim().split(/\s+/)[1]!)
              .filter(Boolean),
          ),
        );
      });
    });
    listed.set(espeak, languages);
    languages.catch(() => listed.delete(espeak));
  }
  return languages;
}

/** ffmpeg's output options for a request: resampled to mono at its rate, in its format. */
function outputArgs(req: SpeechRequest): string[] {
  const common = ['-ac', '1', '-ar', String(req.sampleRate), '-map_metadata', '-1', '-fflags', '+bitexact'];
  switch (req.format) {
    case 'mp3':
      return [...common, '-c:a', 'libmp3lame', '-b:a', String(req.bitRate), '-f', 'mp3'];
    case 'wav':
      return [...common, '-c:a', 'pcm_s16le', '-f', 'wav'];
    case 'raw': {
      const [codec, muxer] = {
        pcm_f32le: ['pcm_f32le', 'f32le'],
        pcm_s16le: ['pcm_s16le', 's16le'],
        pcm_mulaw: ['pcm_mulaw', 'mulaw'],
        pcm_alaw: ['pcm_alaw', 'alaw'],
      }[req.encoding];
      return [...common, '-c:a', codec!, '-f', muxer!];
    }
  }
}

/**
 * Speaks `req.text`: espeak-ng writes WAV (22,050 Hz) to ffmpeg, which encodes it; the audio comes out as it is
 * made. Stopping the iteration early (a caller gone) kills both processes.
 */
export async function* synthesise(espeak: string, ffmpeg: string, req: SpeechRequest, timeoutMs = 300_000): AsyncGenerator<Buffer> {
  // -b 1: the text is UTF-8. --stdin: read it from standard input (never an argument, so never an option).
  const speaker = spawn(espeak, ['-v', req.voice, '-b', '1', '--stdin', '--stdout'], { stdio: ['pipe', 'pipe', 'pipe'] });
  const encoder = spawn(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-f', 'wav', '-i', 'pipe:0', ...outputArgs(req), 'pipe:1'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let failure: Error | undefined;
  const fail = (e: Error) => {
    failure ??= e;
    speaker.kill('SIGKILL');
    encoder.kill('SIGKILL');
  };
  let speakerErr = '';
  let encoderErr = '';
  speaker.stderr.on('data', (c) => (speakerErr = (speakerErr + c).slice(-1000)));
  encoder.stderr.on('data', (c) => (encoderErr = (encoderErr + c).slice(-1000)));
  speaker.once('error', (e) => fail(new SpeechEngineFailed(`espeak-ng could not start: ${e.message}`)));
  encoder.once('error', (e) => fail(new SpeechEngineFailed(`ffmpeg could not start: ${e.message}`)));
  // Both exits are awaited: ffmpeg may end well on the part of the audio a failing espeak-ng wrote.
  const spoke = new Promise<void>((resolve) =>
    speaker.once('close', (code) => {
      if (code !== 0 && code !== null) fail(new SpeechEngineFailed(`espeak-ng exited with ${code}: ${speakerErr.trim() || 'no message'}`));
      resolve();
    }),
  );
  // A closed pipe on either side is reported by the process's exit, not here.
  speaker.stdin.on('error', () => {});
  encoder.stdin.on('error', () => {});
  speaker.stdout.pipe(encoder.stdin);
  speaker.stdin.end(req.text);
  const exited = new Promise<number | null>((resolve) => encoder.once('close', (code) => resolve(code)));
  const timer = setTimeout(() => fail(new SpeechEngineFailed(`speaking took over ${timeoutMs / 1000} s`)), timeoutMs);
  try {
    for await (const chunk of encoder.stdout) yield chunk as Buffer;
    const [code] = await Promise.all([exited, spoke]);
    if (failure) throw failure;
    if (code !== 0) throw new SpeechEngineFailed(`ffmpeg exited with ${code}: ${encoderErr.trim() || 'no message'}`);
  } finally {
    clearTimeout(timer);
    if (speaker.exitCode === null) speaker.kill('SIGKILL');
    if (encoder.exitCode === null) encoder.kill('SIGKILL');
  }
}

/** The whole audio of a request; a WAV file's header gets its real sizes (ffmpeg writing to a pipe cannot go back). */
export async function speak(espeak: string, ffmpeg: string, req: SpeechRequest): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of synthesise(espeak, ffmpeg, req)) parts.push(chunk);
  const audio = Buffer.concat(parts);
  if (req.format === 'wav') fixWavSizes(audio);
  return audio;
}

/** Writes the RIFF and `data` chunk sizes of a WAV file held whole. */
export function fixWavSizes(wav: Buffer): void {
  if (wav.length < 12 || wav.toString('ascii', 0, 4) !== 'RIFF') return;
  wav.writeUInt32LE(wav.length - 8, 4);
  for (let at = 12; at + 8 <= wav.length; ) {
    const id = wav.toString('ascii', at, at + 4);
    if (id === 'data') return void wav.writeUInt32LE(wav.length - at - 8, at + 4);
    at += 8 + wav.readUInt32LE(at + 4);
  }
}

/** The seconds of audio in `bytes` of raw samples. */
export const rawSeconds = (bytes: number, req: Pick<SpeechRequest, 'encoding' | 'sampleRate'>) => bytes / BYTES_PER_SAMPLE[req.encoding] / req.sampleRate;
