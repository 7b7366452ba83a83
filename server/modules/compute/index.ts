// Module `compute` (spec/tags/compute.yaml): a project's compute clusters (rows.ts), passive health-check alerts,
// and node remediations moved by one machine (machine.ts) whose modes the cluster engine applies (engine.ts).
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor, SeedContext } from '../types.ts';
import { injectPassiveHealthCheckAlert, resolvePassiveHealthCheckAlert } from './handlers/alerts.ts';
import { getCluster, listClusterInstances, listClusters } from './handlers/clusters.ts';
import { approveRemediation, cancelRemediation, createRemediation, getRemediation, listRemediations, rejectRemediation } from './handlers/remediations.ts';
import { remediationMachine, remediationProgression } from './machine.ts';
import { type ClusterSpec, createCluster } from './rows.ts';
import data from './seed.json' with { type: 'json' };

/** The default project's cluster (seed.json). */
async function seed({ tx, clock, projectId }: SeedContext): Promise<void> {
  for (const spec of data.clusters as ClusterSpec[]) await createCluster(tx, clock, projectId, spec);
}

export const compute: ModuleDescriptor<'compute'> = {
  name: 'compute',
  handlers: {
    listClusters,
    getCluster,
    listClusterInstances,
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
  machines: [remediationMachine],
  work: (services) => ({ [remediationMachine.kind]: progressionWork(remediationProgression(services), services) }),
  steer: (services) => ({ remediation: { progression: remediationProgression(services), creates: [] } }),
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
