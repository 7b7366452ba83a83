// Module `compute`: reading clusters and their instances (lifecycle.ts creates, updates and deletes them).
import type { Cluster, ComputeHost, ComputeVm } from '../../../../generated/prisma/sqlite/client/client.ts';
import { type Clock, instant } from '../../../core/clock.ts';
import type { Db, Tx } from '../../../db/index.ts';
import type { Context } from '../../types.ts';
import { clusterPhases } from '../phases.ts';
import { findCluster } from '../rows.ts';
import { clusterInstanceWire, clusterWire } from '../wire.ts';

export async function clusterView(db: Db | Tx, clock: Clock, cluster: Cluster) {
  const [hosts, instances, vms, volumes, addOns] = await Promise.all([
    db.computeHost.findMany({ where: { clusterId: cluster.id }, orderBy: { name: 'asc' } }),
    db.computeInstance.findMany({ where: { clusterId: cluster.id }, orderBy: { name: 'asc' } }),
    db.computeVm.findMany({ where: { clusterId: cluster.id }, orderBy: [{ createdAt: 'asc' }, { name: 'asc' }] }),
    db.clusterSharedVolume.findMany({ where: { clusterId: cluster.id }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] }),
    db.clusterAddOn.findMany({ where: { clusterId: cluster.id }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] }),
  ]);
  return clusterWire(cluster, { hosts, instances, vms, volumes, addOns }, clusterPhases(cluster, hosts), instant(clock));
}

export async function listClusters({ db, clock, identity, query }: Context<'listClusters'>) {
  // A key belongs to one project: `projectId` naming another one lists nothing (empty or absent: no filter).
  if (query.projectId && query.projectId !== identity.projectId) return { clusters: [] };
  const clusters = await db.prisma.cluster.findMany({
    where: { projectId: identity.projectId, state: { not: 'Deleted' } },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
  return { clusters: await Promise.all(clusters.map((c) => clusterView(db.prisma, clock, c))) };
}

export async function getCluster({ db, clock, identity, params }: Context<'getCluster'>) {
  return clusterView(db.prisma, clock, await findCluster(db.prisma, identity.projectId, params.cluster_id));
}

export async function listClusterInstances({ db, identity, params }: Context<'listClusterInstances'>) {
  const cluster = await findCluster(db.prisma, identity.projectId, params.cluster_id);
  const [instances, hosts, vms] = await Promise.all([
    db.prisma.computeInstance.findMany({ where: { clusterId: cluster.id, removedAt: null }, orderBy: { name: 'asc' } }),
    db.prisma.computeHost.findMany({ where: { clusterId: cluster.id } }),
    db.prisma.computeVm.findMany({ where: { clusterId: cluster.id, deletedAt: null } }),
  ]);
  const vmById = new Map<string, ComputeVm>(vms.map((v) => [v.id, v]));
  const hostById = new Map<string, ComputeHost>(hosts.map((h) => [h.id, h]));
  return {
    instances: instances.map((i) => {
      const vm = i.vmId ? vmById.get(i.vmId) : undefined;
      return clusterInstanceWire(i, vm, vm ? hostById.get(vm.hostId) : undefined);
    }),
  };
}
