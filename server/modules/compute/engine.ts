// The cluster engine: what a remediation's mode does to an instance. The local engine is deterministic:
// - VM_ONLY deletes the VM and provisions a new one on any available host (not cordoned, with a free VM slot; the
//   instance's own host counts, with the slot its old VM frees; most free slots first, then host name);
// - HOST_AWARE does the same on a host other than the instance's own (the runner has cordoned that one);
// - EVICT_WITHOUT_REPLACEMENT deletes the VM and leaves the instance EVICTED; REBOOT_VM reboots the VM in place;
// - every remediation of an instance marked unrecoverable fails, whatever the mode.
export type RemediationMode =
  | 'REMEDIATION_MODE_VM_ONLY'
  | 'REMEDIATION_MODE_HOST_AWARE'
  | 'REMEDIATION_MODE_EVICT_WITHOUT_REPLACEMENT'
  | 'REMEDIATION_MODE_REBOOT_VM';

export interface HostSnapshot {
  id: string;
  name: string;
  cordoned: boolean;
  vmCapacity: number;
  vmCount: number;
}

export type RemediationPlan = { kind: 'replace'; hostId: string } | { kind: 'evict' } | { kind: 'reboot' } | { kind: 'fail'; message: string };

export interface ClusterEngine {
  plan(input: { mode: string; instanceName: string; unrecoverable: boolean; vmHostId: string | null; hosts: HostSnapshot[] }): RemediationPlan;
}

export const localClusterEngine: ClusterEngine = {
  plan({ mode, instanceName, unrecoverable, vmHostId, hosts }) {
    if (unrecoverable) return { kind: 'fail', message: `Instance ${instanceName}'s VM does not respond to the control plane (marked unrecoverable).` };
    // Free VM slots per host, counting the slot the instance's own VM frees when it is deleted.
    const available = (exclude: string | null) =>
      hosts
        .filter((h) => !h.cordoned && h.id !== exclude)
        .map((h) => ({ h, free: h.vmCapacity - h.vmCount + (h.id === vmHostId ? 1 : 0) }))
        .filter((x) => x.free > 0)
        .sort((a, b) => b.free - a.free || a.h.name.localeCompare(b.h.name));
    switch (mode) {
      case 'REMEDIATION_MODE_REBOOT_VM':
        return vmHostId ? { kind: 'reboot' } : { kind: 'fail', message: `Instance ${instanceName} has no VM to reboot.` };
      case 'REMEDIATION_MODE_EVICT_WITHOUT_REPLACEMENT':
        return vmHostId ? { kind: 'evict' } : { kind: 'fail', message: `Instance ${instanceName} has no VM to evict.` };
      case 'REMEDIATION_MODE_VM_ONLY': {
        const [best] = available(null);
        return best ? { kind: 'replace', hostId: best.h.id } : { kind: 'fail', message: 'No available host has room for a new VM.' };
      }
      case 'REMEDIATION_MODE_HOST_AWARE': {
        const [best] = available(vmHostId);
        return best ? { kind: 'replace', hostId: best.h.id } : { kind: 'fail', message: `No host other than the instance's own has room for a new VM.` };
      }
      default:
        return { kind: 'fail', message: `Mode ${mode} is not supported.` };
    }
  },
};
