// Module `dedicated`: published configs (visible to every project), with the hardware each can run on.
import type { ModelConfig } from '../../../../generated/prisma/sqlite/client/client.ts';
import { notFound } from '../../../core/errors.ts';
import type { Db } from '../../../db/index.ts';
import { cut, pageArgs, pageSize } from '../../../http/list.ts';
import { visibleOrNull } from '../../../http/scope.ts';
import type { Context } from '../../types.ts';
import { matchingHardware } from '../placement.ts';
import { checkProject, referenceFilter } from '../refs.ts';
import { listWire, modelConfigWire } from '../wire.ts';

async function configView(db: Db, c: ModelConfig) {
  const model = await db.model.findUnique({ where: { id: c.referenceModelId } });
  return modelConfigWire(c, await matchingHardware(db, c, model?.minGpuMemory ?? null));
}

export async function listConfigs(ctx: Context<'listConfigs'>) {
  const projectId = checkProject(ctx);
  const { db, query } = ctx;
  const limit = pageSize(query.limit);
  const reference = referenceFilter(projectId, query.referenceModelId, query.referenceModel);
  const page = pageArgs(query.after, limit);
  const rows = await db.prisma.modelConfig.findMany({
    ...page,
    where: { ...page.where, OR: [{ projectId: null }, { projectId }], ...(reference !== undefined ? { referenceModelId: reference } : {}) },
  });
  const p = cut(rows, limit);
  const data = [];
  for (const c of p.rows) data.push(await configView(db.prisma, c));
  return listWire(data, p.next);
}

export async function getConfig(ctx: Context<'getConfig'>) {
  const projectId = checkProject(ctx);
  const c = await visibleOrNull(ctx.db.prisma.modelConfig, projectId, { id: ctx.params.configId });
  if (!c) throw notFound('config', ctx.params.configId, 'configId');
  return configView(ctx.db.prisma, c);
}
