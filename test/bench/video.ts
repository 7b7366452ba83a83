// Video render time per second of output, for the local engine (server/engines/video.ts) as the runner calls it,
// against a baseline measured in the same run: the same ffmpeg picture pipeline written to the null muxer (no
// encoding, no file), so the figure separates the encoder's cost from the picture's. Median of BENCH_ROUNDS.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffmpegPath, runFfmpeg } from '../../server/engines/ffmpeg.ts';
import { localVideoEngine, renderArgs, type VideoSpec } from '../../server/engines/video.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = 4;
const base: VideoSpec = {
  prompt: 'a lighthouse at dusk, waves rolling in',
  width: 1280,
  height: 720,
  seconds: SECONDS,
  fps: 24,
  steps: 20,
  seed: 42,
  guidanceScale: 8,
  outputFormat: 'MP4',
  quality: 20,
  audio: false,
};
const cases: [string, VideoSpec][] = [
  ['MP4 720p 24 fps, 20 steps', base],
  ['MP4 720p 24 fps, 50 steps, audio', { ...base, steps: 50, audio: true }],
  ['WEBM 720p 24 fps, 20 steps', { ...base, outputFormat: 'WEBM' }],
  ['MP4 1080p 24 fps, 20 steps', { ...base, width: 1920, height: 1080 }],
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const timed = async (f: () => Promise<unknown>) => {
  const t = performance.now();
  await f();
  return (performance.now() - t) / 1000;
};

export async function benchVideo(): Promise<void> {
  const ffmpeg = ffmpegPath(process.env.FFMPEG_PATH);
  const engine = localVideoEngine(ffmpeg);
  const dir = mkdtempSync(join(tmpdir(), 'platform-bench-video-'));
  try {
    for (const [name, spec] of cases) {
      const renders: number[] = [];
      const pictures: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        renders.push(await timed(() => engine.render(spec, join(dir, `out-${round}`))));
        // The same arguments up to the encoder, then the null muxer.
        const args = renderArgs(spec, 'unused');
        const upToCodec = args.slice(0, args.indexOf('-c:v'));
        pictures.push(await timed(() => runFfmpeg(ffmpeg, [...upToCodec, '-f', 'null', '-'])));
      }
      const render = median(renders) / SECONDS;
      const picture = median(pictures) / SECONDS;
      console.log(
        `RESULT video ${name}: ${render.toFixed(3)} s of render per second of output (picture alone ${picture.toFixed(3)} s; encoding ×${(render / picture).toFixed(1)})`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
