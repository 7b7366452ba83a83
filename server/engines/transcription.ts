// The transcription engine interface, and its local engine: the audio is decoded and measured (engines/audio.ts),
// and words come only from a real offline recogniser, CMU PocketSphinx with its US-English model, when one is
// installed. Without it the segments are the measured ones with empty text, and the result says why: no word is
// ever made up.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { type Decoded, detectSpeech, round, type Segment } from './audio.ts';
import { onPath } from './tools.ts';

export interface TranscriptWord {
  word: string;
  start: number;
  end: number;
}

export interface TranscriptSegment extends Segment {
  text: string;
}

export interface Transcript {
  language: string;
  duration: number;
  text: string;
  segments: TranscriptSegment[];
  words: TranscriptWord[];
  /** `local-pocketsphinx`, or `local` with the reason the text is empty; `upstream` for an upstream engine. */
  engine: string;
  /** Headers that say what answered instead of an engine (an answer interceptor's: engines/intercept.ts). */
  headers?: Record<string, string>;
}

export interface TranscriptionRequest {
  task: 'transcribe' | 'translate';
  language: string;
}

/** The configured recogniser: `POCKETSPHINX_PATH`, else `pocketsphinx_continuous` on the PATH; `off` disables it. */
export function findRecogniser(configured: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (configured === 'off') return undefined;
  if (configured) return configured;
  return onPath('pocketsphinx_continuous', env);
}

/** Runs the recogniser on the decoded PCM: its words, with their times in seconds. */
export function recognise(recogniser: string, pcmPath: string): Promise<TranscriptWord[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(recogniser, ['-infile', pcmPath, '-samprate', '16000', '-time', 'yes', '-logfn', '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err = (err + c).slice(-2000)));
    child.once('error', (e) => reject(new Error(`the recogniser could not start (${recogniser}): ${e.message}`)));
    // 'close', not 'exit': only then has all of stdout been read.
    child.once('close', (code) => {
      if (code !== 0) return reject(new Error(`the recogniser exited with ${code}: ${err.trim()}`));
      // Lines `word start end confidence`; fillers (<s>, </s>, <sil>, [NOISE]) are not words; `to(3)` is the
      // third pronunciation of `to`.
      const words: TranscriptWord[] = [];
      for (const line of out.split('\n')) {
        const m = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) [\d.]+$/.exec(line.trim());
        if (!m || /^[<[]/.test(m[1])) continue;
        words.push({ word: m[1].replace(/\(\d+\)$/, ''), start: Number(m[2]), end: Number(m[3]) });
      }
      resolve(words);
    });
  });
}

// The recogniser is deterministic and its run is most of a transcription's time (seconds for a sentence): the words
// of the last few audios it heard (by the decoded samples' hash) are kept, so the same audio asked again, in another
// response format or by URL, is answered at once with the same words.
const HEARD = 32;
const heard = new Map<string, TranscriptWord[]>();
async function recognised(recogniser: string, pcmPath: string): Promise<TranscriptWord[]> {
  const key = `${recogniser}\n${createHash('sha256')
    .update(await readFile(pcmPath))
    .digest('hex')}`;
  const known = heard.get(key);
  if (known) return known;
  const words = await recognise(recogniser, pcmPath);
  heard.set(key, words);
  if (heard.size > HEARD) heard.delete(heard.keys().next().value!);
  return words;
}

export async function transcribeLocally(recogniser: string | undefined, audio: Decoded, req: TranscriptionRequest): Promise<Transcript> {
  const measured = await detectSpeech(audio.pcmPath);
  const english = /^en\b/i.test(req.language);
  if (!recogniser || !english) {
    const why = !recogniser
      ? 'local; no speech recogniser is installed (install pocketsphinx and pocketsphinx-en-us, or set POCKETSPHINX_PATH): the text is empty, the segments are measured'
      : `local; the recogniser knows English only, not '${req.language}': the text is empty, the segments are measured`;
    return { language: req.language, duration: round(audio.duration), text: '', segments: measured.map((s) => ({ ...s, text: '' })), words: [], engine: why };
  }
  const words = await recognised(recogniser, audio.pcmPath);
  // Each word belongs to the measured segment its middle falls in (or the nearest one).
  const segments: TranscriptSegment[] = measured.map((s) => ({ ...s, text: '' }));
  const grouped = segments.map(() => [] as string[]);
  for (const w of words) {
    if (!segments.length) break;
    const mid = (w.start + w.end) / 2;
    let best = 0;
    let distance = Infinity;
    segments.forEach((s, i) => {
      const d = mid < s.start ? s.start - mid : mid > s.end ? mid - s.end : 0;
      if (d < distance) [best, distance] = [i, d];
    });
    grouped[best].push(w.word);
  }
  for (const [i, s] of segments.entries()) s.text = grouped[i].join(' ');
  return {
    language: 'en',
    duration: round(audio.duration),
    text: words.map((w) => w.word).join(' '),
    segments,
    words: words.map((w) => ({ word: w.word, start: round(w.start), end: round(w.end) })),
    engine: 'local-pocketsphinx',
  };
}
