// Module `hardware`: the configurations dedicated replicas run on, with availability when a model is named.
import { apiError, badRequest } from '../../core/errors.ts';
import { findModel } from '../models/index.ts';
import type { Context } from '../types.ts';
import { availabilityOf, canRun, gpusInUse } from './capacity.ts';
import { hardwareCatalogue } from './catalogue.ts';
import { hardwareWire } from './wire.ts';

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
