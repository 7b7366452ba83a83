// Module `videos` (spec/tags/videos.yaml): video generation jobs: the request's rules (rules.ts), the job's machine
// and the runner's render step (machine.ts, through the video engine: server/engines/video.ts), and the file
// served from disk.
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import { videosSection } from './create.ts';
import { createVideo, createVideoV1, getVideoContent, getVideoContentV1, retrieveVideo, retrieveVideoV1 } from './handlers.ts';
import { videoMachine, videoProgression } from './machine.ts';

// What this module offers the others: a fixture's job (the Control tag's applyFixtures).

export const videos: ModuleDescriptor<'videos'> = {
  name: 'videos',
  handlers: { createVideo, createVideoV1, retrieveVideo, retrieveVideoV1, getVideoContent, getVideoContentV1 },
  machines: [videoMachine],
  work: (services) => ({ [videoMachine.kind]: progressionWork(videoProgression(services), services) }),
  steer: (services) => ({ video: { progression: videoProgression(services), creates: ['createVideo', 'createVideoV1'] } }),
  fixtureSections: { videos: videosSection },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
