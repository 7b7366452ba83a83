// Audio decoding and measurement for the transcription engines: ffmpeg (engines/ffmpeg.ts) decodes any of the
// accepted formats to 16 kHz mono 16-bit PCM in a temporary file, and an energy detector finds the stretches of
// speech in it. Nothing here guesses: the duration is the decoded sample count, the segments are measured levels.
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';

export const SAMPLE_RATE = 16_000;

/** The demuxers ffmpeg names for the eight accepted formats (wav, mp3, m4a, webm, flac, ogg, opus, aac). */
const ACCEPTED = new Map<string, string>([
  ['wav', 'wav'],
  ['mp3', 'mp3'],
  ['mov,mp4,m4a,3gp,3g2,mj2', 'm4a'],
  ['matroska,webm', 'webm'],
  ['flac', 'flac'],
  ['ogg', 'ogg'],
  ['aac', 'aac'],
]);

export class UnsupportedAudio extends Error {}

export interface Decoded {
  /** Raw PCM, s16le, mono, SAMPLE_RATE. */
  pcmPath: string;
  /** The container recognised: wav, mp3, m4a, webm, flac, ogg (ogg and opus), aac. */
  format: string;
  /** Seconds of decoded audio. */
  duration: number;
}

/**
 * Decodes `input` to `pcmPath`. Rejects with UnsupportedAudio when ffmpeg does not recognise it as one of the
 * accepted containers, finds no audio stream, or cannot decode it; stops (and rejects) past `maxSeconds`.
 */
export function decodeAudio(ffmpeg: string, input: string, pcmPath: string, maxSeconds: number): Promise<Decoded> {
  return new Promise((resolve, reject) => {
    // `-t` bounds the work; a result longer than maxSeconds is refused below.
    const args = [
      '-hide_banner',
      '-nostdin',
      '-y',
      '-i',
      input,
      '-vn',
      '-map',
      '0:a:0',
      '-ac',
      '1',
      '-ar',
      String(SAMPLE_RATE),
      '-f',
      's16le',
      '-acodec',
      'pcm_s16le',
      '-t',
      String(maxSeconds + 1),
      pcmPath,
    ];
    const child = spawn(ffmpeg, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr = stderr.length < 20_000 ? stderr + c : stderr.slice(0, 10_000) + stderr.slice(-10_000) + c));
    child.once('error', (err) => reject(new Error(`ffmpeg could not start (${ffmpeg}): ${err.message}`)));
    // 'close', not 'exit': only then has all of stderr (which names the container) been read.
    child.once('close', async (code) => {
      const demuxer = /Input #0, ([^ ]+), from/.exec(stderr)?.[1]?.replace(/,$/, '');
      const format = demuxer && ACCEPTED.get(demuxer);
      if (!demuxer) return reject(new UnsupportedAudio(`it is not audio ffmpeg recognises (${lastLine(stderr)})`));
      if (!format) return reject(new UnsupportedAudio(`its format (${demuxer}) is not one of wav, mp3, m4a, webm, flac, ogg, opus, aac`));
      if (!/Stream #0:\d+[^:]*: Audio:/.test(stderr)) return reject(new UnsupportedAudio('it has no audio stream'));
      if (code !== 0) return reject(new UnsupportedAudio(`it does not decode (${lastLine(stderr)})`));
      try {
        const { size } = await import('node:fs/promises').then((fs) => fs.stat(pcmPath));
        resolve({ pcmPath, format: format === 'ogg' && /Audio: opus/.test(stderr) ? 'opus' : format, duration: size / 2 / SAMPLE_RATE });
      } catch (err) {
        reject(err);
      }
    });
  });
}

const lastLine = (s: string) => s.trim().split('\n').pop()?.slice(0, 200) ?? '';

export interface Segment {
  start: number;
  end: number;
}

/** The speech detector's parameters (the Audio tag of the spec states them). */
const FRAME_SECONDS = 0.02;
const ABOVE_FLOOR_DB = 12;
const MIN_SPEECH_DB = -50;
const MIN_PAUSE_SECONDS = 0.3;
const MIN_SEGMENT_SECONDS = 0.1;

/**
 * Stretches of speech in a PCM file: each 20 ms frame's RMS level in dBFS; a frame is speech when it is 12 dB over
 * the noise floor (the 10th percentile of the frame levels) and above -50 dBFS; speech frames closer than 0.3 s
 * join one segment, and segments shorter than 0.1 s are dropped. Read as a stream (hours of audio fit).
 */
export async function detectSpeech(pcmPath: string): Promise<Segment[]> {
  const frameSamples = Math.round(SAMPLE_RATE * FRAME_SECONDS);
  const levels: number[] = [];
  let sum = 0;
  let n = 0;
  let carry: Buffer | null = null;
  for await (const chunk of createReadStream(pcmPath, { highWaterMark: 1 << 16 }) as AsyncIterable<Buffer>) {
    let buf: Buffer = carry ? Buffer.concat([carry, chunk]) : chunk;
    const even = buf.length - (buf.length % 2);
    for (let i = 0; i < even; i += 2) {
      const v = buf.readInt16LE(i) / 32768;
      sum += v * v;
      if (++n === frameSamples) {
        levels.push(10 * Math.log10(sum / n + 1e-12));
        sum = 0;
        n = 0;
      }
    }
    carry = even < buf.length ? buf.subarray(even) : null;
    buf = Buffer.alloc(0);
  }
  if (n > frameSamples / 2) levels.push(10 * Math.log10(sum / n + 1e-12));
  if (!levels.length) return [];
  const sorted = [...levels].sort((a, b) => a - b);
  const floor = sorted[Math.floor(sorted.length * 0.1)];
  const threshold = Math.max(floor + ABOVE_FLOOR_DB, MIN_SPEECH_DB);
  const segments: Segment[] = [];
  let open: Segment | null = null;
  levels.forEach((level, i) => {
    if (level < threshold) return;
    const start = i * FRAME_SECONDS;
    const end = (i + 1) * FRAME_SECONDS;
    if (open && start - open.end < MIN_PAUSE_SECONDS) open.end = end;
    else {
      if (open) segments.push(open);
      open = { start, end };
    }
  });
  if (open) segments.push(open);
  const total = levels.length * FRAME_SECONDS;
  return segments.filter((s) => s.end - s.start >= MIN_SEGMENT_SECONDS).map((s) => ({ start: round(s.start), end: round(Math.min(s.end, total)) }));
}

export const round = (x: number) => Math.round(x * 1000) / 1000;
