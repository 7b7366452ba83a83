// Fixtures' v2 endpoints and deployments (the Control tag's applyFixtures): made in the document's transaction by
// the same checks and rows as createV2Endpoint and createDeployment, then put in a given state; READY is reached
// after the commit by the runner's own provisioning (readyDeployment), as any deployment reaches it.
import type { components } from '../../../generated/api.d.ts';
import type { Clock } from '../../core/clock.ts';
import type { Database, Tx } from '../../db/index.ts';
import { type Timing, transition } from '../../runner/progress.ts';
import type { Runner } from '../../runner/runner.ts';
import { deploymentMachine, deployments } from './machine.ts';
import { endpointNameOf } from './refs.ts';
import { acceptDeployment, createEndpointRow, insertDeployment } from './rows.ts';

export type SeededDeploymentState = NonNullable<components['schemas']['FixtureDeployment']['state']>;
type SeededEndpoint = components['schemas']['FixtureV2Endpoint'];

/** Runs `fn` for the document's item at `at`, its refusals naming the item's field: the caller's `within`. */
type Within = <T>(at: string, fn: () => Promise<T>) => Promise<T>;

/**
 * A fixture's v2 endpoint with its deployments, in the caller's transaction; answers the endpoint's id and its
 * deployments' ids, with the deployments that still have to reach READY after the commit.
 */
export async function seedV2Endpoint(
  tx: Tx,
  timing: Timing & { clock: Clock },
  project: { id: string; slug: string },
  input: SeededEndpoint,
  at: string,
  within: Within,
): Promise<{ id: string; deployments: string[]; toReady: string[] }> {
  const name = await within(at, async () => endpointNameOf(project.slug, input.name, 'name'));
  const e = await within(at, () => createEndpointRow(tx, timing.clock, project.id, name, input.visibility ?? 'VISIBILITY_PRIVATE', 'name', input.id));
  const made = { id: e.id, deployments: [] as string[], toReady: [] as string[] };
  for (const [i, dep] of (input.deployments ?? []).entries()) {
    const dat = `${at}.deployments.${i}`;
    const body = dep.request;
    let d = await within(`${dat}.request`, async () =>
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
