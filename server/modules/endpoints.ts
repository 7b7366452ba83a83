// Tag Endpoints (seed 7.4, 9): the retired first-generation dedicated endpoints. Only the seed creates them; a
// running one serves and bills until stopped, and nothing starts again on v1 (the remedy is v2).
import { randomUUID } from 'node:crypto';
import type { V1Endpoint } from '../../generated/prisma/sqlite/client/client.ts';
import { release, reserve, reserveIfFree, usage } from '../capacity.ts';
import type { Db, Tx } from '../db/index.ts';
import { apiError, badRequest, conflict, forbidden } from '../errors.ts';
import type { ModuleHandlers } from '../handlers.ts';
import type { SeedContext } from '../seed.ts';
import { seedData } from '../seed.ts';
import { wire } from '../wire/index.ts';
import { owned } from '../scope.ts';

export const V1_OWNER = 'v1_endpoint';

export type V1State = 'PENDING' | 'STARTING' | 'STARTED' | 'STOPPING' | 'STOPPED' | 'ERROR';
type Requested = 'STARTED' | 'STOPPED';

/** The one transition table of v1 endpoints: which requested state each state may move to. */
export const v1Transitions: Record<V1State, Partial<Record<Requested, V1State>>> = {
  PENDING: {},
  STARTING: {},
  STARTED: { STOPPED: 'STOPPED' },
  STOPPING: {},
  STOPPED: {},
  ERROR: { STOPPED: 'STOPPED' },
};

export const v1Disabled = () =>
  forbidden(
    'Creating or restarting v1 dedicated endpoints is no longer possible. This is not a permissions problem: deploy on v2 ' +
      'instead, e.g. POST /v2/projects/{projectId}/deploy with an endpoint name, a model, a config and replica counts.',
    'endpoints_v1_create_access_disabled',
  );

/** The state a PATCH asking for `requested` leads to (unchanged when it names the current state), or the refusal. */
export function v1Transition(from: V1State, requested: Requested): V1State {
  if (from === requested) return from;
  const to = v1Transitions[from][requested];
  if (to) return to;
  if (requested === 'STARTED') throw v1Disabled();
  throw conflict(`A v1 endpoint in state ${from} cannot move to ${requested}.`, 'invalid_state_transition', 'state');
}

/** Replicas a running v1 endpoint runs: its minimum, and at least one. */
export const v1Replicas = (e: { minReplicas: number }) => Math.max(e.minReplicas, 1);

export async function findV1Endpoint(db: Db | Tx, projectId: string, id: string): Promise<V1Endpoint> {
  return owned(db.v1Endpoint, projectId, { id }, { what: 'endpoint', id, param: 'endpointId' });
}

interface EndpointSeed {
  v1Endpoints: Array<{
    name: string;
    displayName: string;
    model: string;
    hardware: string;
    minReplicas: number;
    maxReplicas: number;
    state: V1State;
    inactiveTimeout: number | null;
  }>;
}

