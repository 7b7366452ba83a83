// The runner's timed steps of deployments: PROVISIONING places the replicas (placement.ts) and ends READY, or
// FAILED with the reason; STOPPING releases them and ends STOPPED.

import { type Progression, type Timing, transition } from '../../runner/progress.ts';
import { release } from '../hardware/index.ts';
import { recordDeploymentChange } from './events.ts';
import { type DeploymentState, deployments, desiredReplicas } from './machine.ts';
import { DEPLOYMENT_OWNER, place } from './placement.ts';

export function deploymentProgression(timing: Timing): Progression<DeploymentState> {
  return {
    stored: deployments,
    steps: {
      DEPLOYMENT_STATE_PROVISIONING: async (tx, id) => {
        const d = await tx.deployment.findUniqueOrThrow({ where: { id } });
        const outcome = await place(tx, timing.clock, d);
        const replicas = desiredReplicas(d);
        const next =
          'failure' in outcome
            ? await transition(tx, timing, deployments, d, 'failed', { data: { message: outcome.failure } })
            : await transition(tx, timing, deployments, d, 'provisioned', {
                data: { hardwareId: outcome.hardware.id, readyReplicas: replicas, message: `${replicas} replica(s) ready on ${outcome.hardware.id}.` },
              });
        await recordDeploymentChange(tx, timing.clock, 'runner', d, next);
      },
      DEPLOYMENT_STATE_STOPPING: async (tx, id) => {
        const d = await tx.deployment.findUniqueOrThrow({ where: { id } });
        await release(tx, timing.clock, DEPLOYMENT_OWNER, d.id);
        // Bounds that let it run: the autoscaler is scaling it to zero (a caller stops with 0/0); a request wakes it.
        const message = d.maxReplicas > 0 ? 'Scaled to zero replicas; a request to the endpoint wakes it.' : 'Stopped.';
        const next = await transition(tx, timing, deployments, d, 'stopped', { data: { readyReplicas: 0, message } });
        await recordDeploymentChange(tx, timing.clock, 'runner', d, next);
      },
    },
    // Failed by the control plane: its message is the deployment's, as a failed placement's reason is.
    failure: {
      events: ['failed'],
      fail: async (tx, d, _event, error) => {
        const next = await transition(tx, timing, deployments, d, 'failed', { data: { message: error.message } });
        await recordDeploymentChange(tx, timing.clock, 'runner', d, next);
      },
    },
  };
}
