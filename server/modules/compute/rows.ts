// Clusters, their hosts, instances and VMs: created by the seed (and by the tests' fixtures for other projects),
// and looked up only through the project-scoped path.
import { type Clock, instant } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { Db, Tx } from '../../db/index.ts';
import { owned } from '../../http/scope.ts';
import { afterBoot } from './phases.ts';

export interface ClusterSpec {
  name: string;
  region: string;
  cluster_type: string;
  gpu_type: string;
  /** The declared NVIDIA software; "" when not declared. */
  cuda_version?: string;
  nvidia_driver_version?: string;
  /** RESERVED (the default) | ON_DEMAND | SCHEDULED_CAPACITY. */
  billing_type?: string;
  hosts: { name: string; num_gpus: number; vm_capacity: number }[];
  /** `num_cpu_cores` and `memory_gib`: the shape of the instance's VMs, 0 when not declared. */
  instances: { name: string; host: string; num_gpus: number; num_cpu_cores?: number; memory_gib?: number; unrecoverable?: boolean }[];
}

/** A VM's id: unique within its cluster by name. */
export const vmKey = (clusterId: string, name: string) => `${clusterId}/${name}`;

export async function createCluster(
  tx: Tx,
  clock: Clock,
  projectId: string,
  spec: ClusterSpec,
): Promise<{ clusterId: string; instanceIds: Record<string, string> }> {
  const now = instant(clock);
  const clusterId = newId('cluster', clock.now());
  const billingType = spec.billing_type ?? 'RESERVED';
  await tx.cluster.create({
    data: {
      id: clusterId,
      projectId,
      name: spec.name,
      region: spec.region,
      clusterType: spec.cluster_type,
      gpuType: spec.gpu_type,
      cudaVersion: spec.cuda_version ?? '',
      nvidiaDriverVersion: spec.nvidia_driver_version ?? '',
      billingType,
      // A RESERVED cluster's prepaid GPUs are all of it, as the platform defaults them (its num_gpus at creation).
      numReservedGpus: billingType === 'RESERVED' ? spec.instances.reduce((n, i) => n + i.num_gpus, 0) : 0,
      desiredGpus: spec.instances.reduce((n, i) => n + i.num_gpus, 0),
      createdAt: now,
    },
  });
  const hostIds = new Map<string, string>();
  for (const h of spec.hosts) {
    const id = newId('host', clock.now());
    hostIds.set(h.name, id);
    await tx.computeHost.create({ data: { id, projectId, clusterId, name: h.name, numGpus: h.num_gpus, vmCapacity: h.vm_capacity } });
  }
  const instanceIds: Record<string, string> = {};
  for (const i of spec.instances) {
    const hostId = hostIds.get(i.host);
    if (!hostId) throw new Error(`cluster seed: instance ${i.name} names unknown host ${i.host}`);
    instanceIds[i.name] = await bootInstance(tx, clock, { id: clusterId, projectId }, hostId, {
      name: i.name,
      numGpus: i.num_gpus,
      numCpuCores: i.num_cpu_cores ?? 0,
      memoryGib: i.memory_gib ?? 0,
      unrecoverable: i.unrecoverable ?? false,
    });
  }
  return { clusterId, instanceIds };
}

/** An instance of the cluster with its one VM (`<name>-vm1`) on `hostId`, running and booted now; answers its id. */
async function bootInstance(
  tx: Tx,
  clock: Clock,
  cluster: { id: string; projectId: string },
  hostId: string,
  instance: { name: string; numGpus: number; numCpuCores?: number; memoryGib?: number; unrecoverable?: boolean },
): Promise<string> {
  const now = instant(clock);
  const id = newId('inst', clock.now());
  const vmId = vmKey(cluster.id, `${instance.name}-vm1`);
  const at = { projectId: cluster.projectId, clusterId: cluster.id };
  await tx.computeVm.create({
    data: { id: vmId, name: `${instance.name}-vm1`, ...at, instanceId: id, hostId, createdAt: now, lastBootAt: now, phaseTransitions: afterBoot('[]', now) },
  });
  await tx.computeInstance.create({ data: { id, ...at, ...instance, status: 'RUNNING', vmId, updatedAt: now } });
  return id;
}

/** The project's cluster; a torn-down one (`Deleted`) answers 404 like an absent one. */
export async function findCluster(db: Db | Tx, projectId: string, clusterId: string) {
  return owned(db.cluster, projectId, { id: clusterId, state: { not: 'Deleted' } }, { what: 'cluster', id: clusterId, param: 'cluster_id' });
}

/** An instance of the cluster; one a resize or teardown released answers 404. */
export async function findInstance(db: Db | Tx, projectId: string, clusterId: string, instanceId: string, param = 'instance_id') {
  await findCluster(db, projectId, clusterId);
  return owned(db.computeInstance, projectId, { id: instanceId, clusterId, removedAt: null }, { what: 'instance', id: instanceId, param });
}

/**
 * Adds `count` nodes to an API-made cluster: each an instance of GPUS_PER_NODE GPUs with one VM, booted now, on a
 * host of its own (`host-<n>`, one VM slot), named after the cluster's instance count so far.
 */
export async function addNodes(tx: Tx, clock: Clock, cluster: { id: string; projectId: string }, count: number, gpusPerNode: number): Promise<void> {
  let n = await tx.computeInstance.count({ where: { clusterId: cluster.id } });
  for (let k = 0; k < count; k++) {
    n += 1;
    const hostId = newId('host', clock.now());
    await tx.computeHost.create({
      data: { id: hostId, projectId: cluster.projectId, clusterId: cluster.id, name: `host-${n}`, numGpus: gpusPerNode, vmCapacity: 1 },
    });
    await bootInstance(tx, clock, cluster, hostId, { name: `gpu-node-${n}`, numGpus: gpusPerNode });
  }
}

/** The project's shared volume; a `deleted` one answers 404 like an absent one. */
export async function findVolume(db: Db | Tx, projectId: string, volumeId: string, param = 'volume_id') {
  return owned(db.clusterSharedVolume, projectId, { id: volumeId, status: { not: 'deleted' } }, { what: 'shared volume', id: volumeId, param });
}

/** A cluster's add-on, by its name (its `addon_id`). */
export async function findAddOn(db: Db | Tx, projectId: string, clusterId: string, name: string) {
  await findCluster(db, projectId, clusterId);
  return owned(db.clusterAddOn, projectId, { clusterId, name }, { what: 'add-on', id: name, param: 'addon_id' });
}

export async function findRemediation(db: Db | Tx, projectId: string, params: { cluster_id: string; instance_id: string; remediation_id: string }) {
  const instance = await findInstance(db, projectId, params.cluster_id, params.instance_id);
  const r = await owned(
    db.remediation,
    projectId,
    { id: params.remediation_id, instanceId: instance.id },
    {
      what: 'remediation',
      id: params.remediation_id,
      param: 'remediation_id',
    },
  );
  return { r, instance };
}
