// The runner's steps that provision and tear down GPU clusters and shared volumes (their machines are declared in
// machine.ts). A cluster made through the API starts WaitingForControlPlaneNodes; its nodes are made to match the asked-for
// GPUs when WaitingForDataPlaneNodes ends (again after each resize); teardown releases everything it had.
import type { Cluster, ClusterSharedVolume } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import type { Tx } from '../../db/index.ts';
import { enter, type Progression, stored, type Timing, transition } from '../../runner/progress.ts';
import { GPUS_PER_NODE } from './catalogue.ts';
import { clusterMachine, OPEN_STATES, remediations, volumeMachine } from './machine.ts';
import { addNodes } from './rows.ts';

/** The platform's phase for each state a cluster enters (Deleted has none: the cluster is gone). */
const PHASE: Record<string, string> = {
  WaitingForControlPlaneNodes: 'CLUSTER_PHASE_WAITING_FOR_CONTROL_PLANE_NODES',
  WaitingForDataPlaneNodes: 'CLUSTER_PHASE_WAITING_FOR_DATA_PLANE_NODES',
  InstallingDrivers: 'CLUSTER_PHASE_INSTALLING_DRIVERS',
  Ready: 'CLUSTER_PHASE_READY',
  Deleting: 'CLUSTER_PHASE_DELETING',
};

export const phaseEntry = (state: string, now: bigint) => ({ phase: PHASE[state]!, at: Number(now) });

/** Every move appends the state's phase to the cluster's history; the first Ready stamps first_ready_at. */
export const clusters = stored<Cluster>()({
  machine: clusterMachine,
  table: (c) => c.cluster,
  field: 'state',
  stamp: (c, move, now) => ({
    ...(PHASE[move.to] ? { phases: JSON.stringify([...JSON.parse(c.phases || '[]'), phaseEntry(move.to, now)]) } : {}),
    ...(move.to === 'Ready' && c.firstReadyAt === null ? { firstReadyAt: now } : {}),
    ...(move.to === 'Deleted' ? { deletedAt: now } : {}),
  }),
});

export const volumes = stored<ClusterSharedVolume>()({
  machine: volumeMachine,
  table: (c) => c.clusterSharedVolume,
  field: 'status',
  stamp: (_v, _move, now) => ({ updatedAt: now }),
});

/** Makes the cluster's live nodes match its asked-for GPUs; 'wait' when a node to release is being remediated. */
async function reconcileNodes(tx: Tx, timing: Timing, cluster: Cluster): Promise<'wait' | undefined> {
  const live = await tx.computeInstance.findMany({ where: { clusterId: cluster.id, removedAt: null } });
  const want = Math.ceil(cluster.desiredGpus / GPUS_PER_NODE);
  if (live.length < want) await addNodes(tx, timing.clock, cluster, want - live.length, GPUS_PER_NODE);
  if (live.length > want) {
    // Release the highest-numbered nodes; one being remediated is waited for.
    const byNumber = [...live].sort((a, b) => Number(b.name.replace(/\D+/g, '')) - Number(a.name.replace(/\D+/g, '')));
    const release = byNumber.slice(0, live.length - want);
    if (release.some((i) => i.status === 'REMEDIATING')) return 'wait';
    await releaseNodes(
      tx,
      timing,
      release.map((i) => i.id),
    );
  }
  return undefined;
}

/** Deletes the nodes' VMs, cancels their open remediations and marks them released. */
async function releaseNodes(tx: Tx, timing: Timing, instanceIds: string[]): Promise<void> {
  const now = instant(timing.clock);
  await tx.computeVm.updateMany({ where: { instanceId: { in: instanceIds }, deletedAt: null }, data: { deletedAt: now } });
  for (const r of await tx.remediation.findMany({ where: { instanceId: { in: instanceIds }, state: { in: OPEN_STATES.filter((s) => s !== 'RUNNING') } } }))
    await transition(tx, timing, remediations, r, 'cancel');
  await tx.computeInstance.updateMany({ where: { id: { in: instanceIds } }, data: { removedAt: now, vmId: null, updatedAt: now } });
}

/** Teardown: VMs deleted, nodes released, add-ons removed, volumes detached (and deleted unless lifecycle-independent). */
async function tearDown(tx: Tx, timing: Timing, cluster: Cluster): Promise<void> {
  const nodes = await tx.computeInstance.findMany({ where: { clusterId: cluster.id, removedAt: null }, select: { id: true } });
  await releaseNodes(
    tx,
    timing,
    nodes.map((n) => n.id),
  );
  await tx.clusterAddOn.deleteMany({ where: { clusterId: cluster.id } });
  for (const v of await tx.clusterSharedVolume.findMany({ where: { clusterId: cluster.id } })) {
    let row = await tx.clusterSharedVolume.update({ where: { id: v.id }, data: { clusterId: null } });
    if (row.status === 'bound') row = await transition(tx, timing, volumes, row, 'detach');
    if (!row.lifecycleIndependent && row.status === 'available') await transition(tx, timing, volumes, row, 'delete');
  }
}

export function clusterProgression(timing: Timing): Progression<(typeof clusterMachine.states)[number]> {
  const load = (tx: Tx, id: string) => tx.cluster.findUniqueOrThrow({ where: { id } });
  return {
    stored: clusters,
    steps: {
      WaitingForControlPlaneNodes: async (tx, id) => {
        await transition(tx, timing, clusters, await load(tx, id), 'control_plane_ready');
      },
      WaitingForDataPlaneNodes: async (tx, id) => {
        const c = await load(tx, id);
        if ((await reconcileNodes(tx, timing, c)) === 'wait') return 'wait';
        await transition(tx, timing, clusters, c, 'nodes_ready');
      },
      InstallingDrivers: async (tx, id) => {
        await transition(tx, timing, clusters, await load(tx, id), 'drivers_installed');
      },
      Deleting: async (tx, id) => {
        const c = await load(tx, id);
        await tearDown(tx, timing, c);
        await transition(tx, timing, clusters, c, 'torn_down');
      },
    },
  };
}

export function volumeProgression(timing: Timing): Progression<(typeof volumeMachine.states)[number]> {
  const load = (tx: Tx, id: string) => tx.clusterSharedVolume.findUniqueOrThrow({ where: { id } });
  return {
    stored: volumes,
    steps: {
      // A volume a cluster asked for while it was provisioning is attached as soon as it is ready.
      provisioning: async (tx, id) => {
        const v = await transition(tx, timing, volumes, await load(tx, id), 'provisioned');
        if (v.clusterId) await transition(tx, timing, volumes, v, 'attach');
      },
      deleting: async (tx, id) => {
        await transition(tx, timing, volumes, await load(tx, id), 'removed');
      },
    },
  };
}

/** Schedules a new subject's first timed step. */
export const start = (tx: Tx, timing: Timing, row: Cluster | ClusterSharedVolume) =>
  'state' in row
    ? enter(tx, timing, clusterMachine, { id: row.id, projectId: row.projectId, state: row.state })
    : enter(tx, timing, volumeMachine, { id: row.id, projectId: row.projectId, state: row.status });
