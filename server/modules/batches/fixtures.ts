// Module `batches`: what the auth matrix needs (tests only).
import { storeFile } from '../files/index.ts';
import type { FixtureKit, Fixtures } from '../types.ts';

/** The owner's batch over a one-line input file, still VALIDATING (the auth matrix drains no runner). */
const ownersInput = async ({ owner, services }: FixtureKit) => {
  const line = JSON.stringify({ custom_id: 'a', body: { model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', messages: [{ role: 'user', content: 'hi' }] } });
  return (await storeFile(services, { projectId: owner.projectId, filename: 'batch.jsonl', purpose: 'batch-api', fileType: 'jsonl' }, `${line}\n`)).id;
};

const ownersBatch = async (kit: FixtureKit) => {
  const { data } = await kit.owner.api.POST('/v1/batches', { body: { endpoint: '/v1/chat/completions', input_file_id: await ownersInput(kit) } });
  return data!.job.id;
};

export const fixtures: Fixtures<'batches'> = {
  crossProject: {
    // Another project's input file is absent for the caller.
    createBatch: async (kit) => ({ params: {}, body: { endpoint: '/v1/chat/completions', input_file_id: await ownersInput(kit) } }),
    getBatch: async (kit) => ({ params: { id: await ownersBatch(kit) } }),
    cancelBatch: async (kit) => ({ params: { id: await ownersBatch(kit) } }),
  },
};
