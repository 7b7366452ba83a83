// What a real platform already has on its first day: the catalogue (hardware, serverless models, base
// architectures, published configs, compute clusters) and, in the default project, the resources a new user
// would find. The data is declarative, in prisma/seed/*.json; each area's loader turns its file into rows.
// It runs once, in the same transaction as the first-start bootstrap, so tests start from exactly this state.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from './clock.ts';
import type { Tx } from './db/index.ts';
import { root } from './paths.ts';
import { seedCompute } from './modules/compute.ts';
import { seedVolumes } from './modules/volumes.ts';
import { seedHardware } from './modules/hardware.ts';
import { seedModels } from './modules/models.ts';
import { seedConfigs } from './modules/dedicated.ts';
import { seedV1Endpoints } from './modules/endpoints.ts';

export interface SeedContext {
  tx: Tx;
  clock: Clock;
  /** The default project created by the bootstrap, and its organization. */
  projectId: string;
  organizationId: string;
}

export type Seeder = (ctx: SeedContext) => Promise<void>;

export function seedData<T>(name: string): T {
  return JSON.parse(readFileSync(join(root, 'prisma/seed', `${name}.json`), 'utf8')) as T;
}

/** In order: later areas may refer to rows of earlier ones. */
const seeders: Seeder[] = [seedHardware, seedModels, seedCompute, seedVolumes, seedConfigs, seedV1Endpoints];

export async function seedCatalogue(ctx: SeedContext): Promise<void> {
  for (const seed of seeders) await seed(ctx);
}
