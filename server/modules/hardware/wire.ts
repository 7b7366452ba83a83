// Module `hardware`: rows -> wire shapes.
import type { Hardware } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';

export type Availability = NonNullable<Wire<'Hardware'>['availability']>['status'];

export function hardwareWire(h: Hardware, availability?: Availability): Wire<'Hardware'> {
  return {
    object: 'hardware',
    id: h.id,
    pricing: { cents_per_minute: h.centsPerMinute },
    specs: { gpu_type: h.gpuType, gpu_link: h.gpuLink, gpu_memory: h.gpuMemory, gpu_count: h.gpuCount },
    updated_at: iso(h.updatedAt),
    ...(availability ? { availability: { status: availability } } : {}),
  };
}
