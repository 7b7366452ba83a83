// Module `models`: rows -> wire shapes (catalogue and uploaded models, upload answers, upload jobs).
import type { Model, ModelUploadJob } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso, unixSeconds } from '../../core/clock.ts';
import type { Wire } from '../types.ts';
import { publicType } from './catalogue.ts';

/**
 * Uploads carry the type and context length of what they fine-tune; `organization` names an upload's owner. `type`
 * is the nearest of the platform's types, `kind` the model's own; `pricing` only where the catalogue has a price.
 */
export function modelInfoWire(m: Model, extra: { organization?: string } = {}): Wire<'ModelInfo'> {
  const pricing = JSON.parse(m.pricing) as Partial<NonNullable<Wire<'ModelInfo'>['pricing']>>;
  const organization = m.organization ?? extra.organization;
  return {
    id: m.id,
    object: 'model',
    created: unixSeconds(m.createdAt),
    type: publicType(m.type),
    kind: m.type as Wire<'ModelInfo'>['kind'],
    display_name: m.displayName ?? m.name,
    ...(organization ? { organization } : {}),
    ...(m.link ? { link: m.link } : {}),
    ...(m.license ? { license: m.license } : {}),
    ...(m.contextLength ? { context_length: m.contextLength } : {}),
    ...(m.dimensions ? { dimensions: m.dimensions } : {}),
    ...(m.projectId === null && Object.keys(pricing).length > 0
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
}

export function modelUploadWire(job: ModelUploadJob, model: Model): Wire<'ModelUploadResponse'> {
  return {
    data: { job_id: job.id, model_name: model.name, model_id: model.id, model_source: model.sourceKind as Wire<'ModelUploadResponse'>['data']['model_source'] },
    message: 'Processing model weights. Job created.',
  };
}

export function jobWire(job: ModelUploadJob): Wire<'JobInfo'> {
  return {
    type: job.type as Wire<'JobInfo'>['type'],
    job_id: job.id,
    status: job.status as Wire<'JobInfo'>['status'],
    status_updates: JSON.parse(job.statusUpdates),
    args: JSON.parse(job.args),
    created_at: iso(job.createdAt),
    updated_at: iso(job.updatedAt),
  };
}
