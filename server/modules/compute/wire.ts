// Module `compute`: rows -> wire shapes (clusters with hosts and VMs, instances, passive health-check alerts,
// remediations).
import type {
  Cluster,
  ClusterAddOn,
  ClusterSharedVolume,
  ComputeHost,
  ComputeInstance,
  ComputeVm,
  PassiveHealthCheckAlert,
  Remediation,
} from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire as Out } from '../types.ts';
import { bill, type Reservation } from './billing.ts';
import { type ClusterPhase, nodePhases, type PhaseTransition } from './phases.ts';

const opt = <K extends string, V>(key: K, value: V | null | undefined) => (value === null || value === undefined ? {} : ({ [key]: value } as { [P in K]: V }));

const transitions = <P extends string>(phases: PhaseTransition<P>[]) => phases.map((p) => ({ phase: p.phase, transition_time: iso(p.at) }));

const workerNode = (vm: ComputeVm, host: ComputeHost | undefined, instance: ComputeInstance | undefined): Out<'ClusterWorkerNode'> => ({
  node_id: vm.name,
  instance_id: vm.instanceId,
  host_name: host?.name ?? '',
  num_gpus: instance?.numGpus ?? 0,
  num_cpu_cores: instance?.numCpuCores ?? 0,
  memory_gib: instance?.memoryGib ?? 0,
  networks: [],
  phase_transitions: transitions(nodePhases(vm.phaseTransitions)),
  status: vm.deletedAt !== null ? 'Deleted' : instance?.status === 'REMEDIATING' ? 'Remediating' : 'Running',
  boot_count: vm.bootCount,
  created_at: iso(vm.createdAt),
  last_boot_at: iso(vm.lastBootAt),
  ...opt('deleted_at', vm.deletedAt !== null ? iso(vm.deletedAt) : null),
});

/** What a cluster made through the API keeps of its request (Cluster.options). */
export interface ClusterOptions {
  duration_days?: number;
  reservation_start_time?: string;
  reservation_end_time?: string;
  install_traefik?: boolean;
  slurm_shm_size_gib?: number;
  slurm_image?: string;
  oidc_config?: Out<'OidcConfig'>;
  cluster_config?: Out<'ClusterConfig'>;
  acceptance_tests_params?: Out<'AcceptanceTestsParams'>;
  nvidia_version_id?: string;
  num_preemptible_gpus?: number;
}

export const reservationsOf = (c: Cluster): Reservation[] =>
  c.reservations ? (JSON.parse(c.reservations) as Reservation[]) : [{ at: Number(c.createdAt), gpus: c.numReservedGpus }];

/** An add-on is enabled unless its config says `enabled: false`. */
export const addOnEnabled = (a: ClusterAddOn) => (JSON.parse(a.config) as Record<string, { enabled?: boolean }>)[a.addOnType]?.enabled !== false;

export const addOnWire = (a: ClusterAddOn): Out<'ClusterAddOn'> => ({
  name: a.name,
  add_on_type: a.addOnType,
  config: JSON.parse(a.config) as Out<'AddOnConfig'>,
  state: { [a.addOnType]: {} },
});

export const sharedVolumeWire = (v: ClusterSharedVolume): Out<'SharedVolume'> => ({
  volume_id: v.id,
  volume_name: v.name,
  size_tib: v.sizeTib,
  status: v.status as Out<'SharedVolume'>['status'],
  region: v.region,
  is_lifecycle_independent: v.lifecycleIndependent,
  cluster_id: v.clusterId,
  created_at: iso(v.createdAt),
});

