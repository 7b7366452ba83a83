// Video generation. The engine interface, and the local engine: a real, playable video rendered with ffmpeg in the
// asked container, codecs, size, frame rate and duration, deterministic for a given request and seed. It has no
// model weights, so it does not depict the prompt: its picture is a cellular automaton (Conway's life) seeded by the
// seed, coloured from a hash of the prompt, its initial density from the guidance scale; its audio track, when
// asked, a tone whose pitch comes from the prompt. The file's `comment` metadata says which engine made it.
import { createHash } from 'node:crypto';
import { rename, rm, stat } from 'node:fs/promises';
import { runFfmpeg } from './ffmpeg.ts';

export interface VideoSpec {
  prompt: string;
  width: number;
  height: number;
  seconds: number;
  fps: number;
  steps: number;
  seed: number;
  guidanceScale: number;
  outputFormat: 'MP4' | 'WEBM';
  /** Constant rate factor: lower is better. */
  quality: number;
  audio: boolean;
}

export interface VideoEngine {
  /** Renders `spec` into `file` (written whole or not at all); answers its size in bytes. */
  render(spec: VideoSpec, file: string): Promise<number>;
}

export const LOCAL_VIDEO_ENGINE = 'inference-platform local video engine (no model weights; picture from the prompt and the seed)';

const hex = (bytes: Buffer, from: number) => bytes.subarray(from, from + 3).toString('hex');

/** The ffmpeg arguments that render `spec` into `out`: everything derived from the spec, nothing from the clock. */
export function renderArgs(spec: VideoSpec, out: string): string[] {
  const h = createHash('sha256').update(spec.prompt).digest();
  const frames = Math.max(1, Math.round(spec.seconds * spec.fps));
  // The automaton runs on an eighth of the picture and is scaled up with hard edges: cheap, and clearly a pattern.
  const cells = `${Math.max(8, Math.ceil(spec.width / 8))}x${Math.max(8, Math.ceil(spec.height / 8))}`;
  const density = Math.min(0.9, Math.max(0.05, spec.guidanceScale / 20));
  const seed = spec.seed % 4294967296;
  const picture = `life=s=${cells}:rate=${spec.fps}:seed=${seed}:ratio=${density.toFixed(3)}:mold=10:life_color=#${hex(h, 0)}:death_color=#${hex(h, 3)}:mold_color=#${hex(h, 6)}`;
  const args = ['-y', '-f', 'lavfi', '-i', picture];
  if (spec.audio) args.push('-f', 'lavfi', '-i', `sine=frequency=${220 + (h[9]! % 64) * 10}:sample_rate=48000:duration=${spec.seconds}`);
  // The duration as a frame count (exact for any fps), and the same for every stream.
  args.push('-vf', `scale=${spec.width}:${spec.height}:flags=neighbor,format=yuv420p`, '-r', String(spec.fps), '-t', String(frames / spec.fps));
  // More steps: a slower, better encode, as more denoising steps take longer on the platform.
  if (spec.outputFormat === 'MP4') {
    const preset = spec.steps >= 35 ? 'medium' : spec.steps >= 20 ? 'faster' : 'veryfast';
    args.push('-c:v', 'libx264', '-preset', preset, '-crf', String(spec.quality), '-threads', '1', '-movflags', '+faststart');
    if (spec.audio) args.push('-c:a', 'aac', '-b:a', '128k');
  } else {
    const cpuUsed = spec.steps >= 35 ? 5 : spec.steps >= 20 ? 7 : 8;
    args.push(
      '-c:v',
      'libvpx-vp9',
      '-crf',
      String(spec.quality),
      '-b:v',
      '0',
      '-deadline',
      'realtime',
      '-cpu-used',
      String(cpuUsed),
      '-row-mt',
      '0',
      '-threads',
      '1',
    );
    if (spec.audio) args.push('-c:a', 'libopus', '-b:a', '96k');
  }
  // No timestamps or encoder versions in the file, so the same request gives the same bytes.
  args.push('-fflags', '+bitexact', '-flags:v', '+bitexact', '-flags:a', '+bitexact', '-map_metadata', '-1', '-metadata', `comment=${LOCAL_VIDEO_ENGINE}`);
  args.push('-f', spec.outputFormat === 'MP4' ? 'mp4' : 'webm', out);
  return args;
}

export function localVideoEngine(ffmpeg: string): VideoEngine {
  return {
    async render(spec, file) {
      const partial = `${file}.partial`;
      try {
        await runFfmpeg(ffmpeg, renderArgs(spec, partial));
        await rename(partial, file);
      } finally {
        await rm(partial, { force: true });
      }
      return (await stat(file)).size;
    },
  };
}
