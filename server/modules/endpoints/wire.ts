// Module `endpoints`: rows -> wire shapes of v1 dedicated endpoints.
import type { V1Endpoint } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';

/** `<project_slug>/<endpoint_name>`: an endpoint's name on the wire and its inference `model` value. */
export const qualifiedName = (projectSlug: string, name: string) => `${projectSlug}/${name}`;

export function v1EndpointWire(e: V1Endpoint, projectSlug: string): Wire<'V1Endpoint'> {
  return {
    object: 'endpoint',
    id: e.id,
    name: qualifiedName(projectSlug, e.name),
    display_name: e.displayName,
    model: e.modelId,
    hardware: e.hardwareId,
    type: 'dedicated',
    owner: projectSlug,
    state: e.state as Wire<'V1State'>,
    autoscaling: { min_replicas: e.minReplicas, max_replicas: e.maxReplicas },
    inactive_timeout: e.inactiveTimeout,
    created_at: iso(e.createdAt),
  };
}

export function v1EndpointListItemWire(e: V1Endpoint, projectSlug: string): Wire<'V1EndpointListItem'> {
  return {
    object: 'endpoint',
    id: e.id,
    name: qualifiedName(projectSlug, e.name),
    model: e.modelId,
    type: 'dedicated',
    owner: projectSlug,
    state: e.state as Wire<'V1State'>,
    created_at: iso(e.createdAt),
  };
}

export function v1EndpointUsageWire(
  e: V1Endpoint,
  centsPerMinute: number,
  runningReplicas: number,
  u: { replicaMinutes: number; cents: number },
): Wire<'V1EndpointUsage'> {
  return {
    object: 'endpoint.usage',
    endpoint_id: e.id,
    hardware: e.hardwareId,
    cents_per_minute: centsPerMinute,
    running_replicas: runningReplicas,
    replica_minutes: u.replicaMinutes,
    cost_cents: u.cents,
  };
}
