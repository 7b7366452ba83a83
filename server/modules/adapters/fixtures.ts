// Module `adapters`: what the auth matrix needs (tests only).
import { ownersV1Endpoint } from '../endpoints/fixtures.ts';
import { createUploadedModel } from '../models/catalogue.ts';
import type { FixtureKit, Fixtures } from '../types.ts';

let n = 0;

/** The owner's running v1 endpoint and a ready adapter of its model, with the `model_id` that binds them. */
async function endpointAndAdapter(kit: FixtureKit) {
  const { services, owner } = kit;
  const e = await ownersV1Endpoint(kit);
  const adapter = await services.db.write((tx) =>
    createUploadedModel(tx, services.clock, owner.projectId, {
      name: `adapter-fixture-${++n}`,
      type: 'chat',
      modelType: 'adapter',
      architecture: 'llama-3.1-8b',
      baseModelId: e.modelId,
      minGpuMemory: null,
      source: 'acme/fine-tuned',
      sourceKind: 'huggingface',
      status: 'ready',
    }),
  );
  const slug = (await services.db.prisma.project.findUniqueOrThrow({ where: { id: owner.projectId } })).slug;
  return { e, modelId: `${slug}/${e.name}:${adapter.name}` };
}

export const fixtures: Fixtures<'adapters'> = {
  crossProject: {
    listAdapters: async (kit) => ({ params: { endpointId: (await endpointAndAdapter(kit)).e.id } }),
    addAdapter: async (kit) => {
      const { e, modelId } = await endpointAndAdapter(kit);
      return { params: { endpointId: e.id }, body: { model_id: modelId } };
    },
    removeAdapter: async (kit) => {
      const { e, modelId } = await endpointAndAdapter(kit);
      await kit.owner.api.POST('/v1/endpoints/{endpointId}/adapters', { params: { path: { endpointId: e.id } }, body: { model_id: modelId } });
      return { params: { endpointId: e.id }, body: { model_id: modelId } };
    },
  },
};
