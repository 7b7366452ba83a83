// The compute module's state machines: the GPU cluster's and the shared volume's (at the end; their runner steps are
// in provisioning.ts), and the remediation's with the runner's steps that move it. A remediation made through the
// API starts PENDING; one raised by a passive health-check alert starts PENDING_APPROVAL. The runner starts a PENDING one once
// no other remediation of its instance is running, and finishes it through the cluster engine (engine.ts).
import type { ComputeInstance, Remediation } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Tx } from '../../db/index.ts';
import { enter, type Progression, stored, type Timing, transition } from '../../runner/progress.ts';
import { type ClusterEngine, localClusterEngine } from './engine.ts';
import { afterBoot } from './phases.ts';
import { vmKey } from './rows.ts';

export const remediationMachine = defineMachine({
  name: 'remediation',
  kind: 'remediation',
  states: ['PENDING_APPROVAL', 'PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'AUTO_RESOLVED'],
  // approve/reject/cancel come from callers; alert_resolved from the control path; start/succeed/fail from the runner.
  events: ['approve', 'reject', 'cancel', 'alert_resolved', 'start', 'succeed', 'fail'],
  terminal: ['SUCCEEDED', 'FAILED', 'CANCELLED', 'AUTO_RESOLVED'],
  transitions: {
    PENDING_APPROVAL: { approve: 'PENDING', reject: 'CANCELLED', cancel: 'CANCELLED', alert_resolved: 'AUTO_RESOLVED' },
    PENDING: { start: 'RUNNING', cancel: 'CANCELLED', alert_resolved: 'AUTO_RESOLVED' },
    RUNNING: { succeed: 'SUCCEEDED', fail: 'FAILED' },
  },
  timed: {
    PENDING: { duration: 'remediation_start', defaultMs: 5_000 },
    RUNNING: { duration: 'remediation_run', defaultMs: 60_000 },
  },
});

export type RemediationEvent = (typeof remediationMachine.events)[number];
export const OPEN_STATES = remediationMachine.states.filter((s) => !remediationMachine.isTerminal(s));

export interface NewRemediation {
  instance: ComputeInstance;
  mode: string;
  trigger: 'REMEDIATION_TRIGGER_MANUAL' | 'REMEDIATION_TRIGGER_AUTOMATED';
  /** MANUAL ones start PENDING; AUTOMATED ones (raised by an alert) await approval. */
  state: 'PENDING' | 'PENDING_APPROVAL';
  reason: string | null;
  requestedBy: string;
  passiveHealthCheckEventId?: string;
}

/** Creates a remediation in its first state, and schedules that state's timed step. */
export async function insertRemediation(tx: Tx, timing: Timing, r: NewRemediation): Promise<Remediation> {
  const now = instant(timing.clock);
  const row = await tx.remediation.create({
    data: {
      id: newId('rem', timing.clock.now()),
      projectId: r.instance.projectId,
      clusterId: r.instance.clusterId,
      instanceId: r.instance.id,
      mode: r.mode,
      trigger: r.trigger,
      state: r.state,
      reason: r.reason,
      requestedBy: r.requestedBy,
      passiveHealthCheckEventId: r.passiveHealthCheckEventId ?? null,
      createTime: now,
      updateTime: now,
    },
  });
  await enter(tx, timing, remediationMachine, row);
  return row;
}

/** Every move stamps the update time, and the end time on entering a terminal state. */
export const remediations = stored<Remediation>()({
  machine: remediationMachine,
  table: (c) => c.remediation,
  field: 'state',
  stamp: (_r, move, now) => ({ updateTime: now, ...(remediationMachine.isTerminal(move.to) ? { endTime: now } : {}) }),
});

/** Auto-resolves an open remediation once every alert linked to it has resolved (before it runs). */
export async function autoResolveIfCleared(tx: Tx, timing: Timing, remediationId: string): Promise<void> {
  const r = await tx.remediation.findUnique({ where: { id: remediationId } });
  if (!r || !remediationMachine.can(r.state, 'alert_resolved')) return;
  if ((await tx.passiveHealthCheckAlert.count({ where: { remediationId, resolvedAt: null } })) === 0)
    await transition(tx, timing, remediations, r, 'alert_resolved');
}

/** The runner's timed steps: PENDING -> RUNNING (when the instance is free) -> SUCCEEDED | FAILED. */
export function remediationProgression(timing: Timing, engine: ClusterEngine = localClusterEngine): Progression<(typeof remediationMachine.states)[number]> {
  const remediation = (tx: Tx, id: string) => tx.remediation.findUniqueOrThrow({ where: { id } });
  return {
    stored: remediations,
    steps: {
      PENDING: async (tx, id) => {
        const r = await remediation(tx, id);
        const now = instant(timing.clock);
        // Remediations of one instance run one at a time: claim the instance with a compare-and-set, so two workers
        // cannot start two of them at once; the loser waits for its next turn.
        const claimed = await tx.computeInstance.updateMany({
          where: { id: r.instanceId, status: { not: 'REMEDIATING' } },
          data: { status: 'REMEDIATING', updatedAt: now },
        });
        if (claimed.count === 0) return 'wait';
        await transition(tx, timing, remediations, r, 'start', { data: { startTime: now } });
        // HOST_AWARE cordons the host first, so nothing new lands on it while the VM moves.
        const instance = await tx.computeInstance.findUniqueOrThrow({ where: { id: r.instanceId } });
        if (r.mode === 'REMEDIATION_MODE_HOST_AWARE' && instance.vmId) {
          const vm = await tx.computeVm.findUnique({ where: { id: instance.vmId } });
          if (vm) await tx.computeHost.updateMany({ where: { id: vm.hostId, cordoned: false }, data: { cordoned: true, cordonedAt: now } });
        }
      },
      RUNNING: async (tx, id) => finish(tx, timing, engine, await remediation(tx, id)),
    },
    // Failed by the control plane: its message is the remediation's error message; a running one frees its instance.
    failure: {
      events: ['fail'],
      fail: async (tx, r, _event, error) => {
        await transition(tx, timing, remediations, r, 'fail', { data: { errorMessage: error.message } });
        await tx.computeInstance.updateMany({
          where: { id: r.instanceId, status: 'REMEDIATING' },
          data: { status: 'RUNNING', updatedAt: instant(timing.clock) },
        });
      },
    },
    // A step that keeps throwing: the remediation fails rather than staying RUNNING forever.
    giveUp: async (tx, id) => {
      const r = await remediation(tx, id);
      if (r.state !== 'RUNNING') return;
      await transition(tx, timing, remediations, r, 'fail', { data: { errorMessage: 'The remediation could not be completed.' } });
      await tx.computeInstance.updateMany({
        where: { id: r.instanceId, status: 'REMEDIATING' },
        data: { status: 'RUNNING', updatedAt: instant(timing.clock) },
      });
    },
  };
}

/** Applies the engine's plan for the remediation's mode to its instance, and moves it to SUCCEEDED or FAILED. */
async function finish(tx: Tx, timing: Timing, engine: ClusterEngine, r: Remediation): Promise<void> {
  const instance = await tx.computeInstance.findUniqueOrThrow({ where: { id: r.instanceId } });
  const vm = instance.vmId ? await tx.computeVm.findUnique({ where: { id: instance.vmId } }) : null;
  const hosts = await tx.computeHost.findMany({ where: { clusterId: instance.clusterId }, orderBy: { name: 'asc' } });
  const live = await tx.computeVm.findMany({ where: { clusterId: instance.clusterId, deletedAt: null }, select: { hostId: true } });
  const plan = engine.plan({
    mode: r.mode,
    instanceName: instance.name,
    unrecoverable: instance.unrecoverable,
    vmHostId: vm?.hostId ?? null,
    hosts: hosts.map((h) => ({
      id: h.id,
      name: h.name,
      cordoned: h.cordoned,
      vmCapacity: h.vmCapacity,
      vmCount: live.filter((v) => v.hostId === h.id).length,
    })),
  });
  const now = instant(timing.clock);
  if (plan.kind === 'fail') {
    await transition(tx, timing, remediations, r, 'fail', { data: { errorMessage: plan.message } });
    await tx.computeInstance.update({ where: { id: instance.id }, data: { status: vm ? 'RUNNING' : 'EVICTED', updatedAt: now } });
    return;
  }
  if (plan.kind === 'reboot') {
    await tx.computeVm.update({
      where: { id: vm!.id },
      data: { bootCount: { increment: 1 }, lastBootAt: now, phaseTransitions: afterBoot(vm!.phaseTransitions, now) },
    });
    await tx.computeInstance.update({ where: { id: instance.id }, data: { status: 'RUNNING', updatedAt: now } });
  } else {
    if (vm) await tx.computeVm.update({ where: { id: vm.id }, data: { deletedAt: now } });
    if (plan.kind === 'evict') {
      await tx.computeInstance.update({ where: { id: instance.id }, data: { status: 'EVICTED', vmId: null, updatedAt: now } });
    } else {
      const generation = instance.vmGeneration + 1;
      const name = `${instance.name}-vm${generation}`;
      const vmId = vmKey(instance.clusterId, name);
      await tx.computeVm.create({
        data: {
          id: vmId,
          name,
          projectId: instance.projectId,
          clusterId: instance.clusterId,
          instanceId: instance.id,
          hostId: plan.hostId,
          createdAt: now,
          lastBootAt: now,
          phaseTransitions: afterBoot('[]', now),
        },
      });
      await tx.computeInstance.update({ where: { id: instance.id }, data: { status: 'RUNNING', vmId, vmGeneration: generation, updatedAt: now } });
    }
  }
  await transition(tx, timing, remediations, r, 'succeed');
}

/** A GPU cluster made through the API: provisioned, resized and torn down by the runner (provisioning.ts). */
export const clusterMachine = defineMachine({
  name: 'cluster',
  kind: 'cluster',
  states: ['WaitingForControlPlaneNodes', 'WaitingForDataPlaneNodes', 'InstallingDrivers', 'Ready', 'Deleting', 'Deleted'],
  // resize/delete come from callers; the rest from the runner.
  events: ['control_plane_ready', 'nodes_ready', 'drivers_installed', 'resize', 'delete', 'torn_down'],
  terminal: ['Deleted'],
  transitions: {
    WaitingForControlPlaneNodes: { control_plane_ready: 'WaitingForDataPlaneNodes', delete: 'Deleting' },
    WaitingForDataPlaneNodes: { nodes_ready: 'InstallingDrivers', delete: 'Deleting' },
    InstallingDrivers: { drivers_installed: 'Ready', delete: 'Deleting' },
    Ready: { resize: 'WaitingForDataPlaneNodes', delete: 'Deleting' },
    Deleting: { torn_down: 'Deleted' },
  },
  timed: {
    WaitingForControlPlaneNodes: { duration: 'cluster_control_plane', defaultMs: 30_000 },
    WaitingForDataPlaneNodes: { duration: 'cluster_data_plane', defaultMs: 60_000 },
    InstallingDrivers: { duration: 'cluster_drivers', defaultMs: 30_000 },
    Deleting: { duration: 'cluster_teardown', defaultMs: 30_000 },
  },
});

export const volumeMachine = defineMachine({
  name: 'shared volume',
  kind: 'shared_volume',
  states: ['provisioning', 'available', 'bound', 'deleting', 'deleted'],
  events: ['provisioned', 'attach', 'detach', 'resize', 'delete', 'removed'],
  terminal: ['deleted'],
  transitions: {
    provisioning: { provisioned: 'available' },
    available: { attach: 'bound', resize: 'available', delete: 'deleting' },
    bound: { detach: 'available', resize: 'bound' },
    deleting: { removed: 'deleted' },
  },
  timed: {
    provisioning: { duration: 'shared_volume_provision', defaultMs: 10_000 },
    deleting: { duration: 'shared_volume_delete', defaultMs: 5_000 },
  },
});
