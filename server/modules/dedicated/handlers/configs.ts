// Module `dedicated`: published configs (visible to every project), with the hardware each can run on.
import type { ModelConfig } from '../../../../generated/prisma/sqlite/client/client.ts';
import { notFound } from '../../../core/errors.ts';
import type { Db } from '../../../db/index.ts';
import { cut, pageArgs, pageSize } from '../../../http/list.ts';
import { visibleOrNull } from '../../../http/scope.ts';
import { nameKey } from '../../models/index.ts';
import type { Context } from '../../types.ts';
import { matchingHardware } from '../placement.ts';
import { checkProject, referenceFilter } from '../refs.ts';
import { listWire, modelConfigWire } from '../wire.ts';

async function configView(db: Db, c: ModelConfig) {
  const model = await db.model.findUnique({ where: { id: c.referenceModelId } });
  return modelConfigWire(c, await matchingHardware(db, c, model?.minGpuMemory ?? null));
}

/**
 * The models whose configs serve `reference`: itself, and for the project's upload (by id, or by its name) the
 * catalogue models of its base architecture, whose configs deploying it accepts (refs.ts `configServes`).
 */
async function configReferences(db: Db, projectId: string, reference: string): Promise<string[]> {
  const upload =
    (await db.model.findFirst({ where: { projectId, id: reference } })) ?? (await db.model.findFirst({ where: { projectId, nameKey: nameKey(reference) } }));
  if (!upload?.architecture) return [reference];
  const bases = await db.model.findMany({ where: { projectId: null, architecture: upload.architecture }, select: { id: true } });
  return [upload.id, ...bases.map((b) => b.id)];
}

export async function listConfigs(ctx: Context<'listConfigs'>) {
  const projectId = checkProject(ctx);
  const { db, query } = ctx;
  const limit = pageSize(query.limit);
  const reference = referenceFilter(projectId, query.referenceModelId, query.referenceModel);
  const references = reference === undefined ? undefined : await configReferences(db.prisma, projectId, reference);
  const page = pageArgs(query.after, limit);
  const rows = await db.prisma.modelConfig.findMany({
    ...page,
    where: { ...page.where, OR: [{ projectId: null }, { projectId }], ...(references !== undefined ? { referenceModelId: { in: references } } : {}) },
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
