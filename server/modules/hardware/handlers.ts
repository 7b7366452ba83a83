// Module `hardware`: the configurations dedicated replicas run on, with availability when a model is named (v1),
// and as the public platform's v2 inference instance types, with their headroom.
import { apiError, badRequest, notFound } from '../../core/errors.ts';
import { findModel } from '../models/index.ts';
import type { Context } from '../types.ts';
import { availabilityOf, canRun, gpusInUse } from './capacity.ts';
import { hardwareCatalogue } from './catalogue.ts';
import { hardwareWire, instanceTypeWire } from './wire.ts';

export async function listHardware({ db, query, identity }: Context<'listHardware'>) {
  const { rows: hardware, list } = await hardwareCatalogue(db);
  // An empty `model` is no filter, as an absent one.
  if (query.model === undefined || query.model === '') return list;

  const model = await findModel(db.prisma, identity.projectId, query.model);
  if (!model) throw apiError(404, 'model_not_found', `No model '${query.model}' was found.`, 'model');
  if (model.minGpuMemory === null) {
    const why =
      model.modelType === 'adapter'
        ? 'an adapter runs on an endpoint of its base model'
        : model.projectId !== null
          ? 'its source names no base architecture this platform serves on dedicated hardware'
          : 'it is served serverless only';
    throw badRequest(`Model '${query.model}' cannot be deployed on dedicated hardware: ${why}.`, 'model', 'model_not_available');
  }
  const inUse = await gpusInUse(db.prisma);
  return {
    object: 'list' as const,
    data: hardware.filter((h) => canRun(h, model)).map((h) => hardwareWire(h, availabilityOf(h, inUse.get(h.id) ?? 0))),
  };
}

export async function listInferenceInstanceTypes({ db }: Context<'listInferenceInstanceTypes'>) {
  const [{ rows }, inUse] = await Promise.all([hardwareCatalogue(db), gpusInUse(db.prisma)]);
  return { object: 'list' as const, data: rows.map((h) => instanceTypeWire(h, inUse.get(h.id) ?? 0)), next_cursor: '' };
}

export async function getInferenceInstanceType({ db, params }: Context<'getInferenceInstanceType'>) {
  const [{ rows }, inUse] = await Promise.all([hardwareCatalogue(db), gpusInUse(db.prisma)]);
  const h = rows.find((r) => r.id === params.instanceTypeId);
  if (!h) throw notFound('inference instance type', params.instanceTypeId, 'instanceTypeId');
  return instanceTypeWire(h, inUse.get(h.id) ?? 0);
}
