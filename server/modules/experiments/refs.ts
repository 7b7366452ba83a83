// Module `experiments`: how its paths name things. The endpoint must be one of the caller's v2 endpoints, and an
// experiment or target is found only under its own endpoint and experiment: anything else is the 404 of an absent id.
import type { DedicatedEndpoint } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Db, Tx } from '../../db/index.ts';
import { checkProject, owned } from '../../http/scope.ts';

type PathCtx = { params: { projectId: string; endpointId: string }; identity: { projectId: string } };

export function endpointOf(db: Db | Tx, ctx: PathCtx): Promise<DedicatedEndpoint> {
  const id = ctx.params.endpointId;
  return owned(db.dedicatedEndpoint, checkProject(ctx), { id }, { what: 'endpoint', id, param: 'endpointId' });
}

/** The ids of the endpoint's deployments. */
export async function deploymentIds(db: Db | Tx, endpointId: string): Promise<Set<string>> {
  return new Set((await db.deployment.findMany({ where: { endpointId }, select: { id: true } })).map((d) => d.id));
}

export const abExperimentOf = (db: Db | Tx, e: DedicatedEndpoint, id: string) =>
  owned(db.abExperiment, e.projectId, { id, endpointId: e.id }, { what: 'A/B experiment', id, param: 'id' });

export const shadowExperimentOf = (db: Db | Tx, e: DedicatedEndpoint, id: string, param: string) =>
  owned(db.shadowExperiment, e.projectId, { id, endpointId: e.id }, { what: 'shadow experiment', id, param });

export const targetsOf = (db: Db | Tx, experimentId: string) => db.shadowTarget.findMany({ where: { experimentId }, orderBy: { id: 'asc' } });
