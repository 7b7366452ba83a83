// Module `dedicated`: what the auth matrix needs (tests only).
import { createUploadedModel } from '../models/index.ts';
import type { FixtureKit, Fixtures } from '../types.ts';
import { revisionOf } from './refs.ts';

let n = 0;
const CONFIG = 'cr_llama_3_1_8b_h100';
const MODEL = 'meta-llama/Meta-Llama-3.1-8B-Instruct';

async function endpoint({ owner }: FixtureKit) {
  const projectId = owner.projectId;
  const { data } = await owner.api.POST('/v2/projects/{projectId}/endpoints', { params: { path: { projectId } }, body: { name: `fixture-${++n}` } });
  return { projectId, endpointId: data!.id };
}

async function deployment(kit: FixtureKit) {
  const { projectId, endpointId } = await endpoint(kit);
  const { data } = await kit.owner.api.POST('/v2/projects/{projectId}/endpoints/{endpointId}/deployments', {
    params: { path: { projectId, endpointId } },
    body: { name: 'primary', model: MODEL, config: CONFIG, autoscaling: { minReplicas: 1, maxReplicas: 1 } },
  });
  return { projectId, endpointId, deploymentId: data!.id };
}

/** The owner's deployment and a ready adapter of its model (`bound`: bound to it), with the binding's etag. */
async function deploymentAndAdapter(kit: FixtureKit, bound: boolean) {
  const params = await deployment(kit);
  const adapter = await kit.services.db.write((tx) =>
    createUploadedModel(tx, kit.services.clock, kit.owner.projectId, {
      name: `deployment-adapter-fixture-${++n}`,
      type: 'chat',
      modelType: 'adapter',
      architecture: 'llama-3.1-8b',
      baseModelId: MODEL,
      minGpuMemory: null,
      source: 'acme/fine-tuned',
      sourceKind: 'huggingface',
      status: 'ready',
    }),
  );
  if (!bound) return { params, adapterId: adapter.id, etag: '' };
  const { data } = await kit.owner.api.POST('/v2/projects/{projectId}/endpoints/{endpointId}/deployments/{deploymentId}/adapters', {
    params: { path: params },
    body: { adapterModelId: adapter.id },
  });
  return { params, adapterId: adapter.id, etag: data!.etag };
}

export const fixtures: Fixtures<'dedicated'> = {
  crossProject: {
    listConfigs: async ({ owner }) => ({ params: { projectId: owner.projectId } }),
    getConfig: async ({ owner }) => ({ params: { projectId: owner.projectId, configId: CONFIG } }),
    deployModel: async ({ owner }) => ({
      params: { projectId: owner.projectId },
      body: { endpointName: `fixture-deploy-${++n}`, model: MODEL, config: CONFIG, minReplicas: 1, maxReplicas: 1 },
    }),
    listV2Endpoints: async ({ owner }) => ({ params: { projectId: owner.projectId } }),
    createV2Endpoint: async ({ owner }) => ({ params: { projectId: owner.projectId }, body: { name: `fixture-new-${++n}` } }),
    getV2Endpoint: async (kit) => ({ params: await endpoint(kit) }),
    updateV2Endpoint: async (kit) => ({ params: await endpoint(kit), body: { visibility: 'VISIBILITY_INTERNAL' } }),
    deleteV2Endpoint: async (kit) => ({ params: await endpoint(kit) }),
    getV2EndpointUsage: async (kit) => ({ params: await endpoint(kit) }),
    getV2EndpointAnalytics: async (kit) => ({ params: await endpoint(kit) }),
    listV2EndpointEvents: async (kit) => ({ params: await endpoint(kit) }),
    listDeployments: async (kit) => ({ params: await endpoint(kit) }),
    createDeployment: async (kit) => ({
      params: await endpoint(kit),
      body: { name: 'primary', model: MODEL, config: CONFIG, autoscaling: { minReplicas: 1, maxReplicas: 1 } },
    }),
    getDeployment: async (kit) => ({ params: await deployment(kit) }),
    updateDeployment: async (kit) => ({ params: await deployment(kit), body: { name: 'renamed' } }),
    deleteDeployment: async (kit) => ({ params: await deployment(kit) }),
    listDeploymentAdapters: async (kit) => ({ params: (await deploymentAndAdapter(kit, true)).params }),
    addDeploymentAdapter: async (kit) => {
      const { params, adapterId } = await deploymentAndAdapter(kit, false);
      return { params, body: { adapterModelId: adapterId } };
    },
    getDeploymentAdapter: async (kit) => {
      const { params, adapterId } = await deploymentAndAdapter(kit, true);
      return { params: { ...params, id: adapterId } };
    },
    updateDeploymentAdapter: async (kit) => {
      const { params, adapterId, etag } = await deploymentAndAdapter(kit, true);
      return { params: { ...params, id: adapterId }, body: { adapterRevisionId: revisionOf(adapterId), etag } };
    },
    removeDeploymentAdapter: async (kit) => {
      const { params, adapterId, etag } = await deploymentAndAdapter(kit, true);
      return { params: { ...params, id: adapterId }, query: { etag } };
    },
    listOrganizationEndpoints: async ({ owner, services }) => {
      const project = await services.db.prisma.project.findUniqueOrThrow({ where: { id: owner.projectId } });
      return { params: { organizationId: project.organizationId } };
    },
    listPlacementProfiles: async ({ owner }) => ({ params: { projectId: owner.projectId } }),
    getPlacementProfile: async ({ owner }) => ({ params: { projectId: owner.projectId, profileId: 'pp_local' } }),
    // A catalogue model, the same for every caller.
    getSupportedModel: async () => ({ params: { modelId: MODEL }, shared: true }),
  },
};
