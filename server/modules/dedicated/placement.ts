// Where a deployment's replicas run: a hardware configuration that matches every selector of its config, holds
// the model, and has free capacity; the cheapest that fits.
import type { Deployment, Hardware, ModelConfig } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Clock } from '../../core/clock.ts';
import type { Db, Tx } from '../../db/index.ts';
import { canRun, reserveIfFree } from '../hardware/capacity.ts';
import { desiredReplicas } from './traffic.ts';

export const DEPLOYMENT_OWNER = 'deployment';

const SELECTOR_FIELDS: Record<string, (h: Hardware) => string> = {
  gpu_type: (h) => h.gpuType,
  gpu_count: (h) => String(h.gpuCount),
  gpu_link: (h) => h.gpuLink,
  gpu_memory: (h) => String(h.gpuMemory),
};

export const selectorsOf = (c: ModelConfig): Record<string, string> => JSON.parse(c.selectors);

/** Hardware configurations that match every selector of the config and hold the model, cheapest first. */
export async function matchingHardware(db: Db | Tx, config: ModelConfig, minGpuMemory: number | null): Promise<Hardware[]> {
  const selectors = Object.entries(selectorsOf(config));
  const all = await db.hardware.findMany({ orderBy: [{ centsPerMinute: 'asc' }, { id: 'asc' }] });
  return all.filter((h) => selectors.every(([k, v]) => SELECTOR_FIELDS[k]?.(h) === v) && canRun(h, { minGpuMemory }));
}

/** Provisioning's outcome: the replicas reserved on the first matching hardware with room, or why none could be. */
export async function place(tx: Tx, clock: Clock, d: Deployment): Promise<{ hardware: Hardware } | { failure: string }> {
  const [config, model] = await Promise.all([tx.modelConfig.findUnique({ where: { id: d.configId } }), tx.model.findUnique({ where: { id: d.modelId } })]);
  if (!config || !model) return { failure: 'The model or config no longer exists.' };
  const candidates = await matchingHardware(tx, config, model.minGpuMemory);
  if (candidates.length === 0) {
    const wanted = Object.entries(selectorsOf(config)).map(([k, v]) => `${k}=${v}`).join(', ');
    return { failure: `No hardware configuration matches config ${config.id}'s selectors (${wanted}) and holds ${model.id}.` };
  }
  const replicas = desiredReplicas(d);
  for (const h of candidates) {
    if (await reserveIfFree(tx, clock, { projectId: d.projectId, hardwareId: h.id, replicas, ownerKind: DEPLOYMENT_OWNER, ownerId: d.id })) return { hardware: h };
  }
  return { failure: `Insufficient capacity: no free ${candidates.map((h) => h.id).join(' or ')} capacity for ${replicas} replica(s).` };
}
