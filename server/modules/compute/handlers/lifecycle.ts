// Module `compute`: creating, resizing and deleting GPU clusters. Every check runs before any write, and the writes
// of one request are one transaction, so a refused request changes nothing; the runner then moves the cluster
// through the `cluster` machine (machine.ts).
import type { Cluster } from '../../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../../core/clock.ts';
import { badRequest, conflict, invalidTransition } from '../../../core/errors.ts';
import { newId } from '../../../core/ids.ts';
import { type Database, keyLock, type Tx } from '../../../db/index.ts';
import { transition } from '../../../runner/progress.ts';
import type { Context } from '../../types.ts';
import { capacity, driverBuild, GPUS_PER_NODE, region } from '../catalogue.ts';
import { OPEN_STATES, remediations } from '../machine.ts';
import { clusters, phaseEntry, start, volumes } from '../provisioning.ts';
import { findCluster, findVolume } from '../rows.ts';
import { type ClusterOptions, reservationsOf } from '../wire.ts';
import { checkAddOn, checkConfig, insertAddOn } from './addons.ts';
import { clusterView } from './clusters.ts';
import { checkVolume, insertVolume, ownProject } from './volumes.ts';

/** `num_gpus` is whole nodes: checked first, since `num_reserved_gpus` defaults to it and is checked against it. */
function checkGpuCount(gpus: number): void {
  if (!Number.isInteger(gpus) || gpus < GPUS_PER_NODE || gpus % GPUS_PER_NODE !== 0)
    throw badRequest(`num_gpus is ${gpus}; it must be a positive multiple of ${GPUS_PER_NODE} (whole nodes of ${GPUS_PER_NODE} GPUs).`, 'num_gpus');
}

/** `num_gpus` is within what the region has left of the GPU type (every project's live clusters count). */
async function checkGpus(db: Database, tx: Tx, c: { region: string; gpuType: string; id?: string }, gpus: number): Promise<void> {
  checkGpuCount(gpus);
  const total = capacity(region(c.region), c.gpuType);
  // Concurrent creates and resizes of one region's GPU type take turns, so two cannot both fit into the last GPUs.
  await keyLock(db, tx, `gpu-capacity/${c.region}/${c.gpuType}`);
  const held = await tx.cluster.aggregate({
    where: { region: c.region, gpuType: c.gpuType, state: { not: 'Deleted' }, ...(c.id ? { id: { not: c.id } } : {}) },
    _sum: { desiredGpus: true },
  });
  const left = total - (held._sum.desiredGpus ?? 0);
  if (gpus > left)
    throw badRequest(
      `Region ${c.region} has ${Math.max(0, left)} ${c.gpuType} GPUs left of its ${total}; num_gpus ${gpus} does not fit.`,
      'num_gpus',
      'insufficient_capacity',
    );
}

function checkReserved(billingType: string, reserved: number, gpus: number): void {
  if (!Number.isInteger(reserved) || reserved < 0 || reserved > gpus)
    throw badRequest(`num_reserved_gpus must be from 0 to num_gpus (${gpus}).`, 'num_reserved_gpus');
  if (billingType === 'ON_DEMAND' && reserved > 0) throw badRequest('An ON_DEMAND cluster reserves no GPUs: num_reserved_gpus must be 0.', 'num_reserved_gpus');
}

/** Ten years: a reservation longer than any the platform sells (and `duration_hours` stays a safe integer). */
const MAX_DURATION_DAYS = 3650;

const noCapacityPools = (gpus: number | undefined) => {
  if (gpus) throw badRequest('This server has no capacity pools: num_capacity_pool_gpus must be 0.', 'num_capacity_pool_gpus');
};

