// Module `hardware` (spec/tags/hardware.yaml): the hardware configurations dedicated replicas run on, their
// capacity (capacity.ts: reservations held by running replicas, which is also per-minute billing), availability
// (v1) and headroom (the v2 inference instance types).
import { instant } from '../../core/clock.ts';
import type { ModuleDescriptor, SeedContext } from '../types.ts';
import { getInferenceInstanceType, listHardware, listInferenceInstanceTypes } from './handlers.ts';
import data from './seed.json' with { type: 'json' };

// What this module offers the others.
export { canRun, REGION, release, reserve, reserveIfFree, usage } from './capacity.ts';

/** The platform's hardware configurations (seed.json). */
async function seed({ tx, clock }: SeedContext): Promise<void> {
  for (const h of data.hardware) await tx.hardware.create({ data: { ...h, updatedAt: instant(clock) } });
}

export const hardware: ModuleDescriptor<'hardware'> = {
  name: 'hardware',
  handlers: { listHardware, listInferenceInstanceTypes, getInferenceInstanceType },
  seed,
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
