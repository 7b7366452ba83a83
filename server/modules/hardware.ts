// Tag Hardware (seed 2.6, rule 3): the hardware configurations dedicated replicas run on, with availability.
import { availabilityOf, canRun, gpusInUse } from '../capacity.ts';
import { apiError, badRequest } from '../errors.ts';
import type { ModuleHandlers } from '../handlers.ts';
import type { SeedContext } from '../seed.ts';
import { seedData } from '../seed.ts';
import { wire } from '../wire/index.ts';
import { findModel } from './models.ts';

interface HardwareSeed {
  hardware: Array<{ id: string; gpuType: string; gpuLink: string; gpuMemory: number; gpuCount: number; centsPerMinute: number; capacityGpus: number }>;
}

/** Seeder: the platform's hardware configurations (prisma/seed/hardware.json). */
export async function seedHardware({ tx, clock }: SeedContext): Promise<void> {
  const updatedAt = new Date(clock.now());
  for (const h of seedData<HardwareSeed>('hardware').hardware) await tx.hardware.create({ data: { ...h, updatedAt } });
}

export const hardwareHandlers = {
  listHardware: async ({ db, query, identity }) => {
    // Sorted here, not by the database, so SQLite and PostgreSQL (whose collation may ignore case) agree.
    const hardware = (await db.prisma.hardware.findMany()).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (query.model === undefined) return { object: 'list', data: hardware.map((h) => wire.hardware(h)) };

    const model = await findModel(db.prisma, identity.projectId, query.model);
    if (!model) throw apiError(404, 'model_not_found', `No model '${query.model}' was found.`, 'model');
    if (model.minGpuMemory === null) {
      const why = model.modelType === 'adapter' ? 'an adapter runs on an endpoint of its base model' : 'it is served serverless only';
      throw badRequest(`Model '${query.model}' cannot be deployed on dedicated hardware: ${why}.`, 'model', 'model_not_available');
    }
    const inUse = await gpusInUse(db.prisma);
    return {
      object: 'list',
      data: hardware.filter((h) => canRun(h, model)).map((h) => wire.hardware(h, availabilityOf(h, inUse.get(h.id) ?? 0))),
    };
  },
} satisfies ModuleHandlers;
