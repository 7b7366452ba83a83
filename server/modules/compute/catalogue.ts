// This server's GPU cluster catalogue (catalogue.json): regions, their zones, GPU types with capacity, driver builds,
// and the declared price table billing reads. Lookups answer the 400 a bad choice deserves, naming the field.
import { badRequest } from '../../core/errors.ts';
import type { Wire } from '../types.ts';
import data from './catalogue.json' with { type: 'json' };

export interface DriverBuild {
  id: string;
  cuda_version: string;
  nvidia_driver_version: string;
  os: string;
}

interface Region {
  name: string;
  availability_zones: string[];
  gpus: Record<string, number>;
  driver_versions: string[];
}

export const GPUS_PER_NODE = data.gpus_per_node;
export const MAX_VOLUME_TIB = data.max_volume_tib;
const regions = data.regions as unknown as Region[];
const builds = data.driver_versions as Record<string, Omit<DriverBuild, 'id'>>;
const prices = data.prices_per_gpu_hour as Record<string, Record<string, number>>;

const buildsOf = (r: Region): DriverBuild[] => r.driver_versions.map((id) => ({ id, ...builds[id]! }));

export const regionList = () =>
  regions.map((r) => ({ name: r.name, supported_instance_types: Object.keys(r.gpus) as Wire<'GpuType'>[], driver_versions: buildsOf(r) }));

export const availabilityZones = () => regions.flatMap((r) => r.availability_zones);

export function region(name: string, param = 'region'): Region {
  const r = regions.find((x) => x.name === name);
  if (!r) throw badRequest(`Unknown region '${name}'; this server's regions are ${regions.map((x) => x.name).join(', ')}.`, param);
  return r;
}

/** The GPUs of `gpuType` the region can hold in all; 400 when it offers none. */
export function capacity(r: Region, gpuType: string): number {
  const n = r.gpus[gpuType];
  if (n === undefined) throw badRequest(`Region ${r.name} offers no ${gpuType} GPUs; it offers ${Object.keys(r.gpus).join(', ')}.`, 'gpu_type');
  return n;
}

/** The driver build a create request names: by id, or by its two versions (exactly one of the two ways). */
export function driverBuild(r: Region, body: { nvidia_version_id?: string; cuda_version?: string; nvidia_driver_version?: string }): DriverBuild {
  const offered = buildsOf(r);
  const list = offered.map((b) => `${b.id} (CUDA ${b.cuda_version}, driver ${b.nvidia_driver_version})`).join(', ');
  const byVersions = body.cuda_version !== undefined || body.nvidia_driver_version !== undefined;
  if (body.nvidia_version_id !== undefined) {
    if (byVersions) throw badRequest('Give either nvidia_version_id or cuda_version and nvidia_driver_version, not both.', 'nvidia_version_id');
    const b = offered.find((x) => x.id === body.nvidia_version_id);
    if (!b) throw badRequest(`Region ${r.name} has no driver build '${body.nvidia_version_id}'; it has ${list}.`, 'nvidia_version_id');
    return b;
  }
  if (body.cuda_version === undefined) throw badRequest('Give nvidia_version_id, or both cuda_version and nvidia_driver_version.', 'cuda_version');
  if (body.nvidia_driver_version === undefined)
    throw badRequest('Give nvidia_driver_version with cuda_version (or nvidia_version_id instead).', 'nvidia_driver_version');
  const b = offered.find((x) => x.cuda_version === body.cuda_version && x.nvidia_driver_version === body.nvidia_driver_version);
  if (!b)
    throw badRequest(`Region ${r.name} has no build of CUDA ${body.cuda_version} with driver ${body.nvidia_driver_version}; it has ${list}.`, 'cuda_version');
  return b;
}

/** US dollars per GPU-hour of `gpuType` under `billingType` (this server's declared table). */
export const price = (gpuType: string, billingType: string): number => prices[gpuType]?.[billingType] ?? 0;
