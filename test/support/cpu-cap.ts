// A CPU cap for one process, through a cgroup of its own (v2 `cpu.max`, else v1 `cpu.cfs_quota_us`): the queue
// bench gives each server process the same fixed share of a core, as if each ran on a machine of its own, so that
// what "two processes against one" measures is whether the second process adds its capacity (no contention in the
// claim path), not how many cores this machine has left beside PostgreSQL and the load drivers.
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const PERIOD_US = 100_000;
const ROOTS = [
  { dir: '/sys/fs/cgroup', file: 'cpu.max', value: (quota: number) => `${quota} ${PERIOD_US}` },
  { dir: '/sys/fs/cgroup/cpu', file: 'cpu.cfs_quota_us', value: (quota: number) => String(quota) },
];

export interface CpuCap {
  /** Removes the cgroup (once the process has exited). */
  release(): void;
}

/** Caps process `pid` at `cores` of CPU; null where this machine lets no cgroup be made (not root, no controller). */
export function capCpu(pid: number, cores: number): CpuCap | null {
  for (const root of ROOTS) {
    if (!existsSync(join(root.dir, root.file === 'cpu.max' ? 'cgroup.subtree_control' : 'cpu.cfs_quota_us'))) continue;
    const dir = join(root.dir, `platform-bench-${pid}`);
    try {
      mkdirSync(dir);
      if (root.file === 'cpu.cfs_quota_us') writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
      writeFileSync(join(dir, root.file), root.value(Math.round(cores * PERIOD_US)));
      writeFileSync(join(dir, 'cgroup.procs'), String(pid));
      return {
        release: () => {
          try {
            rmdirSync(dir);
          } catch {
            // Still has a process: the caller released it early; the kernel frees it when it empties.
          }
        },
      };
    } catch {
      try {
        rmdirSync(dir);
      } catch {
        // Never made.
      }
    }
  }
  return null;
}
