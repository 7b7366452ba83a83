// Module `rollouts`: what the auth matrix needs (tests only): an owner's endpoint with two deployments (the target
// marked READY directly, as provisioning would leave it, since the matrix has no clock to advance) and a rollout.
import type { FixtureKit, Fixtures } from '../types.ts';

let n = 0;
const CONFIG = 'cr_llama_3_1_8b_h100';
const MODEL = 'meta-llama/Meta-Llama-3.1-8B-Instruct';

async function pair(kit: FixtureKit) {
  const projectId = kit.owner.projectId;
  const { data: e } = await kit.owner.api.POST('/v2/projects/{projectId}/endpoints', {
    params: { path: { projectId } },
    body: { name: `rollout-fixture-${++n}` },
  });
  const endpointId = e!.id;
  const deploy = async (name: string) => {
    const { data } = await kit.owner.api.POST('/v2/projects/{projectId}/endpoints/{endpointId}/deployments', {
      params: { path: { projectId, endpointId } },
      body: { name, model: MODEL, config: CONFIG, autoscaling: { minReplicas: 1, maxReplicas: 1 } },
    });
    return data!.id;
  };
  const source = await deploy('blue');
  const target = await deploy('green');
  await kit.services.db.write((tx) => tx.deployment.update({ where: { id: target }, data: { state: 'DEPLOYMENT_STATE_READY', readyReplicas: 1 } }));
  return { params: { projectId, endpointId }, body: { sourceDeploymentId: source, targetDeploymentId: target, canary: { steps: [{ traffic: 50 }] } } };
}

async function rollout(kit: FixtureKit, started = false) {
  const { params, body } = await pair(kit);
  const { data } = await kit.owner.api.POST('/v2/projects/{projectId}/endpoints/{endpointId}/rollouts', { params: { path: params }, body });
  const path = { ...params, id: data!.id };
  if (started) await kit.owner.api.POST('/v2/projects/{projectId}/endpoints/{endpointId}/rollouts/{id}/start', { params: { path } });
  return path;
}

export const fixtures: Fixtures<'rollouts'> = {
  crossProject: {
    listRollouts: async (kit) => ({ params: (await pair(kit)).params }),
    createRollout: async (kit) => pair(kit),
    previewRolloutDefaults: async (kit) => pair(kit),
    getRollout: async (kit) => ({ params: await rollout(kit) }),
    deleteRollout: async (kit) => ({ params: await rollout(kit) }),
    startRollout: async (kit) => ({ params: await rollout(kit) }),
    pauseRollout: async (kit) => ({ params: await rollout(kit, true), body: {} }),
    resumeRollout: async (kit) => {
      const params = await rollout(kit, true);
      await kit.owner.api.POST('/v2/projects/{projectId}/endpoints/{endpointId}/rollouts/{id}/pause', { params: { path: params }, body: {} });
      return { params, body: {} };
    },
    cancelRollout: async (kit) => ({ params: await rollout(kit, true), body: { reason: 'fixture' } }),
    promoteRollout: async (kit) => ({ params: await rollout(kit, true), body: {} }),
  },
};
