// The rules of an upload: its source must parse; `hf_token` only for hub sources; an adapter names the model it
// applies to, either served serverless with adapters (`base_model`) or deployable on dedicated hardware
// (`lora_model`), and both, when given, must be the same architecture. A full model may be any model: its
// architecture is read from the source's name when it names one this platform serves, and the model then inherits
// that architecture's type, context length and hardware needs. Only v2 model creation requires a served base
// architecture (`requireServedArchitecture`); v1 uploads (POST /v1/models) do not.

import { badRequest } from '../../core/errors.ts';
import type { Db } from '../../db/index.ts';
import type { RequestBody } from '../types.ts';
import { canonicalModelId, capabilities } from './catalogue.ts';
import { architectureOf, parseSource, type Source } from './sources.ts';

export type UploadBody = RequestBody<'uploadModel'>;

export interface Plan {
  source: Source;
  type: string;
  /** The served base architecture it is (or fine-tunes); null for a full model whose source names none. */
  architecture: string | null;
  baseModelId: string | null;
  loraModel: string | null;
  minGpuMemory: number | null;
  contextLength: number | null;
}

export interface PlanOptions {
  /**
   * Whether a full model must be a fine-tuned variant of a base architecture this platform serves (400
   * `unsupported_base_architecture` otherwise). The requirements set this rule for v2 uploads only: v1 uploads
   * (POST /v1/models) pass false; v2 model creation, once it exists, passes true.
   */
  requireServedArchitecture: boolean;
}

/** The kind a full model whose architecture cannot be told offline is listed as: a model of language, no more. */
export const UNKNOWN_ARCHITECTURE_KIND = 'language';

/** Checks an upload against the catalogue and says what the uploaded model will be. */
export async function planUpload(db: Db, body: UploadBody, options: PlanOptions): Promise<Plan> {
  const source = parseSource(body.model_source);
  if (typeof source === 'string') {
    throw badRequest(`'model_source' is not a model hub repository or an object-storage path: ${source}.`, 'model_source', 'invalid_model_source');
  }
  if (body.hf_token !== undefined && source.kind !== 'huggingface') {
    throw badRequest(`'hf_token' applies only to model hub sources; this source is ${source.kind}.`, 'hf_token', 'field_not_applicable');
  }
  const catalogue = await db.model.findMany({ where: { projectId: null, architecture: { not: null } }, orderBy: { id: 'asc' } });

  // A full model: `base_model` and `lora_model` are unused (accepted and ignored).
  if ((body.model_type ?? 'model') === 'model') {
    const architectures = [...new Set(catalogue.map((m) => m.architecture!))];
    const architecture = architectureOf(source, architectures);
    if (!architecture) {
      if (options.requireServedArchitecture) {
        throw badRequest(
          `An uploaded model must be a fine-tuned variant of a base architecture this platform serves, named in the source (one of: ${architectures.sort().join(', ')}).`,
          'model_source',
          'unsupported_base_architecture',
        );
      }
      // Nothing can be read offline about what it is: listed as a language model, not deployable.
      return { source, type: UNKNOWN_ARCHITECTURE_KIND, architecture: null, baseModelId: null, loraModel: null, minGpuMemory: null, contextLength: null };
    }
    const base = baseOf(
      catalogue.filter((m) => m.architecture === architecture),
      architecture,
    );
    return { source, type: base.type, architecture, baseModelId: base.id, loraModel: null, minGpuMemory: base.minGpuMemory, contextLength: base.contextLength };
  }

  if (body.base_model === undefined && body.lora_model === undefined) {
    throw badRequest(
      "An adapter names the model it applies to: 'base_model' (serverless pool) or 'lora_model' (dedicated pool).",
      'base_model',
      'base_model_required',
    );
  }
  const servedBase = body.base_model === undefined ? undefined : catalogue.find((m) => m.id === canonicalModelId(body.base_model!));
  if (body.base_model !== undefined && !(servedBase?.serverless && capabilities(servedBase).includes('lora'))) {
    const lora = catalogue.filter((m) => m.serverless && capabilities(m).includes('lora')).map((m) => m.id);
    throw badRequest(
      `'${body.base_model}' is not a served model that runs adapters serverless (one of: ${lora.join(', ')}).`,
      'base_model',
      'base_model_not_served',
    );
  }
  const pool = body.lora_model === undefined ? undefined : catalogue.find((m) => m.id === canonicalModelId(body.lora_model!));
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
  return {
    source,
    type: base.type,
    architecture: base.architecture!,
    baseModelId: base.id,
    loraModel: pool?.id ?? null,
    minGpuMemory: null,
    contextLength: base.contextLength,
  };
}

/**
 * The model a full upload of `architecture` fine-tunes: the architecture's dedicated-only base model when there is
 * one, else the served model named after the architecture (DeepSeek-V3 rather than DeepSeek-R1, which shares it),
 * else the first by id.
 */
function baseOf<M extends { id: string; serverless: boolean }>(family: M[], architecture: string): M {
  const namedAfter = (m: M) =>
    m.id
      .split('/')
      .at(-1)!
      .toLowerCase()
      .replace(/[_\s]+/g, '-')
      .includes(architecture);
  return family.find((m) => !m.serverless) ?? family.find(namedAfter) ?? family[0]!;
}
