// Phase histories of clusters and their VMs, in the platform's phase names, from what this platform records:
// - a VM boots and runs the instant it is provisioned or rebooted (the local engine has no boot time), so each of
//   those appends NODE_PHASE_BOOTING then NODE_PHASE_RUNNING at that instant to the VM's stored history;
// - a seeded cluster is ready when created (the seed creates it with its VMs running); one made through the API
//   records the phase of each state its machine enters; either is degraded from the first time a host is cordoned
//   (hosts are never uncordoned).
import type { Cluster, ComputeHost } from '../../../generated/prisma/sqlite/client/client.ts';

export type NodePhase = 'NODE_PHASE_BOOTING' | 'NODE_PHASE_RUNNING';
export type ClusterPhase =
  | 'CLUSTER_PHASE_WAITING_FOR_CONTROL_PLANE_NODES'
  | 'CLUSTER_PHASE_WAITING_FOR_DATA_PLANE_NODES'
  | 'CLUSTER_PHASE_INSTALLING_DRIVERS'
  | 'CLUSTER_PHASE_READY'
  | 'CLUSTER_PHASE_DEGRADED'
  | 'CLUSTER_PHASE_DELETING';

export interface PhaseTransition<P extends string> {
  phase: P;
  /** Unix milliseconds. */
  at: bigint;
}

/** A VM's stored history (the `phaseTransitions` column) after one more boot at `now`. */
export function afterBoot(stored: string, now: bigint): string {
  const history = JSON.parse(stored) as { phase: NodePhase; at: number }[];
  history.push({ phase: 'NODE_PHASE_BOOTING', at: Number(now) }, { phase: 'NODE_PHASE_RUNNING', at: Number(now) });
  return JSON.stringify(history);
}

/** A VM's stored history, read. */
export function nodePhases(stored: string): PhaseTransition<NodePhase>[] {
  return (JSON.parse(stored) as { phase: NodePhase; at: number }[]).map((p) => ({ phase: p.phase, at: BigInt(p.at) }));
}

/**
 * A cluster's history: the phases of the states it entered (`phases`, kept by its machine), or for a seeded cluster
 * ready since its creation; then degraded since its first host was cordoned, if one was.
 */
export function clusterPhases(cluster: Cluster, hosts: ComputeHost[]): PhaseTransition<ClusterPhase>[] {
  const phases: PhaseTransition<ClusterPhase>[] = cluster.phases
    ? (JSON.parse(cluster.phases) as { phase: ClusterPhase; at: number }[]).map((p) => ({ phase: p.phase, at: BigInt(p.at) }))
    : [{ phase: 'CLUSTER_PHASE_READY', at: cluster.createdAt }];
  const cordons = hosts.filter((h) => h.cordoned).map((h) => h.cordonedAt ?? cluster.createdAt);
  // biome-ignore lint/complexity/useMathMinMax: the instants are bigints, which Math.min does not take.
  if (cordons.length) phases.push({ phase: 'CLUSTER_PHASE_DEGRADED', at: cordons.reduce((a, b) => (b < a ? b : a)) });
  // In time order (a host cordoned before a later resize comes before the resize's phases); sort is stable.
  return phases.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}
