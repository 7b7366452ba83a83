// Tag Adapters (seed 2.9): LoRA adapters bound to v1 dedicated endpoints. `model_id` = `<endpoint name>:<adapter>`;
// the adapter must be a completed upload of the caller's project whose base is the endpoint's model.
import type { Model, V1Endpoint } from '../../generated/prisma/sqlite/client/client.ts';
import type { Db, Tx } from '../db/index.ts';
import { badRequest, forbidden } from '../errors.ts';
import type { ModuleHandlers } from '../handlers.ts';
import { newId } from '../ids.ts';
import { wire } from '../wire/index.ts';
import { qualifiedName } from '../wire/endpoints.ts';
import { findV1Endpoint } from './endpoints.ts';
import { ownedOrNull } from '../scope.ts';

/** The caller's completed adapter named `ref` (its name or `ml_...` id), or null. */
export async function findAdapter(db: Db | Tx, projectId: string, ref: string): Promise<Model | null> {
  const m = await ownedOrNull(db.model, projectId, { OR: [{ id: ref }, { name: ref }] });
  return m && m.modelType === 'adapter' && m.status === 'ready' ? m : null;
}

/** An adapter fits an endpoint whose model is the adapter's base (or the dedicated LoRA pool it names). */
export const fitsEndpoint = (adapter: Model, endpoint: V1Endpoint) => adapter.baseModelId === endpoint.modelId || adapter.loraModel === endpoint.modelId;

/** Splits and checks a `model_id`; answers the adapter it names (403 when it is not the caller's ready adapter). */
async function parseModelId(db: Db | Tx, projectId: string, endpointName: string, modelId: string): Promise<Model> {
  const colon = modelId.indexOf(':');
  if (colon <= 0 || colon === modelId.length - 1) {
    throw badRequest(`'model_id' must be '<endpoint name>:<adapter>', e.g. '${endpointName}:my-adapter'.`, 'model_id', 'invalid_model_id');
  }
  const prefix = modelId.slice(0, colon);
  if (prefix !== endpointName) {
    throw badRequest(`'model_id' names endpoint '${prefix}', but this endpoint is '${endpointName}'.`, 'model_id', 'endpoint_name_mismatch');
  }
  const ref = modelId.slice(colon + 1);
  const adapter = await findAdapter(db, projectId, ref);
  if (!adapter) throw forbidden(`No uploaded adapter '${ref}' whose upload completed exists in this project.`, 'adapter_not_found', 'model_id');
  return adapter;
}

export const adaptersHandlers = {
  listAdapters: async ({ db, params, identity }) => {
    const e = await findV1Endpoint(db.prisma, identity.projectId, params.endpointId);
    const bindings = await db.prisma.adapterBinding.findMany({ where: { endpointId: e.id }, orderBy: { id: 'asc' } });
    const models = await db.prisma.model.findMany({ where: { id: { in: bindings.map((b) => b.adapterModelId) } } });
    const byId = new Map(models.map((m) => [m.id, m]));
    const name = qualifiedName(identity.projectSlug, e.name);
    return {
      object: 'list',
      data: bindings.filter((b) => byId.has(b.adapterModelId)).map((b) => wire.adapterBinding(name, byId.get(b.adapterModelId)!)),
    };
  },

  addAdapter: async ({ db, clock, params, body, identity }) => {
    const binding = await db.write(async (tx) => {
      const e = await findV1Endpoint(tx, identity.projectId, params.endpointId);
      const name = qualifiedName(identity.projectSlug, e.name);
      const adapter = await parseModelId(tx, identity.projectId, name, body.model_id);
      if (!fitsEndpoint(adapter, e)) {
        throw badRequest(
          `Adapter '${adapter.name}' applies to ${adapter.baseModelId}, but this endpoint serves ${e.modelId}.`,
          'model_id',
          'adapter_base_mismatch',
        );
      }
      const existing = await tx.adapterBinding.findFirst({ where: { endpointId: e.id, adapterModelId: adapter.id } });
      if (!existing) {
        await tx.adapterBinding.create({
          data: { id: newId('adb', clock.now()), projectId: identity.projectId, endpointId: e.id, adapterModelId: adapter.id, createdAt: new Date(clock.now()) },
        });
      }
      return wire.adapterBinding(name, adapter);
    });
    return { model_id: binding.model_id };
  },

  removeAdapter: async ({ db, params, body, identity }) => {
    const binding = await db.write(async (tx) => {
      const e = await findV1Endpoint(tx, identity.projectId, params.endpointId);
      const name = qualifiedName(identity.projectSlug, e.name);
      const adapter = await parseModelId(tx, identity.projectId, name, body.model_id);
      const { count } = await tx.adapterBinding.deleteMany({ where: { endpointId: e.id, adapterModelId: adapter.id } });
      if (count === 0) throw badRequest(`Adapter '${adapter.name}' is not bound to this endpoint.`, 'model_id', 'adapter_not_bound');
      return wire.adapterBinding(name, adapter);
    });
    return { model_id: binding.model_id, deleted: true };
  },
} satisfies ModuleHandlers;
