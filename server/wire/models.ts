// Wire shapes of tag Models (seed 2.7): catalogue and uploaded models, upload answers and upload jobs.
import type { Model, ModelUploadJob } from '../../generated/prisma/sqlite/client/client.ts';
import type { Schemas } from './types.ts';

const iso = (ms: bigint) => new Date(Number(ms)).toISOString();

export const modelsWire = {
  /** Uploads carry the type and context length of what they fine-tune; `organization` names an upload's owner. */
  modelInfo: (m: Model, extra: { organization?: string } = {}): Schemas['ModelInfo'] => {
    const pricing = JSON.parse(m.pricing) as Partial<NonNullable<Schemas['ModelInfo']['pricing']>>;
    return {
      id: m.id,
      object: 'model',
      created: Number(m.created),
      type: m.type as Schemas['ModelInfo']['type'],
      display_name: m.displayName ?? m.name,
      ...((m.organization ?? extra.organization) ? { organization: (m.organization ?? extra.organization)! } : {}),
      ...(m.link ? { link: m.link } : {}),
      ...(m.license ? { license: m.license } : {}),
      ...(m.contextLength ? { context_length: m.contextLength } : {}),
      ...(m.projectId === null
        ? {
            pricing: {
              base: pricing.base ?? 0,
              finetune: pricing.finetune ?? 0,
              hourly: pricing.hourly ?? 0,
              input: pricing.input ?? 0,
              output: pricing.output ?? 0,
              ...(pricing.cached_input !== undefined ? { cached_input: pricing.cached_input } : {}),
            },
          }
        : {}),
    };
  },

  modelUpload: (job: ModelUploadJob, model: Model): Schemas['ModelUploadResponse'] => ({
    data: {
      job_id: job.id,
      model_name: model.name,
      model_id: model.id,
      model_source: model.sourceKind as Schemas['ModelUploadResponse']['data']['model_source'],
    },
    message: 'Processing model weights. Job created.',
  }),

  job: (job: ModelUploadJob): Schemas['JobInfo'] => ({
    type: job.type as Schemas['JobInfo']['type'],
    job_id: job.id,
    status: job.status as Schemas['JobInfo']['status'],
    status_updates: JSON.parse(job.statusUpdates),
    args: JSON.parse(job.args),
    created_at: iso(job.createdAt),
    updated_at: iso(job.updatedAt),
  }),
};
