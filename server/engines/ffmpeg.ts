// ffmpeg, for the engines that produce or decode media. The binary comes with the server (npm
// @ffmpeg-installer/ffmpeg, a static build) unless FFMPEG_PATH names another.
import { spawn } from 'node:child_process';
import { onFirstUse } from '../core/packages.ts';

// The packaged binary's path (its package loaded only when no FFMPEG_PATH is given).
const installed = onFirstUse<{ path: string }>('@ffmpeg-installer/ffmpeg');

export function ffmpegPath(configured?: string): string {
  return configured || installed().path;
}

export class FfmpegFailed extends Error {}

/** Runs ffmpeg with `args`; resolves when it exits 0, rejects with the end of its stderr otherwise. */
export function runFfmpeg(path: string, args: string[], timeoutMs = 600_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(path, ['-hide_banner', '-nostdin', '-loglevel', 'error', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-2000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new FfmpegFailed(`ffmpeg could not start (${path}): ${err.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new FfmpegFailed(`ffmpeg exited with ${code ?? signal}: ${stderr.trim() || 'no message'}`));
    });
  });
}
