// The v2 deployment's state machine. SCALING and DEGRADED are the public platform's states; nothing enters them
// here. Every move bumps the deployment's epoch, so a timed step scheduled for an earlier visit of a state (a
// deployment stopped and started again while provisioning) is skipped.
import type { Deployment } from '../../../generated/prisma/sqlite/client/client.ts';
import { defineMachine } from '../../core/machine.ts';
import { newEtag } from '../../http/etag.ts';
import { stored } from '../../runner/progress.ts';

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

/**
 * Replicas a deployment starts with when it provisions: its minimum, and at least one; none when its maximum is 0
 * (stopped). Once READY, the autoscaler (autoscaling.ts) moves its `readyReplicas` between the bounds.
 */
export const desiredReplicas = (d: { minReplicas: number; maxReplicas: number }) => (d.maxReplicas === 0 ? 0 : Math.max(d.minReplicas, 1));

export type DeploymentState = (typeof deploymentMachine.states)[number];
export type DeploymentEvent = (typeof deploymentMachine.events)[number];

/** Every move bumps the deployment's epoch and etag and stamps its update time. */
export const deployments = stored<Deployment>()({
  machine: deploymentMachine,
  table: (c) => c.deployment,
  field: 'state',
  epoch: 'epoch',
  stamp: (_d, _m, now) => ({ etag: newEtag(), updatedAt: now }),
});
