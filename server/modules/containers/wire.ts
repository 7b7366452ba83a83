// Module `containers`: rows -> wire shapes (the platform's DeploymentResponseItem). References are shown by the
// current names of their volumes and secrets; a secret's value is never read.
import type { ContainerDeployment } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';
import { replicaId } from './logs.ts';
import type { Spec } from './rules.ts';

export interface Names {
  volumes: Map<string, string>;
  secrets: Map<string, string>;
}

type ReplicaEvent = Wire<'ContainerReplicaEvent'>;

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

/** One entry per replica this server keeps: the ready ones, and those a rollout or scaling under way scheduled. */
function replicaEvents(d: ContainerDeployment, spec: Spec): Record<string, ReplicaEvent> {
  const events: Record<string, ReplicaEvent> = {};
  const preload = spec.volumes.length > 0;
  for (const n of range(1, d.readyReplicas)) {
    events[replicaId(d.id, d.readyRevision, n)] = {
      image: spec.ready_image ?? d.image,
      revision_id: String(d.readyRevision),
      replica_status: 'Ready',
      replica_status_reason: 'Simulated',
      replica_status_message: "Ready on this server's records: no container was started (no container runs on this server).",
      ...(d.readySince !== null ? { replica_ready_since: iso(d.readySince) } : {}),
      ...(preload ? { volume_preload_status: 'Completed' as const, ...(d.readySince !== null ? { volume_preload_completed_at: iso(d.readySince) } : {}) } : {}),
    };
  }
  const scheduling = d.status === 'Updating' ? range(1, d.desiredReplicas) : d.status === 'Scaling' ? range(d.readyReplicas + 1, d.desiredReplicas) : [];
  for (const n of scheduling) {
    events[replicaId(d.id, d.revision, n)] = {
      image: d.image,
      revision_id: String(d.revision),
      replica_status: 'Scheduled',
      replica_status_reason: d.status === 'Updating' ? 'RolloutInProgress' : 'ScalingInProgress',
      replica_status_message: `Scheduled for revision ${d.revision}; ready when the ${d.status === 'Updating' ? 'rollout' : 'scaling'} step completes.`,
      ...(preload ? { volume_preload_status: 'Pending' as const, volume_preload_started_at: iso(d.changedAt) } : {}),
    };
  }
  return events;
}

export function containerDeploymentWire(d: ContainerDeployment, names: Names): Wire<'ContainerDeployment'> {
  const spec = JSON.parse(d.spec) as Spec;
  return {
    object: 'deployment',
    id: d.id,
    name: d.name,
    description: d.description,
    image: d.image,
    status: d.status as Wire<'ContainerDeployment'>['status'],
    gpu_type: spec.gpu_type,
    gpu_count: spec.gpu_count,
    cpu: spec.cpu,
    memory: spec.memory,
    storage: spec.storage,
    min_replicas: d.minReplicas,
    max_replicas: d.maxReplicas,
    desired_replicas: d.desiredReplicas,
    ready_replicas: d.readyReplicas,
    ...(spec.autoscaling ? { autoscaling: spec.autoscaling } : {}),
    command: spec.command,
    args: spec.args,
    port: spec.port,
    health_check_path: spec.health_check_path,
    termination_grace_period_seconds: spec.termination_grace_period_seconds,
    environment_variables: spec.environment_variables.map((v) =>
      v.secretId ? { name: v.name, value_from_secret: names.secrets.get(v.secretId) ?? v.secretId } : { name: v.name, value: v.value ?? '' },
    ),
    volumes: spec.volumes.map((m) => ({ name: names.volumes.get(m.volumeId) ?? m.volumeId, mount_path: m.mount_path, version: m.version })),
    replica_events: replicaEvents(d, spec),
    created_at: iso(d.createdAt),
    updated_at: iso(d.updatedAt),
  };
}
