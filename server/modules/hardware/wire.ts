// Module `hardware`: rows -> wire shapes (v1 hardware, v2 inference instance types).
import type { Hardware } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';
import { headroomOf, REGION } from './capacity.ts';

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

/** `2x_nvidia_h100_80gb_sxm` -> `2x NVIDIA H100 80GB SXM`: the id's words, as a name. */
const nameOf = (id: string) =>
  id
    .split('_')
    .map((w, i) => (i === 0 ? w : w.toUpperCase()))
    .join(' ');

export function instanceTypeWire(h: Hardware, gpusInUse: number): Wire<'InferenceInstanceType'> {
  const gpus = h.gpuCount === 1 ? '1 GPU' : `${h.gpuCount} GPUs`;
  return {
    id: h.id,
    name: nameOf(h.id),
    description: `${gpus} ${h.gpuType} (${h.gpuMemory} GiB each, ${h.gpuLink} interconnect) per replica.`,
    gpuType: h.gpuType,
    gpuCount: h.gpuCount,
    gpuMemoryGib: h.gpuMemory,
    // Billing runs on the exact per-minute price; the contract's hourly price is whole cents.
    priceCentsPerHour: Math.round(h.centsPerMinute * 60),
    regions: [{ name: REGION, headroom: { value: headroomOf(h, gpusInUse), relation: 'RELATION_EQ' } }],
  };
}
