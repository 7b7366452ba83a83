// The container deployment's state machine (the platform's statuses), and the runner's steps: a rollout or a
// scaling completes after its duration (no container is started: the replicas are this server's records), and the
// autoscaler looks at a queue-autoscaled deployment's backlog while it is Ready or ScaledToZero.
import type { ContainerDeployment } from '../../../generated/prisma/sqlite/client/client.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Tx } from '../../db/index.ts';
import { type Progression, stored, type Timing, transition } from '../../runner/progress.ts';
import { type Line, replicaId, writeLog } from './logs.ts';
import { autoscalingOf, desiredReplicas, type Spec } from './rules.ts';

export const containerMachine = defineMachine({
  name: 'container deployment',
  kind: 'container_deployment',
  states: ['Updating', 'Scaling', 'Ready', 'ScaledToZero', 'Failed'],
  events: ['ready', 'idle', 'update', 'scale', 'fail'],
  terminal: [],
  transitions: {
    Updating: { ready: 'Ready', idle: 'ScaledToZero', update: 'Updating', fail: 'Failed' },
    Scaling: { ready: 'Ready', idle: 'ScaledToZero', scale: 'Scaling', update: 'Updating', fail: 'Failed' },
    Ready: { scale: 'Scaling', update: 'Updating' },
    ScaledToZero: { scale: 'Scaling', update: 'Updating' },
    Failed: { update: 'Updating' },
  },
  timed: {
    Updating: { duration: 'container_rollout', defaultMs: 30_000 },
    Scaling: { duration: 'container_scale', defaultMs: 10_000 },
    Ready: { duration: 'container_autoscale', defaultMs: 30_000 },
    ScaledToZero: { duration: 'container_autoscale', defaultMs: 30_000 },
  },
});

export type ContainerState = (typeof containerMachine.states)[number];

/** Every move bumps the epoch (a step scheduled for an earlier visit of a state is skipped) and the update time. */
export const containerDeployments = stored<ContainerDeployment>()({
  machine: containerMachine,
  table: (c) => c.containerDeployment,
  field: 'status',
  epoch: 'epoch',
  stamp: (_d, _m, now) => ({ updatedAt: now }),
});

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

/** The lines of replicas a rollout (all of the revision) or a scaling (those above the ready ones) schedules. */
export function scheduledLines(d: Pick<ContainerDeployment, 'id' | 'status' | 'revision' | 'desiredReplicas' | 'readyReplicas'>): Line[] {
  const first = d.status === 'Updating' ? 1 : d.readyReplicas + 1;
  return range(first, d.desiredReplicas).map((n) => ({ source: replicaId(d.id, d.revision, n), text: `replica scheduled (revision ${d.revision})` }));
}

/** A rollout or a scaling completes: the desired replicas (asked again) are ready, the others stopped. */
async function complete(tx: Tx, timing: Timing, id: string): Promise<void> {
  const d = await tx.containerDeployment.findUniqueOrThrow({ where: { id } });
  const spec = JSON.parse(d.spec) as Spec;
  const { replicas } = await desiredReplicas(tx, d.projectId, { minReplicas: d.minReplicas, maxReplicas: d.maxReplicas, autoscaling: spec.autoscaling });
  const rolled = d.status === 'Updating';
  const kept = rolled && d.readyRevision !== d.revision ? 0 : d.readyReplicas;
  const lines: Line[] = [];
  // Replicas of an earlier revision, and those above what is wanted now, stop.
  for (const n of range(kept + 1, d.readyReplicas))
    lines.push({
      source: replicaId(d.id, d.readyRevision, n),
      revision: d.readyRevision,
      text: rolled && kept === 0 ? `replica stopped (replaced by revision ${d.revision})` : 'replica stopped (scaled down)',
    });
  for (const n of range(replicas + 1, kept)) lines.push({ source: replicaId(d.id, d.revision, n), text: 'replica stopped (scaled down)' });
  for (const n of range(kept + 1, replicas))
    lines.push({ source: replicaId(d.id, d.revision, n), text: 'replica ready (simulated: no container was started on this server)' });
  const now = BigInt(timing.clock.now());
  const moved = await transition(tx, timing, containerDeployments, d, replicas > 0 ? 'ready' : 'idle', {
    data: {
      desiredReplicas: replicas,
      readyReplicas: replicas,
      readyRevision: d.revision,
      readySince: replicas === 0 ? null : kept > 0 && d.readySince !== null ? d.readySince : now,
      spec: JSON.stringify({ ...spec, ready_image: d.image }),
    },
  });
  lines.push({ text: replicas > 0 ? `status Ready: ${replicas} replica(s) of revision ${d.revision} ready` : 'status ScaledToZero: no replica wanted' });
  await writeLog(tx, timing.clock, moved, lines);
}

/** The autoscaler's look: only a queue-autoscaled deployment moves, when the replicas it asks for changed. */
async function look(tx: Tx, timing: Timing, id: string): Promise<undefined | 'wait'> {
  const d = await tx.containerDeployment.findUniqueOrThrow({ where: { id } });
  const autoscaling = autoscalingOf(d);
  if (autoscaling?.metric !== 'QueueBacklogPerWorker') return;
  const { replicas, why } = await desiredReplicas(tx, d.projectId, { minReplicas: d.minReplicas, maxReplicas: d.maxReplicas, autoscaling });
  if (replicas === d.readyReplicas) return 'wait';
  const moved = await transition(tx, timing, containerDeployments, d, 'scale', { data: { desiredReplicas: replicas, changedAt: BigInt(timing.clock.now()) } });
  await writeLog(tx, timing.clock, moved, [
    { text: `autoscaler: ${d.readyReplicas} -> ${replicas} replica(s) (${why}); status Scaling` },
    ...scheduledLines(moved),
  ]);
}

export function containerProgression(services: Timing): Progression<ContainerState> {
  return {
    stored: containerDeployments,
    steps: {
      Updating: (tx, id) => complete(tx, services, id),
      Scaling: (tx, id) => complete(tx, services, id),
      Ready: (tx, id) => look(tx, services, id),
      ScaledToZero: (tx, id) => look(tx, services, id),
    },
    giveUp: async (tx, id, error) => {
      const d = await tx.containerDeployment.findUniqueOrThrow({ where: { id } });
      const line = { text: `the server gave up on this step: ${error.slice(0, 300)}` };
      if (!containerMachine.can(d.status, 'fail')) return writeLog(tx, services.clock, d, [line]);
      const moved = await transition(tx, services, containerDeployments, d, 'fail');
      await writeLog(tx, services.clock, moved, [line, { text: 'status Failed' }]);
    },
  };
}