export async function createCluster(ctx: Context<'createCluster'>) {
  const { db, clock, identity, body } = ctx;
  const projectId = identity.projectId;
  if (!body.cluster_name.trim()) throw badRequest('cluster_name must not be empty.', 'cluster_name');
  ownProject(body.project_id, projectId, 'project_id');
  const where = region(body.region);
  capacity(where, body.gpu_type);
  const build = driverBuild(where, body);
  if (body.capacity_pool_id) throw badRequest('This server has no capacity pools.', 'capacity_pool_id');
  noCapacityPools(body.num_capacity_pool_gpus);
  for (const field of ['auto_scale', 'auto_scaled'] as const)
    if (body[field]) throw badRequest('This server does not autoscale GPU clusters; give a fixed num_gpus.', field);
  if (body.auto_scale_max_gpus !== undefined) throw badRequest('This server does not autoscale GPU clusters.', 'auto_scale_max_gpus');
  if (body.duration_days !== undefined && (body.duration_days < 1 || body.duration_days > MAX_DURATION_DAYS))
    throw badRequest(`duration_days must be from 1 to ${MAX_DURATION_DAYS}.`, 'duration_days');
  if (body.num_preemptible_gpus !== undefined && body.num_preemptible_gpus < 0)
    throw badRequest('num_preemptible_gpus must not be negative.', 'num_preemptible_gpus');
  if (body.reservation_start_time && body.reservation_end_time && Date.parse(body.reservation_end_time) <= Date.parse(body.reservation_start_time))
    throw badRequest('reservation_end_time must be after reservation_start_time.', 'reservation_end_time');
  checkGpuCount(body.num_gpus);
  const reserved = body.num_reserved_gpus ?? (body.billing_type === 'ON_DEMAND' ? 0 : body.num_gpus);
  checkReserved(body.billing_type, reserved, body.num_gpus);
  if (body.shared_volume && body.volume_id) throw badRequest('Give either shared_volume (a new volume) or volume_id (an existing one), not both.', 'volume_id');
  if (body.shared_volume) {
    checkVolume(body.shared_volume, projectId, 'shared_volume.');
    if (body.shared_volume.region !== body.region)
      throw badRequest(`The shared volume must be in the cluster's region, ${body.region}.`, 'shared_volume.region');
  }
  const clusterType = body.cluster_type ?? 'KUBERNETES';
  const names = new Set<string>();
  for (const [i, a] of (body.add_ons ?? []).entries()) checkAddOn(a, clusterType, names, `add_ons.${i}.`);
  const options: ClusterOptions = {
    duration_days: body.duration_days,
    reservation_start_time: body.reservation_start_time,
    reservation_end_time: body.reservation_end_time,
    install_traefik: body.install_traefik,
    slurm_shm_size_gib: body.slurm_shm_size_gib,
    slurm_image: body.slurm_image,
    oidc_config: body.oidc_config,
    cluster_config: body.cluster_config,
    acceptance_tests_params: body.acceptance_tests_params,
    nvidia_version_id: body.nvidia_version_id,
    num_preemptible_gpus: body.num_preemptible_gpus,
  };
  return db.write(async (tx) => {
    await checkGpus(db, tx, { region: body.region, gpuType: body.gpu_type }, body.num_gpus);
    const now = instant(clock);
    const cluster = await tx.cluster.create({
      data: {
        id: newId('cluster', clock.now()),
        projectId,
        name: body.cluster_name,
        region: body.region,
        clusterType,
        gpuType: body.gpu_type,
        cudaVersion: build.cuda_version,
        nvidiaDriverVersion: build.nvidia_driver_version,
        billingType: body.billing_type,
        numReservedGpus: reserved,
        desiredGpus: body.num_gpus,
        createdAt: now,
        state: 'WaitingForControlPlaneNodes',
        options: JSON.stringify(options),
        phases: JSON.stringify([phaseEntry('WaitingForControlPlaneNodes', now)]),
        reservations: JSON.stringify([{ at: Number(now), gpus: reserved }]),
      },
    });
    // The spare host VM_ONLY and HOST_AWARE remediations can move a VM to.
    await tx.computeHost.create({
      data: { id: newId('host', clock.now()), projectId, clusterId: cluster.id, name: 'host-spare', numGpus: GPUS_PER_NODE, vmCapacity: 1 },
    });
    if (body.shared_volume) await insertVolume(tx, ctx, projectId, body.shared_volume, cluster.id);
    if (body.volume_id) {
      const v = await findVolume(tx, projectId, body.volume_id);
      if (v.region !== body.region) throw badRequest(`Volume ${v.id} is in ${v.region}, not the cluster's region ${body.region}.`, 'volume_id');
      if (v.clusterId !== null || v.status === 'bound') throw invalidTransition('shared volume', 'bound', 'attach');
      const attached = await tx.clusterSharedVolume.update({ where: { id: v.id }, data: { clusterId: cluster.id } });
      // A provisioning one is attached when it is ready (its step); any other state refuses the move (409).
      if (attached.status !== 'provisioning') await transition(tx, ctx, volumes, attached, 'attach');
    }
    for (const a of body.add_ons ?? []) await insertAddOn(tx, ctx, cluster, a);
    await start(tx, ctx, cluster);
    return clusterView(tx, clock, cluster);
  });
}

