// Wire shapes of tags Endpoints (v1 dedicated endpoints, seed 7.4) and Adapters (seed 2.9).
import type { Model, V1Endpoint } from '../../generated/prisma/sqlite/client/client.ts';
import type { Schemas } from './types.ts';

/** `<project_slug>/<endpoint_name>`: an endpoint's name on the wire and its inference `model` value. */
export const qualifiedName = (projectSlug: string, name: string) => `${projectSlug}/${name}`;

export const endpointsWire = {
  v1Endpoint: (e: V1Endpoint, projectSlug: string): Schemas['V1Endpoint'] => ({
    object: 'endpoint',
    id: e.id,
    name: qualifiedName(projectSlug, e.name),
    display_name: e.displayName,
    model: e.modelId,
    hardware: e.hardwareId,
    type: 'dedicated',
    owner: projectSlug,
    state: e.state as Schemas['V1State'],
    autoscaling: { min_replicas: e.minReplicas, max_replicas: e.maxReplicas },
    inactive_timeout: e.inactiveTimeout,
    created_at: e.createdAt.toISOString(),
  }),

  v1EndpointListItem: (e: V1Endpoint, projectSlug: string): Schemas['V1EndpointListItem'] => ({
    object: 'endpoint',
    id: e.id,
    name: qualifiedName(projectSlug, e.name),
    model: e.modelId,
    type: 'dedicated',
    owner: projectSlug,
    state: e.state as Schemas['V1State'],
    created_at: e.createdAt.toISOString(),
  }),

  v1EndpointUsage: (
    e: V1Endpoint,
    centsPerMinute: number,
    runningReplicas: number,
    u: { replicaMinutes: number; cents: number },
  ): Schemas['V1EndpointUsage'] => ({
    object: 'endpoint.usage',
    endpoint_id: e.id,
    hardware: e.hardwareId,
    cents_per_minute: centsPerMinute,
    running_replicas: runningReplicas,
    replica_minutes: u.replicaMinutes,
    cost_cents: u.cents,
  }),

  adapterBinding: (endpointName: string, adapter: Model): Schemas['AdapterBinding'] => ({
    model_id: `${endpointName}:${adapter.name}`,
    adapter_name: adapter.name,
    endpoint_name: endpointName,
  }),
};
