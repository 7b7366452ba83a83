// Module `containers` (spec/tags/containers.yaml): custom-container deployments (the official client's
// `beta.jig`): their requests' rules (rules.ts), their machine and the runner's steps (machine.ts), their logs
// (logs.ts), and reads of the project's storage by signed URL (storage.ts). No container runs here: the lifecycle,
// replicas, mounts, secret references and queue-fed autoscaling are this server's records, and say so.
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor } from '../types.ts';
import {
  createContainerDeployment,
  deleteContainerDeployment,
  getContainerDeployment,
  getContainerDeploymentLogs,
  listContainerDeployments,
  updateContainerDeployment,
} from './handlers.ts';
import { containerMachine, containerProgression } from './machine.ts';
import { getDeploymentStorageFile, getDeploymentStorageFileUrl, readDeploymentStorageFile, verifyStorageRead } from './storage.ts';

export const containers: ModuleDescriptor<'containers'> = {
  name: 'containers',
  handlers: {
    listContainerDeployments,
    createContainerDeployment,
    getContainerDeployment,
    updateContainerDeployment,
    deleteContainerDeployment,
    getContainerDeploymentLogs,
    getDeploymentStorageFile,
    getDeploymentStorageFileUrl,
    readDeploymentStorageFile,
  },
  machines: [containerMachine],
  work: (services) => ({ [containerMachine.kind]: progressionWork(containerProgression(services), services) }),
  // The storage URL's signature, not a key, authorises the read.
  signed: { readDeploymentStorageFile: verifyStorageRead },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
