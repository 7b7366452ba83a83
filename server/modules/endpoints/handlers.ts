// Module `endpoints`: the retired first-generation dedicated endpoints. A running one serves and bills until
// stopped; none starts again (machine.ts).
import { instant } from '../../core/clock.ts';
import { apiError, badRequest } from '../../core/errors.ts';
import { release, reserveIfFree, usage } from '../hardware/index.ts';
import type { Context } from '../types.ts';
import { requestedEvent, v1Disabled, v1EndpointMachine } from './machine.ts';
import { findV1Endpoint, V1_OWNER, v1Replicas } from './rows.ts';
import { v1EndpointListItemWire, v1EndpointUsageWire, v1EndpointWire } from './wire.ts';

/** The largest count or number of minutes stored (a 32-bit integer): a larger one cannot be kept, so it is refused. */
const LARGEST = 2_147_483_647;

/** An update's `autoscaling` and `inactive_timeout` must be values an endpoint can have (the contract sets no bounds). */
function checkUpdate(body: Context<'updateEndpoint'>['body']): void {
  const a = body.autoscaling;
  if (a) {
    if (a.min_replicas < 0) throw badRequest("'min_replicas' must not be negative.", 'autoscaling.min_replicas', 'invalid_autoscaling');
    for (const field of ['min_replicas', 'max_replicas'] as const) {
      if (a[field] > LARGEST) throw badRequest(`'${field}' must be at most ${LARGEST}.`, `autoscaling.${field}`, 'invalid_autoscaling');
    }
  }
  const timeout = body.inactive_timeout;
  if (timeout !== undefined && timeout !== null && (timeout < 0 || timeout > LARGEST)) {
    throw badRequest(`'inactive_timeout' is a number of minutes from 0 (no timeout) to ${LARGEST}, or null.`, 'inactive_timeout', 'invalid_inactive_timeout');
  }
}

export async function listEndpoints({ db, query, identity }: Context<'listEndpoints'>) {
  const none = query.type === 'serverless' || query.usage_type === 'reserved';
  const rows = none ? [] : await db.prisma.v1Endpoint.findMany({ where: { projectId: identity.projectId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  return { object: 'list' as const, data: rows.map((e) => v1EndpointListItemWire(e, identity.projectSlug)) };
}

export async function createEndpoint(_ctx: Context<'createEndpoint'>): Promise<never> {
  throw v1Disabled();
}

export async function getEndpoint({ db, params, identity }: Context<'getEndpoint'>) {
  return v1EndpointWire(await findV1Endpoint(db.prisma, identity.projectId, params.endpointId), identity.projectSlug);
}

export async function updateEndpoint({ db, clock, params, body, identity }: Context<'updateEndpoint'>) {
  checkUpdate(body);
  const updated = await db.write(async (tx) => {
    const e = await findV1Endpoint(tx, identity.projectId, params.endpointId);
    const event = body.state === undefined ? null : requestedEvent(e.state, body.state);
    const to = event ? v1EndpointMachine.next(e.state, event) : e.state;
    const min = body.autoscaling?.min_replicas ?? e.minReplicas;
    const max = body.autoscaling?.max_replicas ?? e.maxReplicas;
    if (max < 1)
      throw badRequest("'max_replicas' must be at least 1; stop the endpoint with state STOPPED.", 'autoscaling.max_replicas', 'invalid_autoscaling');
    if (min > max) throw badRequest("'min_replicas' must not exceed 'max_replicas'.", 'autoscaling.min_replicas', 'invalid_autoscaling');

    if (e.state === 'STARTED' && to === 'STOPPED') await release(tx, clock, V1_OWNER, e.id);
    if (e.state === 'STARTED' && to === 'STARTED') {
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
        updatedAt: instant(clock),
      },
    });
  });
  return v1EndpointWire(updated, identity.projectSlug);
}

export async function deleteEndpoint({ db, clock, params, identity }: Context<'deleteEndpoint'>) {
  await db.write(async (tx) => {
    const e = await findV1Endpoint(tx, identity.projectId, params.endpointId);
    await release(tx, clock, V1_OWNER, e.id);
    await tx.adapterBinding.deleteMany({ where: { endpointId: e.id } });
    await tx.v1Endpoint.delete({ where: { id: e.id } });
  });
  return undefined;
}

export async function getEndpointUsage({ db, clock, params, identity }: Context<'getEndpointUsage'>) {
  const e = await findV1Endpoint(db.prisma, identity.projectId, params.endpointId);
  const [hardware, running, u] = await Promise.all([
    db.prisma.hardware.findUnique({ where: { id: e.hardwareId } }),
    db.prisma.hardwareReservation.count({ where: { ownerKind: V1_OWNER, ownerId: e.id, endedAt: null } }),
    usage(db.prisma, clock, V1_OWNER, e.id),
  ]);
  return v1EndpointUsageWire(e, hardware?.centsPerMinute ?? 0, running, u);
}
