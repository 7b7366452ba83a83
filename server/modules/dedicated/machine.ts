// The v2 deployment's state machine. SCALING and DEGRADED are the public platform's states; nothing enters them
// here. Every move bumps the deployment's epoch, so a timed step scheduled for an earlier visit of a state (a
// deployment stopped and started again while provisioning) is skipped.
import type { Deployment } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { invalidTransition } from '../../core/errors.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Tx } from '../../db/index.ts';
import { newEtag } from '../../http/etag.ts';
import { enter, type Timing } from '../../runner/progress.ts';

export const deploymentMachine = defineMachine({
  name: 'deployment',
  kind: 'deployment',
  states: [
    'DEPLOYMENT_STATE_PROVISIONING',
    'DEPLOYMENT_STATE_READY',
    'DEPLOYMENT_STATE_SCALING',
    'DEPLOYMENT_STATE_DEGRADED',
    'DEPLOYMENT_STATE_FAILED',
    'DEPLOYMENT_STATE_STOPPED',
    'DEPLOYMENT_STATE_STOPPING',
  ],
  events: ['provisioned', 'failed', 'stop', 'stopped', 'start'],
  terminal: [],
  transitions: {
    DEPLOYMENT_STATE_PROVISIONING: { provisioned: 'DEPLOYMENT_STATE_READY', failed: 'DEPLOYMENT_STATE_FAILED', stop: 'DEPLOYMENT_STATE_STOPPED' },
    DEPLOYMENT_STATE_READY: { stop: 'DEPLOYMENT_STATE_STOPPING' },
    DEPLOYMENT_STATE_STOPPING: { stopped: 'DEPLOYMENT_STATE_STOPPED' },
    DEPLOYMENT_STATE_STOPPED: { start: 'DEPLOYMENT_STATE_PROVISIONING' },
    DEPLOYMENT_STATE_FAILED: { start: 'DEPLOYMENT_STATE_PROVISIONING', stop: 'DEPLOYMENT_STATE_STOPPED' },
  },
  timed: {
    DEPLOYMENT_STATE_PROVISIONING: { duration: 'deployment_provision', defaultMs: 60_000 },
    DEPLOYMENT_STATE_STOPPING: { duration: 'deployment_stop', defaultMs: 10_000 },
  },
});

export type DeploymentState = (typeof deploymentMachine.states)[number];
export type DeploymentEvent = (typeof deploymentMachine.events)[number];

/** Moves a deployment by `event` (with `data`), bumps its epoch and etag, and schedules the new state's timed step. */
export async function moveDeployment(tx: Tx, timing: Timing, d: Deployment, event: DeploymentEvent, data: Partial<Deployment> = {}): Promise<Deployment> {
  const state = deploymentMachine.next(d.state, event);
  const epoch = d.epoch + 1;
  const { count } = await tx.deployment.updateMany({
    where: { id: d.id, state: d.state, epoch: d.epoch },
    data: { ...data, state, epoch, etag: newEtag(), updatedAt: instant(timing.clock) },
  });
  if (count === 0) throw invalidTransition(deploymentMachine.name, d.state, event); // it moved meanwhile
  await enter(tx, timing, deploymentMachine, { id: d.id, projectId: d.projectId, state, epoch });
  return tx.deployment.findUniqueOrThrow({ where: { id: d.id } });
}
