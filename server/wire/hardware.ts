// Wire shapes of tag Hardware (seed 2.6).
import type { Hardware } from '../../generated/prisma/sqlite/client/client.ts';
import type { Schemas } from './types.ts';

export type Availability = NonNullable<Schemas['Hardware']['availability']>['status'];

export const hardwareWire = {
  hardware: (h: Hardware, availability?: Availability): Schemas['Hardware'] => ({
    object: 'hardware',
    id: h.id,
    pricing: { cents_per_minute: h.centsPerMinute },
    specs: { gpu_type: h.gpuType, gpu_link: h.gpuLink, gpu_memory: h.gpuMemory, gpu_count: h.gpuCount },
    updated_at: h.updatedAt.toISOString(),
    ...(availability ? { availability: { status: availability } } : {}),
  }),
};