/** Seeder: the default project's running and stopped v1 endpoints (prisma/seed/endpoints.json). */
export async function seedV1Endpoints({ tx, clock, projectId }: SeedContext): Promise<void> {
  const now = new Date(clock.now());
  for (const e of seedData<EndpointSeed>('endpoints').v1Endpoints) {
    // Tolerates a catalogue without the row (an area seeded later or trimmed): the endpoint is then left out.
    const [model, hardware] = await Promise.all([tx.model.findUnique({ where: { id: e.model } }), tx.hardware.findUnique({ where: { id: e.hardware } })]);
    if (!model || !hardware) continue;
    const id = `endpoint-${randomUUID()}`;
    await tx.v1Endpoint.create({
      data: {
        id,
        projectId,
        name: e.name,
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
    if (e.state === 'STARTED') await reserve(tx, clock, { projectId, hardwareId: e.hardware, replicas: v1Replicas(e), ownerKind: V1_OWNER, ownerId: id });
  }
}

export const endpointsHandlers = {
  listEndpoints: async ({ db, query, identity }) => {
    const none = query.type === 'serverless' || query.usage_type === 'reserved';
    const rows = none ? [] : await db.prisma.v1Endpoint.findMany({ where: { projectId: identity.projectId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    return { object: 'list', data: rows.map((e) => wire.v1EndpointListItem(e, identity.projectSlug)) };
  },

  createEndpoint: async () => {
    throw v1Disabled();
  },

  getEndpoint: async ({ db, params, identity }) => wire.v1Endpoint(await findV1Endpoint(db.prisma, identity.projectId, params.endpointId), identity.projectSlug),

  updateEndpoint: async ({ db, clock, params, body, identity }) => {
    const updated = await db.write(async (tx) => {
      const e = await findV1Endpoint(tx, identity.projectId, params.endpointId);
      const from = e.state as V1State;
      const to = body.state === undefined ? from : v1Transition(from, body.state);
      const min = body.autoscaling?.min_replicas ?? e.minReplicas;
      const max = body.autoscaling?.max_replicas ?? e.maxReplicas;
      if (max < 1) throw badRequest("'max_replicas' must be at least 1; stop the endpoint with state STOPPED.", 'autoscaling.max_replicas', 'invalid_autoscaling');
      if (min > max) throw badRequest("'min_replicas' must not exceed 'max_replicas'.", 'autoscaling.min_replicas', 'invalid_autoscaling');

      if (from === 'STARTED' && to === 'STOPPED') await release(tx, clock, V1_OWNER, e.id);
      if (from === 'STARTED' && to === 'STARTED') {
        // A running endpoint is resized at once: growing needs free GPUs on its hardware.
        const delta = v1Replicas({ minReplicas: min }) - v1Replicas(e);
        const grown = { projectId: e.projectId, hardwareId: e.hardwareId, replicas: delta, ownerKind: V1_OWNER, ownerId: e.id } as const;
        if (delta > 0 && !(await reserveIfFree(tx, clock, grown))) {
          throw apiError(409, 'insufficient_capacity', `Not enough free ${e.hardwareId} capacity for ${delta} more replica(s).`, 'autoscaling.min_replicas');
        }
        if (delta < 0) await release(tx, clock, V1_OWNER, e.id, -delta);
      }
      return tx.v1Endpoint.update({
        where: { id: e.id },
        data: {
          state: to,
          minReplicas: min,
          maxReplicas: max,
          displayName: body.display_name ?? e.displayName,
          inactiveTimeout: body.inactive_timeout === undefined ? e.inactiveTimeout : body.inactive_timeout,
          updatedAt: new Date(clock.now()),
        },
      });
    });
    return wire.v1Endpoint(updated, identity.projectSlug);
  },

  deleteEndpoint: async ({ db, clock, params, identity }) => {
    await db.write(async (tx) => {
      const e = await findV1Endpoint(tx, identity.projectId, params.endpointId);
      await release(tx, clock, V1_OWNER, e.id);
      await tx.adapterBinding.deleteMany({ where: { endpointId: e.id } });
      await tx.v1Endpoint.delete({ where: { id: e.id } });
    });
    return undefined;
  },

  getEndpointUsage: async ({ db, clock, params, identity }) => {
    const e = await findV1Endpoint(db.prisma, identity.projectId, params.endpointId);
    const [hardware, running, u] = await Promise.all([
      db.prisma.hardware.findUnique({ where: { id: e.hardwareId } }),
      db.prisma.hardwareReservation.count({ where: { ownerKind: V1_OWNER, ownerId: e.id, endedAt: null } }),
      usage(db.prisma, clock, V1_OWNER, e.id),
    ]);
    return wire.v1EndpointUsage(e, hardware?.centsPerMinute ?? 0, running, u);
  },
} satisfies ModuleHandlers;