export async function updateCluster(ctx: Context<'updateCluster'>) {
  const { db, clock, identity, params, body } = ctx;
  noCapacityPools(body.num_capacity_pool_gpus);
  if (body.num_preemptible_gpus !== undefined && body.num_preemptible_gpus < 0)
    throw badRequest('num_preemptible_gpus must not be negative.', 'num_preemptible_gpus');
  return db.write(async (tx) => {
    let c: Cluster = await findCluster(tx, identity.projectId, params.cluster_id);
    if (c.state === 'Deleting') throw invalidTransition('cluster', c.state, 'update');
    if (body.cluster_type !== undefined && body.cluster_type !== c.clusterType)
      throw badRequest(`A cluster's type cannot be changed (this one is ${c.clusterType}).`, 'cluster_type');
    const gpus = body.num_gpus ?? c.desiredGpus;
    if (body.num_gpus !== undefined) checkGpuCount(body.num_gpus);
    const reserved = body.num_reserved_gpus ?? Math.min(c.numReservedGpus, gpus);
    checkReserved(c.billingType, reserved, gpus);
    const addOns = await tx.clusterAddOn.findMany({ where: { clusterId: c.id } });
    (body.add_ons ?? []).forEach((u, i) => {
      const a = addOns.find((x) => x.name === u.name);
      if (!a) throw badRequest(`The cluster has no add-on named '${u.name}'.`, `add_ons.${i}.name`);
      checkConfig(a.addOnType, u.config, `add_ons.${i}.config`);
    });
    const now = instant(clock);
    const options = JSON.parse(c.options) as ClusterOptions;
    if (body.reservation_end_time !== undefined) options.reservation_end_time = body.reservation_end_time;
    if (body.cluster_config !== undefined) options.cluster_config = body.cluster_config;
    if (body.num_preemptible_gpus !== undefined) options.num_preemptible_gpus = body.num_preemptible_gpus;
    const data = {
      options: JSON.stringify(options),
      ...(reserved !== c.numReservedGpus
        ? { numReservedGpus: reserved, reservations: JSON.stringify([...reservationsOf(c), { at: Number(now), gpus: reserved }]) }
        : {}),
    };
    if (gpus !== c.desiredGpus) {
      await checkGpus(db, tx, c, gpus);
      c = await transition(tx, ctx, clusters, c, 'resize', { data: { ...data, desiredGpus: gpus } });
    } else c = await tx.cluster.update({ where: { id: c.id }, data });
    for (const u of body.add_ons ?? []) {
      const a = addOns.find((x) => x.name === u.name)!;
      if (u.config !== undefined) await tx.clusterAddOn.update({ where: { id: a.id }, data: { config: JSON.stringify(u.config) } });
    }
    return clusterView(tx, clock, c);
  });
}

export async function deleteCluster(ctx: Context<'deleteCluster'>) {
  const { db, identity, params } = ctx;
  return db.write(async (tx) => {
    const c = await findCluster(tx, identity.projectId, params.cluster_id);
    if (c.state !== 'Deleting' && (await tx.remediation.count({ where: { clusterId: c.id, state: 'RUNNING' } })) > 0)
      throw conflict('A remediation of this cluster is running; delete the cluster once it has ended.', 'remediation_running');
    await transition(tx, ctx, clusters, c, 'delete');
    for (const r of await tx.remediation.findMany({ where: { clusterId: c.id, state: { in: OPEN_STATES.filter((s) => s !== 'RUNNING') } } }))
      await transition(tx, ctx, remediations, r, 'cancel');
    return { cluster_id: c.id };
  });
}
