// Module `fine-tuning`: what the auth matrix needs (tests only).
import { storeFile } from '../files/index.ts';
import type { FixtureKit, Fixtures } from '../types.ts';

const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';

/** A job of the owner's, on a small dataset; `run` lets the runner take it as far as it goes. */
async function ownersJob({ owner, services }: FixtureKit, run = false) {
  const dataset = Array.from({ length: 4 }, (_, i) => JSON.stringify({ text: `sample ${i}` })).join('\n');
  const file = await storeFile(services, { projectId: owner.projectId, filename: 'fixture.jsonl', purpose: 'fine-tune', fileType: 'jsonl' }, dataset);
  const { data, error } = await owner.api.POST('/v1/fine-tunes', { body: { model: BASE, training_file: file.id } as never });
  if (!data) throw new Error(JSON.stringify(error));
  if (run) await services.runner.drain();
  return data.id;
}

/** A completed job of the owner's: the platform's clock is moved past training (the runner's timed steps). */
async function ownersCompletedJob(kit: FixtureKit) {
  const id = await ownersJob(kit, true);
  const { db } = kit.services;
  for (let i = 0; i < 5 && (await db.prisma.fineTune.findUniqueOrThrow({ where: { id } })).status !== 'completed'; i++) await kit.advance(1000);
  return id;
}

export const fixtures: Fixtures<'fine-tuning'> = {
  crossProject: {
    retrieveFineTune: async (kit) => ({ params: { id: await ownersJob(kit) } }),
    deleteFineTune: async (kit) => ({ params: { id: await ownersJob(kit) } }),
    cancelFineTune: async (kit) => ({ params: { id: await ownersJob(kit) } }),
    cancelFineTuneUnprefixed: async (kit) => ({ params: { id: await ownersJob(kit) } }),
    getFineTuneMetricsUnprefixed: async (kit) => ({ params: { id: await ownersJob(kit, true) } }),
    listFineTuneEvents: async (kit) => ({ params: { id: await ownersJob(kit) } }),
    listFineTuneCheckpoints: async (kit) => ({ params: { id: await ownersJob(kit) } }),
    getFineTuneMetrics: async (kit) => ({ params: { id: await ownersJob(kit, true) } }),
    downloadFineTune: async (kit) => ({ params: {}, query: { ft_id: await ownersCompletedJob(kit) } }),
    retrieveFineTuneTokenizedDataset: async (kit) => ({ params: { id: await ownersJob(kit, true) } }),
  },
};
