// The rules of an upload: its source must parse; `hf_token` only for hub sources; a full model must fine-tune a
// base architecture the platform serves (named in the source); an adapter names the model it applies to, either
// served serverless with adapters (`base_model`) or deployable on dedicated hardware (`lora_model`), and both, when
// given, must be the same architecture.
import type { Db } from '../../db/index.ts';
import { badRequest } from '../../core/errors.ts';
import type { RequestBody } from '../types.ts';
import { capabilities } from './catalogue.ts';
import { architectureOf, parseSource, type Source } from './sources.ts';

export type UploadBody = RequestBody<'uploadModel'>;

export interface Plan {
  source: Source;
  type: string;
  architecture: string;
  baseModelId: string;
  loraModel: string | null;
  minGpuMemory: number | null;
  contextLength: number | null;
}

/** Checks an upload against the catalogue and says what the uploaded model will be. */
export async function planUpload(db: Db, body: UploadBody): Promise<Plan> {
  const source = parseSource(body.model_source);
  if (typeof source === 'string') {
    throw badRequest(`'model_source' is not a model hub repository or an object-storage path: ${source}.`, 'model_source', 'invalid_model_source');
  }
  if (body.hf_token !== undefined && source.kind !== 'huggingface') {
    throw badRequest(`'hf_token' applies only to model hub sources; this source is ${source.kind}.`, 'hf_token', 'field_not_applicable');
  }
  const catalogue = await db.model.findMany({ where: { projectId: null, architecture: { not: null } }, orderBy: { id: 'asc' } });

  if ((body.model_type ?? 'model') === 'model') {
    for (const field of ['base_model', 'lora_model'] as const) {
      if (body[field] !== undefined) {
        throw badRequest(`'${field}' applies only to uploads with model_type 'adapter'.`, field, 'field_not_applicable');
      }
    }
    const architectures = [...new Set(catalogue.map((m) => m.architecture!))];
    const architecture = architectureOf(source, architectures);
    if (!architecture) {
      throw badRequest(
        `An uploaded model must be a fine-tuned variant of a base architecture this platform serves, named in the source (one of: ${architectures.sort().join(', ')}).`,
        'model_source',
        'unsupported_base_architecture',
      );
    }
    // The base: the architecture's dedicated base model when there is one, else a served model of it.
    const family = catalogue.filter((m) => m.architecture === architecture);
    const base = family.find((m) => !m.serverless) ?? family[0]!;
    return { source, type: base.type, architecture, baseModelId: base.id, loraModel: null, minGpuMemory: base.minGpuMemory, contextLength: base.contextLength };
  }

  if (body.base_model === undefined && body.lora_model === undefined) {
    throw badRequest("An adapter names the model it applies to: 'base_model' (serverless pool) or 'lora_model' (dedicated pool).", 'base_model', 'base_model_required');
  }
  const servedBase = body.base_model === undefined ? undefined : catalogue.find((m) => m.id === body.base_model);
  if (body.base_model !== undefined && !(servedBase?.serverless && capabilities(servedBase).includes('lora'))) {
    const lora = catalogue.filter((m) => m.serverless && capabilities(m).includes('lora')).map((m) => m.id);
    throw badRequest(`'${body.base_model}' is not a served model that runs adapters serverless (one of: ${lora.join(', ')}).`, 'base_model', 'base_model_not_served');
  }
  const pool = body.lora_model === undefined ? undefined : catalogue.find((m) => m.id === body.lora_model);
  if (body.lora_model !== undefined && pool?.minGpuMemory == null) {
    throw badRequest(`'${body.lora_model}' is not a served model that dedicated endpoints run.`, 'lora_model', 'base_model_not_served');
  }
  if (servedBase && pool && servedBase.architecture !== pool.architecture) {
    throw badRequest(
      `'base_model' (${servedBase.architecture}) and 'lora_model' (${pool.architecture}) are different architectures; an adapter fits one.`,
      'lora_model',
      'base_model_mismatch',
    );
  }
  const base = (servedBase ?? pool)!;
  return { source, type: base.type, architecture: base.architecture!, baseModelId: base.id, loraModel: pool?.id ?? null, minGpuMemory: null, contextLength: base.contextLength };
}
