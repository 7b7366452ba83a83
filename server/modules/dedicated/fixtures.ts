// Module `dedicated`: what the auth matrix needs (tests only).
import type { FixtureKit, Fixtures } from '../types.ts';

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
    listV2EndpointEvents: async (kit) => ({ params: await endpoint(kit) }),
    listDeployments: async (kit) => ({ params: await endpoint(kit) }),
    createDeployment: async (kit) => ({
      params: await endpoint(kit),
      body: { name: 'primary', model: MODEL, config: CONFIG, autoscaling: { minReplicas: 1, maxReplicas: 1 } },
    }),
    getDeployment: async (kit) => ({ params: await deployment(kit) }),
    updateDeployment: async (kit) => ({ params: await deployment(kit), body: { name: 'renamed' } }),
    deleteDeployment: async (kit) => ({ params: await deployment(kit) }),
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
