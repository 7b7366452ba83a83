// Fixtures' v2 endpoints and deployments (the Control tag's applyFixtures): made in the document's transaction by
// the same checks and rows as createV2Endpoint and createDeployment, then put in a given state; READY is reached
// after the commit by the runner's own provisioning (readyDeployment), as any deployment reaches it.
import type { components } from '../../../generated/api.d.ts';
import type { Clock } from '../../core/clock.ts';
import { idTaken, within } from '../../core/errors.ts';
import type { Database, Tx } from '../../db/index.ts';
import { type Timing, transition } from '../../runner/progress.ts';
import type { Runner } from '../../runner/runner.ts';
import type { FixtureSection } from '../types.ts';
import { deploymentMachine, deployments } from './machine.ts';
import { endpointNameOf } from './refs.ts';
import { acceptDeployment, createEndpointRow, insertDeployment } from './rows.ts';

export type SeededDeploymentState = NonNullable<components['schemas']['FixtureDeployment']['state']>;
type SeededEndpoint = components['schemas']['FixtureV2Endpoint'];

/**
 * A fixture's v2 endpoint with its deployments, in the caller's transaction; answers the endpoint's id and its
 * deployments' ids, with the deployments that still have to reach READY after the commit.
 */
export async function seedV2Endpoint(
  tx: Tx,
  timing: Timing & { clock: Clock },
  project: { id: string; slug: string },
  input: SeededEndpoint,
): Promise<{ id: string; deployments: string[]; toReady: string[] }> {
  const name = endpointNameOf(project.slug, input.name, 'name');
  const e = await createEndpointRow(tx, timing.clock, project.id, name, input.visibility ?? 'VISIBILITY_PRIVATE', 'name', input.id);
  const made = { id: e.id, deployments: [] as string[], toReady: [] as string[] };
  for (const [i, dep] of (input.deployments ?? []).entries()) {
    const body = dep.request;
    let d = await within(`deployments.${i}.request`, async () =>
      insertDeployment(tx, timing, { id: dep.id, projectId: project.id, endpointId: e.id, ...(await acceptDeployment(tx, project.id, body)) }),
    );
    const state = dep.state ?? 'DEPLOYMENT_STATE_PROVISIONING';
    const message = dep.message;
    if (state === 'DEPLOYMENT_STATE_FAILED' && d.state === 'DEPLOYMENT_STATE_PROVISIONING')
      d = await transition(tx, timing, deployments, d, 'failed', { data: { message: message ?? 'Provisioning failed.' } });
    else if (state === 'DEPLOYMENT_STATE_STOPPED' && d.state === 'DEPLOYMENT_STATE_PROVISIONING')
      d = await transition(tx, timing, deployments, d, 'stop', { data: { message: message ?? 'Stopped.' } });
    else if (state === 'DEPLOYMENT_STATE_READY') made.toReady.push(d.id);
    made.deployments.push(d.id);
  }
  return made;
}

/**
 * Provisions a committed PROVISIONING deployment now, by the runner's own step (which reserves its hardware, or
 * fails it when none is free, as on the platform). Answers the state it is in.
 */
export async function readyDeployment(services: { db: Database; runner: Runner }, id: string): Promise<string> {
  const { prisma } = services.db;
  const before = await prisma.deployment.findUniqueOrThrow({ where: { id } });
  if (before.state !== 'DEPLOYMENT_STATE_PROVISIONING') return before.state;
  await services.runner.runNow(deploymentMachine.kind, id);
  return (await prisma.deployment.findUniqueOrThrow({ where: { id } })).state;
}

/** A fixtures document's v2 endpoints with their deployments (the Control tag's applyFixtures): READY ones provisioned once it has committed. */
export const v2EndpointsSection: FixtureSection<'v2_endpoints'> = {
  order: 6,
  async fill({ tx, services, project }, endpoint) {
    if (endpoint.id && (await tx.dedicatedEndpoint.findUnique({ where: { id: endpoint.id } }))) throw idTaken('v2 endpoint', endpoint.id, 'id');
    for (const [d, dep] of (endpoint.deployments ?? []).entries())
      if (dep.id && (await tx.deployment.findUnique({ where: { id: dep.id } }))) throw idTaken('deployment', dep.id, `deployments.${d}.id`);
    const made = await seedV2Endpoint(tx, services, project, endpoint as SeededEndpoint);
    const after = made.toReady.length
      ? async (runner: Runner) => {
          for (const id of made.toReady) await readyDeployment({ db: services.db, runner }, id);
        }
      : undefined;
    return { ids: { v2_endpoints: [made.id], deployments: made.deployments }, after };
  },
};
