// Module `containers`: what the auth matrix needs (tests only): another project's deployment, and a file of its storage.
import { storeFile } from '../files/index.ts';
import type { FixtureKit, Fixtures } from '../types.ts';

let n = 0;

async function ownersDeployment({ owner }: FixtureKit) {
  const { data } = await owner.api.POST('/v1/deployments', {
    body: { name: `fixture-deployment-${++n}`, image: 'registry.example/app:1', gpu_type: 'h100-80gb' },
  });
  return data!.id;
}

async function ownersFile({ owner, services }: FixtureKit) {
  const name = `fixture-storage-${++n}.jsonl`;
  await storeFile(services, { projectId: owner.projectId, filename: name, purpose: 'eval', fileType: 'jsonl' }, '{"text": "a fixture"}\n');
  return name;
}

export const fixtures: Fixtures<'containers'> = {
  crossProject: {
    getContainerDeployment: async (kit) => ({ params: { id: await ownersDeployment(kit) } }),
    updateContainerDeployment: async (kit) => ({ params: { id: await ownersDeployment(kit) }, body: { description: 'changed' } }),
    deleteContainerDeployment: async (kit) => ({ params: { id: await ownersDeployment(kit) } }),
    getContainerDeploymentLogs: async (kit) => ({ params: { id: await ownersDeployment(kit) } }),
    getDeploymentStorageFile: async (kit) => ({ params: { filename: await ownersFile(kit) } }),
    getDeploymentStorageFileUrl: async (kit) => ({ params: { filename: await ownersFile(kit) } }),
  },
};
