// The models deployable on dedicated hardware, each with its deployment profiles, by the rules a deployment meets:
// the deploy path's (refs.ts: a catalogue model with a GPU size, and a published config that serves it) and
// provisioning's (placement.ts: hardware that matches the config's selectors and holds the model). A model none of
// whose configs some hardware here can run is not deployable, so it is not listed.
import type { Hardware, Model, ModelConfig } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Db } from '../../db/index.ts';
import { catalogue } from '../models/index.ts';
import { hardwareByPrice, hardwareFor } from './placement.ts';
import { configServes } from './refs.ts';
import data from './seed.json' with { type: 'json' };

/** A config on the hardware provisioning tries first for it (the cheapest that matches and holds the model). */
export interface Profile {
  config: ModelConfig;
  hardware: Hardware;
  /** The weights' precision the config was certified with. */
  precision: string;
}

export interface Supported {
  id: string;
  model: Model;
  profiles: Profile[];
}

const precisions = new Map(data.configs.map((c) => [c.id, c.certifications[0] ?? '']));

/** Every deployable catalogue model with its profiles (configs in id order), in model id order. */
export async function supportedModels(db: Db): Promise<Supported[]> {
  const [models, configs, hardware] = await Promise.all([catalogue(db), db.modelConfig.findMany({ where: { projectId: null } }), hardwareByPrice(db)]);
  // Sorted here, not by the database, so SQLite and PostgreSQL (whose collation may ignore `_`) agree.
  configs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const byId = new Map(models.map((m) => [m.id, m]));
  const out: Supported[] = [];
  for (const model of models) {
    if (model.minGpuMemory === null) continue;
    const profiles: Profile[] = [];
    for (const config of configs) {
      if (!configServes(config, byId.get(config.referenceModelId), model)) continue;
      const [first] = hardwareFor(config, model.minGpuMemory, hardware);
      if (first) profiles.push({ config, hardware: first, precision: precisions.get(config.id) ?? '' });
    }
    if (profiles.length > 0) out.push({ id: model.id, model, profiles });
  }
  return out;
}
