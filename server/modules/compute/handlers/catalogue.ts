// Module `compute`: this server's region catalogue (catalogue.json), read-only.
import type { Context } from '../../types.ts';
import { availabilityZones, regionList } from '../catalogue.ts';

export async function listRegions(_ctx: Context<'listRegions'>) {
  return { regions: regionList() };
}

export async function listAvailabilityZones(_ctx: Context<'listAvailabilityZones'>) {
  return { avzones: availabilityZones() };
}
