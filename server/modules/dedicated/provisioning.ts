// The runner's timed steps of deployments: PROVISIONING places the replicas (placement.ts) and ends READY, or
// FAILED with the reason; STOPPING releases them and ends STOPPED.

import type { Progression, Timing } from '../../runner/progress.ts';
import { release } from '../hardware/capacity.ts';
import { recordDeploymentChange } from './events.ts';
import { type DeploymentState, deploymentMachine, moveDeployment } from './machine.ts';
import { DEPLOYMENT_OWNER, place } from './placement.ts';
import { desiredReplicas } from './traffic.ts';

export function deploymentProgression(timing: Timing): Progression<DeploymentState> {
  return {
    machine: deploymentMachine,
    load: async (tx, id) => {
      const d = await tx.deployment.findUnique({ where: { id } });
      return d && { id: d.id, projectId: d.projectId, state: d.state, epoch: d.epoch };
    },
    steps: {
      DEPLOYMENT_STATE_PROVISIONING: async (tx, id) => {
        const d = await tx.deployment.findUniqueOrThrow({ where: { id } });
        const outcome = await place(tx, timing.clock, d);
        const replicas = desiredReplicas(d);
        const next =
          'failure' in outcome
            ? await moveDeployment(tx, timing, d, 'failed', { message: outcome.failure })
            : await moveDeployment(tx, timing, d, 'provisioned', {
                hardwareId: outcome.hardware.id,
                readyReplicas: replicas,
                message: `${replicas} replica(s) ready on ${outcome.hardware.id}.`,
              });
        await recordDeploymentChange(tx, timing.clock, 'runner', d, next);
      },
      DEPLOYMENT_STATE_STOPPING: async (tx, id) => {
        const d = await tx.deployment.findUniqueOrThrow({ where: { id } });
        await release(tx, timing.clock, DEPLOYMENT_OWNER, d.id);
        const next = await moveDeployment(tx, timing, d, 'stopped', { readyReplicas: 0, message: 'Stopped.' });
        await recordDeploymentChange(tx, timing.clock, 'runner', d, next);
      },
    },
  };
}
