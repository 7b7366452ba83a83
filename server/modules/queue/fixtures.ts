// Module `queue`: what the auth matrix needs (tests only). A job of a queue without a built-in worker, so it stays
// `pending` (cancel) or is claimed by the owner (heartbeat, complete, fail).
import type { FixtureKit, Fixtures } from '../types.ts';

const MODEL = 'acme/fixture-queue';

const ownersJob = async ({ owner }: FixtureKit) => {
  const { data } = await owner.api.POST('/v1/queue/submit', { body: { model: MODEL, payload: { x: 1 }, priority: 0 } });
  return data!.requestId;
};

const ownersClaim = async (kit: FixtureKit) => {
  const request_id = await ownersJob(kit);
  const { data } = await kit.owner.api.POST('/v1/queue/claim', { body: { model: MODEL, max_jobs: 100 } });
  const job = data!.data.find((j) => j.request_id === request_id)!;
  return { model: MODEL, request_id, claim_token: job.claim_token };
};

export const fixtures: Fixtures<'queue'> = {
  crossProject: {
    getQueueJobStatus: async (kit) => ({ params: {}, query: { model: MODEL, request_id: await ownersJob(kit) } }),
    cancelQueueJob: async (kit) => ({ params: {}, body: { model: MODEL, request_id: await ownersJob(kit) } }),
    heartbeatQueueJob: async (kit) => ({ params: {}, body: await ownersClaim(kit) }),
    completeQueueJob: async (kit) => ({ params: {}, body: { ...(await ownersClaim(kit)), outputs: { y: 2 } } }),
    failQueueJob: async (kit) => ({ params: {}, body: await ownersClaim(kit) }),
  },
};
