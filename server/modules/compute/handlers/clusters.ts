// Module `compute`: clusters and their instances (read-only through the API; the seed creates them).
import type { Cluster, ComputeHost, ComputeVm } from '../../../../generated/prisma/sqlite/client/client.ts';
import type { Db, Tx } from '../../../db/index.ts';
import type { Context } from '../../types.ts';
import { clusterPhases } from '../phases.ts';
import { findCluster } from '../rows.ts';
import { clusterInstanceWire, clusterWire } from '../wire.ts';

async function clusterView(db: Db | Tx, cluster: Cluster) {
  const [hosts, instances, vms] = await Promise.all([
    db.computeHost.findMany({ where: { clusterId: cluster.id }, orderBy: { name: 'asc' } }),
    db.computeInstance.findMany({ where: { clusterId: cluster.id }, orderBy: { name: 'asc' } }),
    db.computeVm.findMany({ where: { clusterId: cluster.id }, orderBy: [{ createdAt: 'asc' }, { name: 'asc' }] }),
  ]);
  return clusterWire(cluster, hosts, instances, vms, clusterPhases(cluster, hosts));
}

export async function listClusters({ db, identity, query }: Context<'listClusters'>) {
  // A key belongs to one project: `projectId` naming another one lists nothing (empty or absent: no filter).
  if (query.projectId && query.projectId !== identity.projectId) return { clusters: [] };
  const clusters = await db.prisma.cluster.findMany({ where: { projectId: identity.projectId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  return { clusters: await Promise.all(clusters.map((c) => clusterView(db.prisma, c))) };
}

export async function getCluster({ db, identity, params }: Context<'getCluster'>) {
  return clusterView(db.prisma, await findCluster(db.prisma, identity.projectId, params.cluster_id));
}

export async function listClusterInstances({ db, identity, params }: Context<'listClusterInstances'>) {
  const cluster = await findCluster(db.prisma, identity.projectId, params.cluster_id);
  const [instances, hosts, vms] = await Promise.all([
    db.prisma.computeInstance.findMany({ where: { clusterId: cluster.id }, orderBy: { name: 'asc' } }),
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