/** `phases`: the cluster's phase history (phases.ts). What the platform has and this one does not model is empty or 0. */
export function clusterWire(
  c: Cluster,
  parts: { hosts: ComputeHost[]; instances: ComputeInstance[]; vms: ComputeVm[]; volumes: ClusterSharedVolume[]; addOns: ClusterAddOn[] },
  phases: PhaseTransition<ClusterPhase>[],
  now: bigint,
): Out<'Cluster'> {
  const { hosts, instances, vms } = parts;
  const hostById = new Map(hosts.map((h) => [h.id, h]));
  const instanceById = new Map(instances.map((i) => [i.id, i]));
  const live = vms.filter((v) => v.deletedAt === null);
  const o = JSON.parse(c.options) as ClusterOptions;
  const end = c.deletedAt ?? now;
  return {
    cluster_id: c.id,
    cluster_name: c.name,
    project_id: c.projectId,
    region: c.region,
    cluster_type: c.clusterType as Out<'Cluster'>['cluster_type'],
    gpu_type: c.gpuType as Out<'Cluster'>['gpu_type'],
    status: c.state === 'Ready' && hosts.some((h) => h.cordoned) ? 'Degraded' : (c.state as Out<'Cluster'>['status']),
    num_gpus: instances.filter((i) => i.vmId !== null).reduce((n, i) => n + i.numGpus, 0),
    created_at: iso(c.createdAt),
    ...opt('duration_hours', o.duration_days !== undefined ? o.duration_days * 24 : null),
    ...opt('reservation_start_time', o.reservation_start_time),
    ...opt('reservation_end_time', o.reservation_end_time),
    ...opt('install_traefik', o.install_traefik),
    ...opt('slurm_shm_size_gib', o.slurm_shm_size_gib),
    ...opt('oidc_config', o.oidc_config),
    ...opt('cluster_config', o.cluster_config),
    ...opt('first_ready_at', c.firstReadyAt !== null ? iso(c.firstReadyAt) : c.phases ? null : iso(c.createdAt)),
    hosts: hosts.map((h) => ({
      host_id: h.id,
      host_name: h.name,
      cordoned: h.cordoned,
      num_gpus: h.numGpus,
      vm_capacity: h.vmCapacity,
      vm_count: live.filter((v) => v.hostId === h.id).length,
    })),
    gpu_worker_nodes: live.map((v) => workerNode(v, hostById.get(v.hostId), instanceById.get(v.instanceId))),
    deleted_gpu_worker_nodes: vms.filter((v) => v.deletedAt !== null).map((v) => workerNode(v, hostById.get(v.hostId), instanceById.get(v.instanceId))),
    cuda_version: c.cudaVersion,
    nvidia_driver_version: c.nvidiaDriverVersion,
    volumes: parts.volumes.map((v) => ({ volume_id: v.id, volume_name: v.name, size_tib: v.sizeTib, status: v.status as Out<'SharedVolume'>['status'] })),
    control_plane_nodes: [],
    kube_config: '',
    num_cpu_workers: 0,
    phase_transitions: transitions(phases),
    desired_preemptible_gpus: o.num_preemptible_gpus ?? 0,
    allocated_preemptible_gpus: 0,
    num_capacity_pool_gpus: 0,
    num_reserved_gpus: c.numReservedGpus,
    billing_type: c.billingType as Out<'Cluster'>['billing_type'],
    add_ons: parts.addOns.filter(addOnEnabled).map(addOnWire),
    billing: {
      ...bill({
        gpuType: c.gpuType,
        billingType: c.billingType,
        createdAt: Number(c.createdAt),
        end: Number(end),
        reservations: reservationsOf(c),
        vms: vms.map((v) => ({
          from: Number(v.createdAt),
          to: v.deletedAt === null ? null : Number(v.deletedAt),
          gpus: instanceById.get(v.instanceId)?.numGpus ?? 0,
        })),
      }),
      as_of: iso(end),
    },
  };
}

export const clusterInstanceWire = (i: ComputeInstance, vm: ComputeVm | undefined, host: ComputeHost | undefined): Out<'ClusterInstance'> => ({
  instance_id: i.id,
  instance_name: i.name,
  cluster_id: i.clusterId,
  status: i.status as Out<'ClusterInstance'>['status'],
  node_id: vm?.name ?? null,
  host_id: host?.id ?? null,
  host_name: host?.name ?? null,
  num_gpus: i.numGpus,
  boot_count: vm?.bootCount ?? 0,
  update_time: iso(i.updatedAt),
});

export const alertWire = (a: PassiveHealthCheckAlert): Out<'PassiveHealthCheckAlert'> => ({
  passive_health_check_alert_id: a.id,
  cluster_id: a.clusterId,
  target_vm: a.targetVm,
  alert_name: a.alertName,
  annotations: JSON.parse(a.annotations) as Record<string, string>,
  severity: a.severity as Out<'PassiveHealthCheckAlert'>['severity'],
  started_at: iso(a.startedAt),
  instance_id: a.instanceId,
  ...opt('resolved_at', a.resolvedAt !== null ? iso(a.resolvedAt) : null),
  ...opt('node_remediation_intent_id', a.remediationId),
});

export const remediationWire = (r: Remediation, instanceName: string | undefined, alerts: PassiveHealthCheckAlert[]): Out<'Remediation'> => ({
  id: r.id,
  cluster_id: r.clusterId,
  instance_id: r.instanceId,
  mode: r.mode as Out<'Remediation'>['mode'],
  trigger: r.trigger as Out<'Remediation'>['trigger'],
  state: r.state as Out<'Remediation'>['state'],
  ...opt('reason', r.reason),
  ...opt('passive_health_check_event_id', r.passiveHealthCheckEventId),
  ...opt('requested_by', r.requestedBy),
  create_time: iso(r.createTime),
  ...opt('reviewed_by', r.reviewedBy),
  ...opt('review_time', r.reviewTime !== null ? iso(r.reviewTime) : null),
  ...opt('review_comment', r.reviewComment),
  ...opt('start_time', r.startTime !== null ? iso(r.startTime) : null),
  ...opt('end_time', r.endTime !== null ? iso(r.endTime) : null),
  ...opt('error_message', r.errorMessage),
  update_time: iso(r.updateTime),
  ...opt('instance_name', instanceName),
  linked_alerts: alerts.map(alertWire),
});
