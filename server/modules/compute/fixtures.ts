// Module `compute`: what the auth matrix needs (tests only). The owner's cluster is created as the seed creates them
// (Ready at once, with no wait on the runner); its volumes and add-ons through the API.
import { newId } from '../../core/ids.ts';
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

/** An available shared volume in the owner's project (made as if provisioned, with no wait on the runner). */
async function ownersVolume({ services, owner }: FixtureKit) {
  const now = BigInt(services.clock.now());
  const id = newId('vol', services.clock.now());
  await services.db.write((tx) =>
    tx.clusterSharedVolume.create({
      data: { id, projectId: owner.projectId, name: 'fixture', sizeTib: 1, region: 'us-central-8', status: 'available', createdAt: now, updatedAt: now },
    }),
  );
  return id;
}

/** An add-on of the owner's cluster. */
async function ownersAddOn(kit: FixtureKit) {
  const { cluster_id } = await ownersInstance(kit);
  await kit.owner.api.POST('/v1/compute/clusters/{cluster_id}/addons', { params: { path: { cluster_id } }, body: { name: 'dash', add_on_type: 'dashboard' } });
  return { cluster_id, addon_id: 'dash' };
}

const remediation = async (kit: FixtureKit) => {
  const { cluster_id, instance_id, remediation_id } = await ownersAlert(kit);
  return { cluster_id, instance_id, remediation_id };
};

export const fixtures: Fixtures<'compute'> = {
  crossProject: {
    getCluster: async (kit) => ({ params: { cluster_id: (await ownersInstance(kit)).cluster_id } }),
    updateCluster: async (kit) => ({ params: { cluster_id: (await ownersInstance(kit)).cluster_id }, body: { num_reserved_gpus: 0 } }),
    deleteCluster: async (kit) => ({ params: { cluster_id: (await ownersInstance(kit)).cluster_id } }),
    listClusterInstances: async (kit) => ({ params: { cluster_id: (await ownersInstance(kit)).cluster_id } }),
    getSharedVolume: async (kit) => ({ params: { volume_id: await ownersVolume(kit) } }),
    updateSharedVolume: async (kit) => ({ params: {}, body: { volume_id: await ownersVolume(kit), size_tib: 2 } }),
    deleteSharedVolume: async (kit) => ({ params: { volume_id: await ownersVolume(kit) } }),
    listClusterAddOns: async (kit) => ({ params: { cluster_id: (await ownersInstance(kit)).cluster_id } }),
    createClusterAddOn: async (kit) => ({ params: { cluster_id: (await ownersInstance(kit)).cluster_id }, body: { name: 'web', add_on_type: 'ingress' } }),
    getClusterAddOn: async (kit) => ({ params: await ownersAddOn(kit) }),
    updateClusterAddOn: async (kit) => ({ params: await ownersAddOn(kit), body: { config: { dashboard: { enabled: false } } } }),
    deleteClusterAddOn: async (kit) => ({ params: await ownersAddOn(kit) }),
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
