// v1 endpoint rows. Nothing creates them through the API (v1 is retired): the catalogue seed does, for the default
// project, and the tests do, through this same function.
import { randomUUID } from 'node:crypto';
import type { V1Endpoint } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant, type Clock } from '../../core/clock.ts';
import type { Db, Tx } from '../../db/index.ts';
import { owned } from '../../http/scope.ts';
import { reserve } from '../hardware/capacity.ts';
import type { V1State } from './machine.ts';

export const V1_OWNER = 'v1_endpoint';

/** Replicas a running v1 endpoint runs: its minimum, and at least one. */
export const v1Replicas = (e: { minReplicas: number }) => Math.max(e.minReplicas, 1);

export interface V1EndpointSpec {
  name: string;
  displayName: string;
  model: string;
  hardware: string;
  minReplicas: number;
  maxReplicas: number;
  state: V1State;
  inactiveTimeout: number | null;
}

/** Creates a v1 endpoint; a STARTED one holds its replicas' hardware reservations from now on. */
export async function createV1Endpoint(tx: Tx, clock: Clock, projectId: string, e: V1EndpointSpec): Promise<V1Endpoint> {
  const now = instant(clock);
  const row = await tx.v1Endpoint.create({
    data: {
      id: `endpoint-${randomUUID()}`,
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
  if (e.state === 'STARTED') await reserve(tx, clock, { projectId, hardwareId: e.hardware, replicas: v1Replicas(e), ownerKind: V1_OWNER, ownerId: row.id });
  return row;
}

export function findV1Endpoint(db: Db | Tx, projectId: string, id: string): Promise<V1Endpoint> {
  return owned(db.v1Endpoint, projectId, { id }, { what: 'endpoint', id, param: 'endpointId' });
}
