// The video job's state machine, and the runner's step that renders it. A job is accepted `in_progress`; the
// runner renders it outside any transaction (a long step: a worker that dies mid-render leaves the job to another,
// which renders the same file again) and completes it; a render that keeps failing is given up as `failed`.
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Video } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import type { Config } from '../../core/config.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Database } from '../../db/index.ts';
import { ffmpegPath } from '../../engines/ffmpeg.ts';
import { localVideoEngine, type VideoEngine, type VideoSpec } from '../../engines/video.ts';
import { type Progression, stored, type Timing, transition } from '../../runner/progress.ts';
import { costCents } from './rules.ts';

export const videoMachine = defineMachine({
  name: 'video',
  kind: 'video_render',
  states: ['in_progress', 'completed', 'failed'],
  events: ['render', 'fail'],
  terminal: ['completed', 'failed'],
  transitions: { in_progress: { render: 'completed', fail: 'failed' } },
  timed: { in_progress: { duration: 'video_queue', defaultMs: 0 } },
});

export type VideoEvent = (typeof videoMachine.events)[number];

/** Where a job's video is kept, relative to DATA_DIR. */
export const videoFile = (v: Pick<Video, 'projectId' | 'id'>, format: string) => join('videos', v.projectId, `${v.id}.${format === 'WEBM' ? 'webm' : 'mp4'}`);

export const videos = stored<Video>()({ machine: videoMachine, table: (c) => c.video, field: 'status' });

interface Rendered {
  file: string;
  bytes: number;
}

export function videoProgression(
  services: Timing & { db: Database; config: Pick<Config, 'dataDir' | 'ffmpegPath'> },
  engine?: VideoEngine,
): Progression<(typeof videoMachine.states)[number]> {
  const render = engine ?? localVideoEngine(ffmpegPath(services.config.ffmpegPath));
  return {
    stored: videos,
    steps: {
      in_progress: {
        async work(id): Promise<Rendered> {
          const v = await services.db.prisma.video.findUniqueOrThrow({ where: { id } });
          const spec = JSON.parse(v.params).spec as VideoSpec;
          const file = videoFile(v, spec.outputFormat);
          const path = join(services.config.dataDir, file);
          await mkdir(dirname(path), { recursive: true });
          return { file, bytes: await render.render(spec, path) };
        },
        async apply(tx, id, rendered: Rendered) {
          const v = await tx.video.findUniqueOrThrow({ where: { id } });
          const { spec, pricePerSecond } = JSON.parse(v.params) as { spec: VideoSpec; pricePerSecond: number };
          await transition(tx, services, videos, v, 'render', {
            data: { file: rendered.file, bytes: rendered.bytes, costCents: costCents(pricePerSecond, spec), completedAt: instant(services.clock) },
          });
        },
      },
    },
    failure: {
      events: ['fail'],
      fail: (tx, v, event, error) =>
        transition(tx, services, videos, v, event as VideoEvent, {
          data: { errorCode: error.code, errorMessage: error.message, completedAt: instant(services.clock) },
        }),
    },
    giveUp: async (tx, id, error) => {
      const v = await tx.video.findUniqueOrThrow({ where: { id } });
      await transition(tx, services, videos, v, 'fail', {
        data: { errorCode: 'render_failed', errorMessage: `The video could not be rendered: ${error.slice(0, 500)}`, completedAt: instant(services.clock) },
      });
    },
  };
}
