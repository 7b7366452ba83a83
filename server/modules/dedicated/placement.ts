// Where a deployment's replicas run: a hardware configuration that matches every selector of its config, holds
// the model, and has free capacity; the cheapest that fits. All of it is one pool in one region, and a deployment's
// `placement` must allow that region, inline or through the one placement profile, which prefers it.
import type { Deployment, Hardware, ModelConfig } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Clock } from '../../core/clock.ts';
import { badRequest } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { canRun, REGION, reserveIfFree } from '../hardware/index.ts';
import type { RequestBody } from '../types.ts';
import { desiredReplicas } from './machine.ts';

export const DEPLOYMENT_OWNER = 'deployment';

/** The one region of this server's dedicated hardware (none of which is HIPAA-attested). */
export const DEDICATED_REGION = REGION;

/** The one saved placement profile, every project's: it prefers the one region, so it places where inline `[local]` does. */
export const PLACEMENT_PROFILE = { id: 'pp_local', name: DEDICATED_REGION, preferredRegions: [DEDICATED_REGION] } as const;

export type Placement = NonNullable<RequestBody<'createDeployment'>['placement']>;

/**
 * A placement this server can meet: the one saved profile, or inline with no HIPAA requirement and required regions
 * (the default constraint) that include this server's region; preferred regions are only a preference.
 */
export function checkPlacement(placement: Placement | undefined): void {
  if (placement === undefined) return;
  if ('profile' in placement) {
    if (placement.profile === PLACEMENT_PROFILE.id) return;
    throw badRequest(
      `No placement profile '${placement.profile}' exists: this server's one placement profile is '${PLACEMENT_PROFILE.id}'.`,
      'placement.profile',
      'placement_profile_not_found',
    );
  }
  const { regions = [], constraint = 'ENFORCEMENT_REQUIRED', compliancePolicy } = placement.inline;
  if (compliancePolicy?.hipaa) {
    throw badRequest('No HIPAA-attested hardware exists on this server.', 'placement.inline.compliancePolicy.hipaa', 'placement_unsatisfiable');
  }
  if (constraint === 'ENFORCEMENT_REQUIRED' && regions.length > 0 && !regions.includes(DEDICATED_REGION)) {
    throw badRequest(
      `This server's dedicated hardware is all in region '${DEDICATED_REGION}', which the required regions (${regions.join(', ')}) leave out; add it, or make them ENFORCEMENT_PREFERRED.`,
      'placement.inline.regions',
      'placement_unsatisfiable',
    );
  }
}

const SELECTOR_FIELDS: Record<string, (h: Hardware) => string> = {
  gpu_type: (h) => h.gpuType,
  gpu_count: (h) => String(h.gpuCount),
  gpu_link: (h) => h.gpuLink,
  gpu_memory: (h) => String(h.gpuMemory),
};

export const selectorsOf = (c: ModelConfig): Record<string, string> => JSON.parse(c.selectors);

/** Every hardware configuration in the order placement tries them: cheapest first, then by id. */
export const hardwareByPrice = (db: Db | Tx) => db.hardware.findMany({ orderBy: [{ centsPerMinute: 'asc' }, { id: 'asc' }] });

/** Of `all` (in placement order), the configurations that match every selector of the config and hold the model. */
export function hardwareFor(config: ModelConfig, minGpuMemory: number | null, all: Hardware[]): Hardware[] {
  const selectors = Object.entries(selectorsOf(config));
  return all.filter((h) => selectors.every(([k, v]) => SELECTOR_FIELDS[k]?.(h) === v) && canRun(h, { minGpuMemory }));
}

/** Hardware configurations that match every selector of the config and hold the model, cheapest first. */
export async function matchingHardware(db: Db | Tx, config: ModelConfig, minGpuMemory: number | null): Promise<Hardware[]> {
  return hardwareFor(config, minGpuMemory, await hardwareByPrice(db));
}

/** Provisioning's outcome: the replicas reserved on the first matching hardware with room, or why none could be. */
export async function place(tx: Tx, clock: Clock, d: Deployment): Promise<{ hardware: Hardware } | { failure: string }> {
  const [config, model] = await Promise.all([tx.modelConfig.findUnique({ where: { id: d.configId } }), tx.model.findUnique({ where: { id: d.modelId } })]);
  if (!config || !model) return { failure: 'The model or config no longer exists.' };
  const candidates = await matchingHardware(tx, config, model.minGpuMemory);
  if (candidates.length === 0) {
    const wanted = Object.entries(selectorsOf(config))
      .map(([k, v]) => `${k}=${v}`)
      .join(', ');
    return { failure: `No hardware configuration matches config ${config.id}'s selectors (${wanted}) and holds ${model.id}.` };
  }
  const replicas = desiredReplicas(d);
  for (const h of candidates) {
    if (await reserveIfFree(tx, clock, { projectId: d.projectId, hardwareId: h.id, replicas, ownerKind: DEPLOYMENT_OWNER, ownerId: d.id }))
      return { hardware: h };
  }
  return { failure: `Insufficient capacity: no free ${candidates.map((h) => h.id).join(' or ')} capacity for ${replicas} replica(s).` };
}
