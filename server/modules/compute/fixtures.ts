// Module `compute`: what the auth matrix needs (tests only). Clusters come from the seed or the platform, not from
// an API call, so the owner's cluster is created as the seed creates them.
import type { FixtureKit, Fixtures } from '../types.ts';
import { createCluster } from './rows.ts';

/** A one-instance cluster in the owner's project. */
async function ownersInstance({ services, owner }: FixtureKit) {
  const { clusterId, instanceIds } = await services.db.write((tx) =>
    createCluster(tx, services.clock, owner.projectId, {
      name: 'fixture',
      region: 'us-central-8',
      cluster_type: 'KUBERNETES',
      gpu_type: 'H100_SXM',
      hosts: [{ name: 'h1', num_gpus: 8, vm_capacity: 2 }],
      instances: [{ name: 'n1', host: 'h1', num_gpus: 8 }],
    }),
  );
  return { cluster_id: clusterId, instance_id: instanceIds.n1 };
}

/** An alert (and the AUTOMATED remediation awaiting approval it raises) in the owner's project. */
async function ownersAlert(kit: FixtureKit) {
  const ids = await ownersInstance(kit);
  const { data } = await kit.owner.api.POST('/v1/compute/clusters/{cluster_id}/passive_health_check_alerts', {
    params: { path: { cluster_id: ids.cluster_id } },
    body: { instance_id: ids.instance_id, alert_name: 'DmesgXidError' },
  });
  return { ...ids, alert_id: data!.passive_health_check_alert_id, remediation_id: data!.node_remediation_intent_id! };
}

const remediation = async (kit: FixtureKit) => {
  const { cluster_id, instance_id, remediation_id } = await ownersAlert(kit);
  return { cluster_id, instance_id, remediation_id };
};

export const fixtures: Fixtures<'compute'> = {
  crossProject: {
    getCluster: async (kit) => ({ params: { cluster_id: (await ownersInstance(kit)).cluster_id } }),
    listClusterInstances: async (kit) => ({ params: { cluster_id: (await ownersInstance(kit)).cluster_id } }),
    injectPassiveHealthCheckAlert: async (kit) => {
      const { cluster_id, instance_id } = await ownersInstance(kit);
      return { params: { cluster_id }, body: { instance_id, alert_name: 'DmesgXidError' } };
    },
    resolvePassiveHealthCheckAlert: async (kit) => {
      const { cluster_id, alert_id } = await ownersAlert(kit);
      return { params: { cluster_id, alert_id } };
    },
    createRemediation: async (kit) => ({ params: await ownersInstance(kit), body: { mode: 'REMEDIATION_MODE_VM_ONLY' } }),
    listRemediations: async (kit) => ({ params: await ownersInstance(kit) }),
    getRemediation: async (kit) => ({ params: await remediation(kit) }),
    approveRemediation: async (kit) => ({ params: await remediation(kit), body: { comment: 'ok' } }),
    rejectRemediation: async (kit) => ({ params: await remediation(kit), body: { comment: 'no' } }),
    cancelRemediation: async (kit) => ({ params: await remediation(kit) }),
  },
};
