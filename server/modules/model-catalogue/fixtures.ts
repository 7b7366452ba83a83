// Module `model-catalogue`: what the auth matrix needs (tests only).
import { newId } from '../../core/ids.ts';
import type { FixtureKit, Fixtures } from '../types.ts';

let n = 0;
const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct';

async function model({ owner }: FixtureKit) {
  const projectId = owner.projectId;
  const { data } = await owner.api.POST('/v2/projects/{projectId}/models', {
    params: { path: { projectId } },
    body: { name: `fixture-v2-${++n}`, type: 'model', baseModelId: BASE },
  });
  return { projectId, modelId: data!.id };
}

async function upload(kit: FixtureKit) {
  const { projectId, modelId } = await model(kit);
  const { data } = await kit.owner.api.POST('/v2/projects/{projectId}/models/uploads', {
    params: { path: { projectId } },
    body: { modelId, remoteUrl: 'acme/Meta-Llama-3.1-8B-fixture' },
  });
  return { projectId, uploadId: data!.id };
}

/** A model with one revision, as a succeeded upload leaves it (written directly: the runner does not run here). */
async function revision(kit: FixtureKit) {
  const { projectId, modelId } = await model(kit);
  const revisionId = newId('rev');
  await kit.services.db.write((tx) =>
    tx.modelRevision.create({ data: { id: revisionId, projectId, modelId, uploadId: 'mu_fixture', files: '[]', totalSizeBytes: 0n, createdAt: 0n } }),
  );
  return { projectId, modelId, revisionId };
}

export const fixtures: Fixtures<'model-catalogue'> = {
  crossProject: {
    listCatalogueModels: async ({ owner }) => ({ params: { projectId: owner.projectId } }),
    createCatalogueModel: async ({ owner }) => ({
      params: { projectId: owner.projectId },
      body: { name: `fixture-new-${++n}`, type: 'model', baseModelId: BASE },
    }),
    getCatalogueModel: async (kit) => ({ params: await model(kit) }),
    updateCatalogueModel: async (kit) => ({ params: await model(kit), body: { description: 'changed' } }),
    deleteCatalogueModel: async (kit) => ({ params: await model(kit) }),
    listCatalogueModelFiles: async (kit) => ({ params: await model(kit) }),
    listCatalogueModelRevisions: async (kit) => ({ params: await model(kit) }),
    getCatalogueModelRevision: async (kit) => ({ params: await revision(kit) }),
    listOrganizationModels: async ({ services, owner }) => {
      const project = await services.db.prisma.project.findUniqueOrThrow({ where: { id: owner.projectId } });
      return { params: { organizationId: project.organizationId } };
    },
    listRemoteModelUploads: async ({ owner }) => ({ params: { projectId: owner.projectId } }),
    createRemoteModelUpload: async (kit) => {
      const { projectId, modelId } = await model(kit);
      return { params: { projectId }, body: { modelId, remoteUrl: 'acme/Meta-Llama-3.1-8B-fixture' } };
    },
    getRemoteModelUpload: async (kit) => ({ params: await upload(kit) }),
    listRemoteModelUploadEvents: async (kit) => ({ params: await upload(kit) }),
  },
};
