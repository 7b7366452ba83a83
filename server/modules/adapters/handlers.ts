// Module `adapters`: LoRA adapters bound to v1 dedicated endpoints.

import { instant } from '../../core/clock.ts';
import { badRequest } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { findV1Endpoint, qualifiedName } from '../endpoints/index.ts';
import type { Context } from '../types.ts';
import { adapterOfModelId, fitsEndpoint } from './rules.ts';
import { adapterBindingWire } from './wire.ts';

export async function listAdapters({ db, params, identity }: Context<'listAdapters'>) {
  const e = await findV1Endpoint(db.prisma, identity.projectId, params.endpointId);
  const bindings = await db.prisma.adapterBinding.findMany({ where: { endpointId: e.id }, orderBy: { id: 'asc' } });
  const models = new Map((await db.prisma.model.findMany({ where: { id: { in: bindings.map((b) => b.adapterModelId) } } })).map((m) => [m.id, m]));
  const name = qualifiedName(identity.projectSlug, e.name);
  return {
    object: 'list' as const,
    data: bindings.filter((b) => models.has(b.adapterModelId)).map((b) => adapterBindingWire(name, models.get(b.adapterModelId)!)),
  };
}

export async function addAdapter({ db, clock, params, body, identity }: Context<'addAdapter'>) {
  return db.write(async (tx) => {
    const e = await findV1Endpoint(tx, identity.projectId, params.endpointId);
    const name = qualifiedName(identity.projectSlug, e.name);
    const adapter = await adapterOfModelId(tx, identity.projectId, name, body.model_id);
    const served = await tx.model.findUnique({ where: { id: e.modelId } });
    if (!fitsEndpoint(adapter, { modelId: e.modelId, architecture: served?.architecture ?? null })) {
      throw badRequest(
        `Adapter '${adapter.name}' applies to ${adapter.baseModelId} (${adapter.architecture}), but this endpoint serves ${e.modelId} (${served?.architecture ?? 'another architecture'}).`,
        'model_id',
        'adapter_base_mismatch',
      );
    }
    // Binding a bound adapter again changes nothing.
    if (!(await tx.adapterBinding.findFirst({ where: { endpointId: e.id, adapterModelId: adapter.id } }))) {
      await tx.adapterBinding.create({
        data: { id: newId('adb', clock.now()), projectId: identity.projectId, endpointId: e.id, adapterModelId: adapter.id, createdAt: instant(clock) },
      });
    }
    return { model_id: adapterBindingWire(name, adapter).model_id };
  });
}

export async function removeAdapter({ db, params, body, identity }: Context<'removeAdapter'>) {
  return db.write(async (tx) => {
    const e = await findV1Endpoint(tx, identity.projectId, params.endpointId);
    const name = qualifiedName(identity.projectSlug, e.name);
    const adapter = await adapterOfModelId(tx, identity.projectId, name, body.model_id);
    const { count } = await tx.adapterBinding.deleteMany({ where: { endpointId: e.id, adapterModelId: adapter.id } });
    if (count === 0) throw badRequest(`Adapter '${adapter.name}' is not bound to this endpoint.`, 'model_id', 'adapter_not_bound');
    return { model_id: adapterBindingWire(name, adapter).model_id, deleted: true as const };
  });
}
