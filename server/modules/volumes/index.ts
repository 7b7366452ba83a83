// Module `volumes` (spec/tags/volumes.yaml): read-only storage volumes with versioned content; v2 deployments mount
// them (rows.ts `attachVolumes`), and a mounted volume cannot be deleted.
import { instant } from '../../core/clock.ts';
import type { ModuleDescriptor, SeedContext } from '../types.ts';
import { createVolume, deleteVolume, getVolume, listVolumes, updateVolume } from './handlers.ts';
import { createVolumeRow } from './rows.ts';
import data from './seed.json' with { type: 'json' };

// What this module offers the others.
export { attachVolumes, detachVolumes, type MountRequest, mountVolumes, volumeNames } from './rows.ts';

/** The default project's volumes (seed.json). */
async function seed({ tx, clock, projectId }: SeedContext): Promise<void> {
  for (const v of data.volumes) await createVolumeRow(tx, instant(clock), projectId, v);
}

export const volumes: ModuleDescriptor<'volumes'> = {
  name: 'volumes',
  handlers: { listVolumes, createVolume, getVolume, updateVolume, deleteVolume },
  seed,
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
