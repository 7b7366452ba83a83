// Module `compute`: rows -> wire shapes (clusters with hosts and VMs, instances, passive health-check alerts,
// remediations).
import type { Cluster, ComputeHost, ComputeInstance, ComputeVm, PassiveHealthCheckAlert, Remediation } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire as Out } from '../types.ts';
import { nodePhases, type PhaseTransition } from './phases.ts';

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

/** `phases`: the cluster's phase history (phases.ts). What the platform has and this one does not model is empty or 0. */
export function clusterWire(
  c: Cluster,
  hosts: ComputeHost[],
  instances: ComputeInstance[],
  vms: ComputeVm[],
  phases: PhaseTransition<'CLUSTER_PHASE_READY' | 'CLUSTER_PHASE_DEGRADED'>[],
): Out<'Cluster'> {
  const hostById = new Map(hosts.map((h) => [h.id, h]));
  const instanceById = new Map(instances.map((i) => [i.id, i]));
  const live = vms.filter((v) => v.deletedAt === null);
  return {
    cluster_id: c.id,
    cluster_name: c.name,
    project_id: c.projectId,
    region: c.region,
    cluster_type: c.clusterType as Out<'Cluster'>['cluster_type'],
    gpu_type: c.gpuType as Out<'Cluster'>['gpu_type'],
    status: hosts.some((h) => h.cordoned) ? 'Degraded' : 'Ready',
    num_gpus: instances.filter((i) => i.vmId !== null).reduce((n, i) => n + i.numGpus, 0),
    created_at: iso(c.createdAt),
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
    volumes: [],
    control_plane_nodes: [],
    kube_config: '',
    num_cpu_workers: 0,
    phase_transitions: transitions(phases),
    desired_preemptible_gpus: 0,
    allocated_preemptible_gpus: 0,
    num_capacity_pool_gpus: 0,
    num_reserved_gpus: c.numReservedGpus,
    billing_type: c.billingType as Out<'Cluster'>['billing_type'],
    add_ons: [],
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
