// v1 endpoint rows. Nothing creates them through the API (v1 is retired): the catalogue seed does, for the default
// project, and the tests do, through this same function. New rows are named `<model>-<hash>` like the platform's.
import { randomBytes, randomUUID } from 'node:crypto';
import type { V1Endpoint } from '../../../generated/prisma/sqlite/client/client.ts';
import { type Clock, instant } from '../../core/clock.ts';
import { apiError, badRequest, idTaken } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { owned } from '../../http/scope.ts';
import { reserve } from '../hardware/index.ts';
import { findModel } from '../models/index.ts';
import type { FixtureSection } from '../types.ts';
import type { V1State } from './machine.ts';

export const V1_OWNER = 'v1_endpoint';

/** Replicas a running v1 endpoint runs: its minimum, and at least one. */
export const v1Replicas = (e: { minReplicas: number }) => Math.max(e.minReplicas, 1);

export interface V1EndpointSpec {
  /** Absent: `endpoint-<uuid>`, as the platform's ids are. */
  id?: string;
  /** Absent: named as the platform names v1 endpoints (`newV1EndpointName`). */
  name?: string;
  displayName: string;
  model: string;
  hardware: string;
  minReplicas: number;
  maxReplicas: number;
  state: V1State;
  inactiveTimeout: number | null;
}

/**
 * A new v1 endpoint's name, as the public platform names them (`<user>/<model>-<hash>` on the wire, the project's
 * slug being the user): the model's name (the last segment of its id) and 6 random hex characters.
 */
export const newV1EndpointName = (model: string) => `${model.split('/').at(-1)}-${randomBytes(3).toString('hex')}`;

/** A name no endpoint of the project (v1 or v2: both answer at `<project_slug>/<name>`) has yet. */
async function freeName(tx: Tx, projectId: string, model: string): Promise<string> {
  for (;;) {
    const name = newV1EndpointName(model);
    const [v1, v2] = await Promise.all([
      tx.v1Endpoint.findFirst({ where: { projectId, name } }),
      tx.dedicatedEndpoint.findFirst({ where: { projectId, name } }),
    ]);
    if (!v1 && !v2) return name;
  }
}

/** Creates a v1 endpoint; a STARTED one holds its replicas' hardware reservations from now on. */
export async function createV1Endpoint(tx: Tx, clock: Clock, projectId: string, e: V1EndpointSpec): Promise<V1Endpoint> {
  const now = instant(clock);
  const row = await tx.v1Endpoint.create({
    data: {
      id: e.id ?? `endpoint-${randomUUID()}`,
      projectId,
      name: e.name ?? (await freeName(tx, projectId, e.model)),
      displayName: e.displayName,
      modelId: e.model,
      hardwareId: e.hardware,
      minReplicas: e.minReplicas,
      maxReplicas: e.maxReplicas,
      state: e.state,
      inactiveTimeout: e.inactiveTimeout,
      createdAt: now,
      updatedAt: now,
    },
  });
  if (e.state === 'STARTED') await reserve(tx, clock, { projectId, hardwareId: e.hardware, replicas: v1Replicas(e), ownerKind: V1_OWNER, ownerId: row.id });
  return row;
}

export function findV1Endpoint(db: Db | Tx, projectId: string, id: string): Promise<V1Endpoint> {
  return owned(db.v1Endpoint, projectId, { id }, { what: 'endpoint', id, param: 'endpointId' });
}

/** A fixture's v1 endpoint (the Control tag's applyFixtures): its model and hardware must be in the catalogue. */
export async function seedV1Endpoint(tx: Tx, clock: Clock, projectId: string, e: Omit<V1EndpointSpec, 'name'>): Promise<V1Endpoint> {
  if (!(await findModel(tx, projectId, e.model))) throw apiError(404, 'model_not_found', `No model '${e.model}' was found.`, 'model');
  if (!(await tx.hardware.findUnique({ where: { id: e.hardware } })))
    throw apiError(404, 'hardware_not_found', `No hardware configuration '${e.hardware}' was found.`, 'hardware');
  if (e.maxReplicas < e.minReplicas) throw badRequest(`max_replicas (${e.maxReplicas}) is below min_replicas (${e.minReplicas}).`, 'max_replicas');
  return createV1Endpoint(tx, clock, projectId, e);
}

/** A fixtures document's v1 endpoints (the Control tag's applyFixtures). */
export const v1EndpointsSection: FixtureSection<'v1_endpoints'> = {
  order: 5,
  async fill({ tx, services, project }, endpoint) {
    if (endpoint.id && (await tx.v1Endpoint.findUnique({ where: { id: endpoint.id } }))) throw idTaken('v1 endpoint', endpoint.id, 'id');
    const made = await seedV1Endpoint(tx, services.clock, project.id, {
      id: endpoint.id,
      displayName: endpoint.display_name,
      model: endpoint.model,
      hardware: endpoint.hardware,
      minReplicas: endpoint.min_replicas ?? 1,
      maxReplicas: endpoint.max_replicas ?? 1,
      state: endpoint.state ?? 'STARTED',
      inactiveTimeout: endpoint.inactive_timeout ?? null,
    });
    return { ids: { v1_endpoints: [made.id] } };
  },
};
