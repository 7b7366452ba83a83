// The rules of binding a LoRA adapter to a v1 endpoint: `model_id` is `<endpoint name>:<adapter>`, where the
// endpoint name is the endpoint's own qualified name and the adapter is a completed upload of the caller's project
// (by name or id, `ml_...`) whose base is compatible with the endpoint's model:
// the same model, the dedicated LoRA pool it names, or another served model of the same base architecture.
import type { Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { badRequest, forbidden } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { ownedOrNull } from '../../http/scope.ts';

/** The caller's completed adapter named `ref` (its name or its id), or null. */
export async function findAdapter(db: Db | Tx, projectId: string, ref: string): Promise<Model | null> {
  const m = await ownedOrNull(db.model, projectId, { OR: [{ id: ref }, { name: ref }] });
  return m && m.modelType === 'adapter' && m.status === 'ready' ? m : null;
}

/** What an adapter would run on: the model a replica serves, and that model's base architecture. */
export interface Served {
  modelId: string;
  architecture: string | null;
}

/**
 * An adapter fits a v1 endpoint or a v2 deployment whose model is the adapter's base, the dedicated LoRA pool it names,
 * or a model of the same base architecture (LoRA weights apply to any model of the architecture they were trained on:
 * an adapter for the serverless `...-Reference` or `...-Turbo` model fits one serving the dedicated base model).
 */
export const fitsEndpoint = (adapter: Model, served: Served) =>
  adapter.baseModelId === served.modelId ||
  adapter.loraModel === served.modelId ||
  (adapter.architecture !== null && adapter.architecture === served.architecture);

/** Splits and checks a `model_id`; answers the adapter it names (403 when it is not the caller's ready adapter). */
export async function adapterOfModelId(db: Db | Tx, projectId: string, endpointName: string, modelId: string): Promise<Model> {
  const colon = modelId.indexOf(':');
  if (colon <= 0 || colon === modelId.length - 1) {
    throw badRequest(`'model_id' must be '<endpoint name>:<adapter>', e.g. '${endpointName}:my-adapter'.`, 'model_id', 'invalid_model_id');
  }
  const prefix = modelId.slice(0, colon);
  if (prefix !== endpointName)
    throw badRequest(`'model_id' names endpoint '${prefix}', but this endpoint is '${endpointName}'.`, 'model_id', 'endpoint_name_mismatch');
  const ref = modelId.slice(colon + 1);
  const adapter = await findAdapter(db, projectId, ref);
  if (!adapter) throw forbidden(`No uploaded adapter '${ref}' whose upload completed exists in this project.`, 'adapter_not_found', 'model_id');
  return adapter;
}
