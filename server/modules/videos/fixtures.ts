// Module `videos`: what the auth matrix needs (tests only).
import type { FixtureKit, Fixtures } from '../types.ts';

const ownersVideo = async ({ owner }: FixtureKit) => {
  const { data } = await owner.api.POST('/v2/videos', {
    body: { model: 'Wan-AI/Wan2.2-T2V-A14B', prompt: 'a fixture', width: 64, height: 64, seconds: '1', fps: 4 },
  });
  return data!.id;
};

/** A completed video: its content is there for the owner (a job in progress would answer the owner 409). */
const ownersRenderedVideo = async (kit: FixtureKit) => {
  const id = await ownersVideo(kit);
  await kit.services.runner.drain();
  return id;
};

export const fixtures: Fixtures<'videos'> = {
  crossProject: {
    retrieveVideo: async (kit) => ({ params: { id: await ownersVideo(kit) } }),
    retrieveVideoV1: async (kit) => ({ params: { id: await ownersVideo(kit) } }),
    getVideoContent: async (kit) => ({ params: { id: await ownersRenderedVideo(kit) } }),
    getVideoContentV1: async (kit) => ({ params: { id: await ownersRenderedVideo(kit) } }),
  },
};
