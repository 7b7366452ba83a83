// Module `compute` (spec/tags/compute.yaml): a project's GPU clusters (rows.ts), provisioned, resized and torn down
// by the cluster machine (machine.ts), their shared volumes and add-ons, this server's region catalogue
// (catalogue.json), passive health-check alerts, and node remediations moved by one machine (machine.ts) whose modes
// the cluster engine applies (engine.ts).
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor, SeedContext } from '../types.ts';
import { createClusterAddOn, deleteClusterAddOn, getClusterAddOn, listClusterAddOns, updateClusterAddOn } from './handlers/addons.ts';
import { injectPassiveHealthCheckAlert, listPassiveHealthCheckAlerts, resolvePassiveHealthCheckAlert } from './handlers/alerts.ts';
import { listAvailabilityZones, listRegions } from './handlers/catalogue.ts';
import { getCluster, listClusterInstances, listClusters } from './handlers/clusters.ts';
import { createCluster, deleteCluster, updateCluster } from './handlers/lifecycle.ts';
import { approveRemediation, cancelRemediation, createRemediation, getRemediation, listRemediations, rejectRemediation } from './handlers/remediations.ts';
import { createSharedVolume, deleteSharedVolume, getSharedVolume, listSharedVolumes, updateSharedVolume } from './handlers/volumes.ts';
import { clusterMachine, remediationMachine, remediationProgression, volumeMachine } from './machine.ts';
import { clusterProgression, volumeProgression } from './provisioning.ts';
import { type ClusterSpec, createCluster as seedCluster } from './rows.ts';
import data from './seed.json' with { type: 'json' };

/** The default project's cluster (seed.json). */
async function seed({ tx, clock, projectId }: SeedContext): Promise<void> {
  for (const spec of data.clusters as ClusterSpec[]) await seedCluster(tx, clock, projectId, spec);
}

export const compute: ModuleDescriptor<'compute'> = {
  name: 'compute',
  handlers: {
    listClusters,
    createCluster,
    getCluster,
    updateCluster,
    deleteCluster,
    listClusterInstances,
    listRegions,
    listAvailabilityZones,
    listSharedVolumes,
    createSharedVolume,
    updateSharedVolume,
    getSharedVolume,
    deleteSharedVolume,
    listClusterAddOns,
    createClusterAddOn,
    getClusterAddOn,
    updateClusterAddOn,
    deleteClusterAddOn,
    listPassiveHealthCheckAlerts,
    injectPassiveHealthCheckAlert,
    resolvePassiveHealthCheckAlert,
    createRemediation,
    listRemediations,
    getRemediation,
    approveRemediation,
    rejectRemediation,
    cancelRemediation,
  },
  seed,
  machines: [remediationMachine, clusterMachine, volumeMachine],
  work: (services) => ({
    [remediationMachine.kind]: progressionWork(remediationProgression(services), services),
    [clusterMachine.kind]: progressionWork(clusterProgression(services), services),
    [volumeMachine.kind]: progressionWork(volumeProgression(services), services),
  }),
  steer: (services) => ({ remediation: { progression: remediationProgression(services), creates: [] } }),
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
