// The lifecycle events feed of v2 endpoints (GET .../endpoints/{id}/events). Every change to an endpoint or its
// deployments records its event in the change's own transaction.
import type { DedicatedEndpoint, Deployment } from '../../../generated/prisma/sqlite/client/client.ts';
import { type Clock, instant } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { Tx } from '../../db/index.ts';
import { deploymentMachine, desiredReplicas } from './machine.ts';

interface EventFields {
  type: string;
  level?: 'LEVEL_INFO' | 'LEVEL_ERROR';
  deploymentId?: string;
  message: string;
  name?: string;
  paths?: string[];
  status?: string;
  reason?: string | null;
  oldReplicas?: number;
  newReplicas?: number;
}

/** Who emitted an event: a caller's request, or the runner (the deployment machine's timed steps, the autoscaler). */
export type EventSource = 'api' | 'runner';

/**
 * Appends one event to an endpoint's feed. Bumping the endpoint's eventSeq takes its row lock until commit, so per
 * endpoint the numbering follows commit order (a cursor never skips an event committed after a later-numbered one).
 */
async function recordEvent(tx: Tx, clock: Clock, source: EventSource, projectId: string, endpointId: string, f: EventFields): Promise<void> {
  const { eventSeq } = await tx.dedicatedEndpoint.update({ where: { id: endpointId }, data: { eventSeq: { increment: 1 } } });
  await tx.endpointEvent.create({
    data: {
      id: newId('evt', clock.now()),
      projectId,
      endpointId,
      seq: eventSeq,
      type: f.type,
      level: f.level ?? 'LEVEL_INFO',
      sourceKind: f.deploymentId ? 'SOURCE_KIND_DEPLOYMENT' : 'SOURCE_KIND_ENDPOINT',
      source,
      deploymentId: f.deploymentId ?? null,
      message: f.message,
      name: f.name ?? null,
      paths: f.paths ? JSON.stringify(f.paths) : null,
      status: f.status ?? null,
      reason: f.reason ?? null,
      oldReplicas: f.oldReplicas ?? null,
      newReplicas: f.newReplicas ?? null,
      createdAt: instant(clock),
    },
  });
}

/** The columns of a deployment's `autoscaling`: a change to any of them is an `autoscaling` change. */
const AUTOSCALING_COLUMNS = ['minReplicas', 'maxReplicas', 'scaleDownWindow', 'scaleUpWindow', 'scaleToZeroWindow', 'scalingMetrics'] as const;

/** Records what a write did to a deployment: created (no `before`), deleted (no `after`), a transition, a resize, an edit. */
export async function recordDeploymentChange(tx: Tx, clock: Clock, source: EventSource, before: Deployment | null, after: Deployment | null): Promise<void> {
  const d = (after ?? before)!;
  const record = (f: Omit<EventFields, 'deploymentId'>) => recordEvent(tx, clock, source, d.projectId, d.endpointId, { ...f, deploymentId: d.id });
  if (!before) {
    const replicas = d.state === 'DEPLOYMENT_STATE_STOPPED' ? 0 : desiredReplicas(d);
    return record({
      type: 'deployment.created',
      name: d.name,
      status: d.state,
      newReplicas: replicas,
      message: `Deployment '${d.name}' created: ${d.message}`,
    });
  }
  if (!after) return record({ type: 'deployment.deleted', name: d.name, message: `Deployment '${d.name}' deleted.` });
  if (before.state !== after.state) {
    const level = after.state === 'DEPLOYMENT_STATE_FAILED' ? 'LEVEL_ERROR' : 'LEVEL_INFO';
    const reason = deploymentMachine.eventBetween(before.state, after.state) ?? null;
    return record({ type: 'deployment.state_changed', level, status: after.state, reason, message: after.message });
  }
  if (after.state === 'DEPLOYMENT_STATE_READY' && before.readyReplicas !== after.readyReplicas) {
    return record({
      type: 'deployment.scaled',
      status: after.state,
      oldReplicas: before.readyReplicas,
      newReplicas: after.readyReplicas,
      message: after.message,
    });
  }
  const autoscaled = AUTOSCALING_COLUMNS.some((f) => before[f] !== after[f]);
  const paths = [...(before.name !== after.name ? ['name'] : []), ...(autoscaled ? ['autoscaling'] : [])];
  if (paths.length)
    return record({ type: 'deployment.updated', status: after.state, paths, message: `Deployment '${after.name}' changed: ${paths.join(', ')}.` });
}

/** Records an endpoint's creation (no `before`) or which of its fields a write changed (nothing when none did). */
export async function recordEndpointChange(tx: Tx, clock: Clock, before: DedicatedEndpoint | null, after: DedicatedEndpoint): Promise<void> {
  const record = (f: EventFields) => recordEvent(tx, clock, 'api', after.projectId, after.id, f);
  if (!before) return record({ type: 'endpoint.created', name: after.name, message: `Endpoint '${after.name}' created.` });
  const paths = (['name', 'visibility', 'trafficSplit'] as const).filter((f) => before[f] !== after[f]);
  if (paths.length === 0) return;
  const split = paths.includes('trafficSplit') ? ` Traffic split: ${after.trafficSplit}.` : '';
  await record({ type: 'endpoint.updated', paths: [...paths], message: `Endpoint '${after.name}' changed: ${paths.join(', ')}.${split}` });
}
