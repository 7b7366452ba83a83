// Module `experiments`: what the auth matrix needs (tests only).
import type { FixtureKit, Fixtures } from '../types.ts';

let n = 0;
const CONFIG = 'cr_llama_3_1_8b_h100';
const MODEL = 'meta-llama/Meta-Llama-3.1-8B-Instruct';

/** The owner's endpoint with two deployments. */
async function endpoint({ owner }: FixtureKit) {
  const projectId = owner.projectId;
  const { data: e } = await owner.api.POST('/v2/projects/{projectId}/endpoints', { params: { path: { projectId } }, body: { name: `experiments-${++n}` } });
  const deploy = async (name: string) =>
    (
      await owner.api.POST('/v2/projects/{projectId}/endpoints/{endpointId}/deployments', {
        params: { path: { projectId, endpointId: e!.id } },
        body: { name, model: MODEL, config: CONFIG, autoscaling: { minReplicas: 1, maxReplicas: 1 } },
      })
    ).data!.id;
  return { params: { projectId, endpointId: e!.id }, deployments: [await deploy('control'), await deploy('variant')] as const };
}

const members = (deployments: readonly string[], control = 50) => [
  { deploymentId: deployments[0]!, role: 'AB_EXPERIMENT_MEMBER_ROLE_CONTROL' as const, percent: control },
  { deploymentId: deployments[1]!, role: 'AB_EXPERIMENT_MEMBER_ROLE_VARIANT' as const, percent: 100 - control },
];

async function abExperiment(kit: FixtureKit) {
  const { params, deployments } = await endpoint(kit);
  const { data } = await kit.owner.api.POST('/v2/projects/{projectId}/endpoints/{endpointId}/abExperiments', {
    params: { path: params },
    body: { name: 'ab', members: members(deployments) },
  });
  return { params: { ...params, id: data!.id }, deployments };
}

const SAMPLING = { uniform: { rate: 1 } };

async function shadowExperiment(kit: FixtureKit) {
  const { params, deployments } = await endpoint(kit);
  const { data } = await kit.owner.api.POST('/v2/projects/{projectId}/endpoints/{endpointId}/shadowExperiments', {
    params: { path: params },
    body: { name: 'shadow', source: { endpoint: { sampling: SAMPLING } }, targets: [{ name: 'candidate', targetDeploymentId: deployments[1] }] },
  });
  return { params, id: data!.id, targetId: data!.targets[0]!.id, deployments };
}

export const fixtures: Fixtures<'experiments'> = {
  crossProject: {
    listABExperiments: async (kit) => ({ params: (await endpoint(kit)).params }),
    createABExperiment: async (kit) => {
      const { params, deployments } = await endpoint(kit);
      return { params, body: { name: 'ab', members: members(deployments) } };
    },
    getABExperiment: async (kit) => ({ params: (await abExperiment(kit)).params }),
    updateABExperiment: async (kit) => {
      const { params, deployments } = await abExperiment(kit);
      return { params, body: { members: members(deployments, 80) } };
    },
    deleteABExperiment: async (kit) => ({ params: (await abExperiment(kit)).params }),
    listShadowExperiments: async (kit) => ({ params: (await endpoint(kit)).params }),
    createShadowExperiment: async (kit) => ({ params: (await endpoint(kit)).params, body: { name: 'shadow', source: { endpoint: { sampling: SAMPLING } } } }),
    getShadowExperiment: async (kit) => {
      const s = await shadowExperiment(kit);
      return { params: { ...s.params, id: s.id } };
    },
    updateShadowExperiment: async (kit) => {
      const s = await shadowExperiment(kit);
      return { params: { ...s.params, id: s.id }, query: { updateMask: 'description' }, body: { description: 'changed' } };
    },
    deleteShadowExperiment: async (kit) => {
      const s = await shadowExperiment(kit);
      return { params: { ...s.params, id: s.id } };
    },
    getShadowExperimentResults: async (kit) => {
      const s = await shadowExperiment(kit);
      return { params: { ...s.params, experimentId: s.id } };
    },
    listShadowTargets: async (kit) => {
      const s = await shadowExperiment(kit);
      return { params: { ...s.params, experimentId: s.id } };
    },
    createShadowTarget: async (kit) => {
      const s = await shadowExperiment(kit);
      return { params: { ...s.params, experimentId: s.id }, body: { name: 'second', targetDeploymentId: s.deployments[0] } };
    },
    getShadowTarget: async (kit) => {
      const s = await shadowExperiment(kit);
      return { params: { ...s.params, experimentId: s.id, id: s.targetId } };
    },
    updateShadowTarget: async (kit) => {
      const s = await shadowExperiment(kit);
      return { params: { ...s.params, experimentId: s.id, id: s.targetId }, body: { name: 'renamed' } };
    },
    deleteShadowTarget: async (kit) => {
      const s = await shadowExperiment(kit);
      return { params: { ...s.params, experimentId: s.id, id: s.targetId } };
    },
  },
};
