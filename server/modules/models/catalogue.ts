// The model catalogue: the platform's models (no project; seed.json) and each project's uploads. Other modules look
// models up here.
import type { Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant, type Clock } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { Db, Tx } from '../../db/index.ts';
import type { SeedContext } from '../types.ts';
import data from './seed.json' with { type: 'json' };

/** The platform's catalogue (seed.json); its rows have no project. */
export async function seedCatalogue({ tx, clock }: SeedContext): Promise<void> {
  for (const m of data.models as CatalogueEntry[]) {
    await tx.model.create({
      data: {
        id: m.id,
        projectId: null,
        name: m.id,
        type: m.type,
        modelType: 'model',
        architecture: m.architecture ?? null,
        serverless: m.serverless,
        minGpuMemory: m.minGpuMemory ?? null,
        contextLength: m.contextLength ?? null,
        organization: m.organization ?? null,
        displayName: m.displayName ?? null,
        license: m.license ?? null,
        link: m.link ?? null,
        capabilities: JSON.stringify(m.capabilities ?? []),
        pricing: JSON.stringify(m.pricing),
        description: m.description ?? null,
        status: 'ready',
        createdAt: instant(clock),
      },
    });
  }
}

interface CatalogueEntry {
  id: string;
  displayName?: string;
  organization?: string;
  type: string;
  architecture?: string;
  serverless: boolean;
  minGpuMemory?: number;
  contextLength?: number;
  license?: string;
  link?: string;
  capabilities?: string[];
  pricing: Record<string, number>;
  description?: string;
}

/** A model the project can use: a catalogue model, or one of its own uploads that has completed. */
export function findModel(db: Db | Tx, projectId: string, id: string): Promise<Model | null> {
  return db.model.findFirst({ where: { id, OR: [{ projectId: null }, { projectId, status: 'ready' }] } });
}

export const capabilities = (m: Model): string[] => JSON.parse(m.capabilities);

export interface UploadedModel {
  name: string;
  type: string;
  modelType: 'model' | 'adapter';
  architecture: string | null;
  baseModelId: string | null;
  loraModel?: string | null;
  minGpuMemory: number | null;
  contextLength?: number | null;
  description?: string | null;
  source: string;
  sourceKind: string;
  /** pending while its upload job runs; ready once it completed. */
  status: 'pending' | 'ready';
}

/** A project's uploaded model or adapter (`ml_...`): the upload creates it pending; its job makes it ready. */
export function createUploadedModel(tx: Tx, clock: Clock, projectId: string, m: UploadedModel): Promise<Model> {
  return tx.model.create({
    data: {
      id: newId('ml', clock.now()),
      projectId,
      ...m,
      loraModel: m.loraModel ?? null,
      contextLength: m.contextLength ?? null,
      description: m.description ?? null,
      createdAt: instant(clock),
    },
  });
}
