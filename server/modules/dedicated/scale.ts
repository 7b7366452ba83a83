// Setting a deployment's replica count from elsewhere than its PATCH (a rollout's final replicas): the same moves
// as an autoscaling change (stop at 0, start a stopped one, resize a READY one in place on its hardware), with its
// event in the endpoint's feed, in the caller's transaction.
import type { Deployment } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import type { Tx } from '../../db/index.ts';
import { newEtag } from '../../http/etag.ts';
import { type Timing, transition } from '../../runner/progress.ts';
import { release, reserveIfFree } from '../hardware/index.ts';
import { recordDeploymentChange } from './events.ts';
import { type DeploymentEvent, deployments, desiredReplicas } from './machine.ts';
import { DEPLOYMENT_OWNER } from './placement.ts';

/**
 * Runs `replicas` replicas of a deployment: `minReplicas` becomes it (`maxReplicas` at least it; both 0 stop it).
 * Answers false, changing nothing, when a READY deployment would grow past the free capacity of its hardware.
 */
export async function setReplicas(tx: Tx, timing: Timing, d: Deployment, replicas: number): Promise<boolean> {
  const wanted = replicas === 0 ? { minReplicas: 0, maxReplicas: 0 } : { minReplicas: replicas, maxReplicas: Math.max(d.maxReplicas, replicas) };
  let event: DeploymentEvent | null = null;
  let data: Partial<Deployment> = { ...wanted };
  if (replicas === 0) {
    if (d.state === 'DEPLOYMENT_STATE_STOPPED') return true;
    event = 'stop';
    data = { ...data, ...(d.state === 'DEPLOYMENT_STATE_READY' ? { message: 'Stopping replicas.' } : { message: 'Stopped.', readyReplicas: 0 }) };
  } else if (['DEPLOYMENT_STATE_STOPPED', 'DEPLOYMENT_STATE_FAILED', 'DEPLOYMENT_STATE_STOPPING'].includes(d.state)) {
    event = 'start';
    data = { ...data, hardwareId: null, readyReplicas: 0, message: 'Provisioning replicas.' };
  } else if (d.state === 'DEPLOYMENT_STATE_READY') {
    const delta = desiredReplicas(wanted) - desiredReplicas(d);
    const grown = { projectId: d.projectId, hardwareId: d.hardwareId!, replicas: delta, ownerKind: DEPLOYMENT_OWNER, ownerId: d.id } as const;
    if (delta > 0 && !(await reserveIfFree(tx, timing.clock, grown))) return false;
    if (delta < 0) await release(tx, timing.clock, DEPLOYMENT_OWNER, d.id, -delta);
    data = { ...data, readyReplicas: desiredReplicas(wanted), message: `${desiredReplicas(wanted)} replica(s) ready on ${d.hardwareId}.` };
  }
  const next = event
    ? await transition(tx, timing, deployments, d, event, { data })
    : await tx.deployment.update({ where: { id: d.id }, data: { ...data, etag: newEtag(), updatedAt: instant(timing.clock) } });
  await recordDeploymentChange(tx, timing.clock, 'runner', d, next);
  return true;
}
