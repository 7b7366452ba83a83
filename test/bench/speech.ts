// The local speech engine (server/engines/speech.ts: espeak-ng, then ffmpeg) on a 100-word text, as the handler calls
// it: milliseconds to the whole answer and the real-time factor (seconds of work per second of speech; below 1 is
// faster than real time), per output format. Median of BENCH_ROUNDS.
import { ffmpegPath } from '../../server/engines/ffmpeg.ts';
import { findSynthesiser, type SpeechRequest, speak } from '../../server/engines/speech.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
// 100 words of plain English prose.
const TEXT =
  'The old lighthouse stood at the edge of the cliff, and every evening the keeper climbed its narrow stairs to light ' +
  'the lamp. Ships far out at sea watched for the slow turn of its beam, and sailors knew that home was near. One ' +
  'winter the storms came early, and the keeper worked through the night to keep the glass clean and the flame ' +
  'bright. In the morning the harbour was calm again, the boats came in one by one, and the village gathered on the ' +
  'shore to thank him. He only smiled, climbed the stairs, and went to sleep.';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function benchSpeech(): Promise<void> {
  const espeak = findSynthesiser(process.env.ESPEAK_PATH);
  if (!espeak) return void console.log('RESULT speech: skipped, espeak-ng is not installed');
  const ffmpeg = ffmpegPath(process.env.FFMPEG_PATH);
  const base: SpeechRequest = { text: TEXT, voice: 'en-us+f2', format: 'raw', encoding: 'pcm_s16le', sampleRate: 24_000, bitRate: 128_000 };
  // Seconds of speech, from the raw samples.
  const spoken = (await speak(espeak, ffmpeg, base)).length / 2 / base.sampleRate;
  const cases: [string, SpeechRequest][] = [
    ['wav 24 kHz', { ...base, format: 'wav' }],
    ['mp3 44.1 kHz 128 kb/s', { ...base, format: 'mp3', sampleRate: 44_100 }],
    ['raw pcm_f32le 24 kHz', { ...base, encoding: 'pcm_f32le' }],
  ];
  for (const [name, req] of cases) {
    const times: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const started = performance.now();
      await speak(espeak, ffmpeg, req);
      times.push(performance.now() - started);
    }
    const ms = median(times);
    console.log(
      `RESULT speech ${name}, ${TEXT.split(/\s+/).length} words (${spoken.toFixed(1)} s of speech): ${ms.toFixed(0)} ms, real-time factor ${(ms / 1000 / spoken).toFixed(3)}`,
    );
  }
}
