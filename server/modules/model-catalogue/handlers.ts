// Module `model-catalogue`: a project's v2 models, their revisions and files, and the remote uploads that fill them.
import type { Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { ApiError, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Db, Tx } from '../../db/index.ts';
import { masked } from '../../http/etag.ts';
import { cut, pageArgs, pageSize } from '../../http/list.ts';
import { checkProject, owned } from '../../http/scope.ts';
import { uniquely } from '../../http/unique.ts';
import { enter } from '../../runner/progress.ts';
import { createUploadedModel, nameKey } from '../models/index.ts';
import type { Context } from '../types.ts';
import { recordEvent } from './events.ts';
import { MAX_RESTARTS, remoteUploadMachine } from './machine.ts';
import { revisionsOf } from './revisions.ts';
import { checkName, checkNameFree, checkOrganization, checkSource, checkWeightsType, findCatalogueModel, nameTaken, servedBase } from './rules.ts';
import { catalogueModelWire, filesWire, listWire, remoteUploadWire, revisionWire, uploadEventWire } from './wire.ts';

/** A 409 the official clients must not retry (they retry a 409 by default). */
const inUse = (code: string, message: string, param: string) => new ApiError(409, code, message, param, 'invalid_request_error', { 'x-should-retry': 'false' });

const IN_PROGRESS = ['REMOTE_UPLOAD_STATUS_PENDING', 'REMOTE_UPLOAD_STATUS_RUNNING', 'REMOTE_UPLOAD_STATUS_ERROR'];

/** One page, in id order, of the v2 models `where` selects. */
async function modelPage(db: Db, where: object, q: { limit?: number; after?: string }, organizationId: string) {
  const size = pageSize(q.limit);
  const args = pageArgs(q.after, size);
  const page = cut(await db.model.findMany({ ...args, where: { AND: [args.where, { visibility: { not: null } }, where] } }), size);
  return listWire(
    page.rows.map((m) => catalogueModelWire(m, organizationId)),
    page.next,
  );
}

/** The caller's project's models and, with the organization, its other projects' internal ones. */
async function visibleWhere(db: Db, projectId: string, organizationId: string | undefined) {
  if (organizationId === undefined) return { projectId };
  const others = (await db.project.findMany({ where: { organizationId, id: { not: projectId } }, select: { id: true } })).map((p) => p.id);
  return { OR: [{ projectId }, { projectId: { in: others }, visibility: 'VISIBILITY_INTERNAL' }] };
}

export async function listCatalogueModels(ctx: Context<'listCatalogueModels'>) {
  const projectId = checkProject(ctx);
  const { organizationId, visibility } = ctx.query;
  if (organizationId !== undefined) checkOrganization(organizationId, ctx.identity, 'organizationId');
  const where = await visibleWhere(ctx.db.prisma, projectId, organizationId);
  return modelPage(ctx.db.prisma, visibility ? { AND: [where, { visibility }] } : where, ctx.query, ctx.identity.organizationId);
}

export async function listOrganizationModels(ctx: Context<'listOrganizationModels'>) {
  checkOrganization(ctx.params.organizationId, ctx.identity, 'organizationId');
  const where = await visibleWhere(ctx.db.prisma, ctx.identity.projectId, ctx.identity.organizationId);
  return modelPage(ctx.db.prisma, where, ctx.query, ctx.identity.organizationId);
}

export async function createCatalogueModel(ctx: Context<'createCatalogueModel'>) {
  const projectId = checkProject(ctx);
  const { db, clock, body } = ctx;
  checkWeightsType(body.type);
  const name = checkName(body.name);
  const base = await servedBase(db.prisma, body.baseModelId);
  const model = await uniquely(
    () =>
      db.write(async (tx) => {
        await checkNameFree(tx, projectId, name);
        return createUploadedModel(tx, clock, projectId, {
          name,
          type: base.type,
          modelType: 'model',
          architecture: base.architecture,
          baseModelId: base.id,
          minGpuMemory: base.minGpuMemory,
          contextLength: base.contextLength,
          description: body.description ?? null,
          source: null,
          sourceKind: null,
          status: 'pending',
          visibility: 'VISIBILITY_PRIVATE',
        });
      }),
    () => nameTaken(name),
  );
  return catalogueModelWire(model, ctx.identity.organizationId);
}

export async function getCatalogueModel(ctx: Context<'getCatalogueModel'>) {
  const projectId = checkProject(ctx);
  return catalogueModelWire(await findCatalogueModel(ctx.db.prisma, projectId, ctx.params.modelId), ctx.identity.organizationId);
}

export async function updateCatalogueModel(ctx: Context<'updateCatalogueModel'>) {
  const projectId = checkProject(ctx);
  const { db } = ctx;
  const body = masked(ctx.body, ctx.query.updateMask, ['name', 'description', 'visibility']);
  const name = body.name === undefined ? undefined : checkName(body.name);
  const updated = await uniquely(
    () =>
      db.write(async (tx) => {
        const m = await findCatalogueModel(tx, projectId, ctx.params.modelId);
        if (name !== undefined) await checkNameFree(tx, projectId, name, m.id);
        return tx.model.update({
          where: { id: m.id },
          data: {
            name: name ?? m.name,
            nameKey: name === undefined ? m.nameKey : nameKey(name),
            description: body.description ?? m.description,
            visibility: body.visibility ?? m.visibility,
          },
        });
      }),
    () => nameTaken(name!),
  );
  return catalogueModelWire(updated, ctx.identity.organizationId);
}

/** Refused while a deployment runs one of the model's revisions, or an upload into it is under way (the tag's **Deleting**). */
async function checkDeletable(tx: Tx, m: Model): Promise<void> {
  const deployment = await tx.deployment.findFirst({ where: { modelId: m.id }, orderBy: { id: 'asc' } });
  if (deployment) {
    throw inUse(
      'model_in_use',
      `Model '${m.id}' cannot be deleted: deployment '${deployment.id}' (${deployment.name}) runs its revision ${deployment.modelRevisionId}. Delete the deployment first.`,
      'modelId',
    );
  }
  const upload = await tx.remoteUpload.findFirst({ where: { modelId: m.id, status: { in: IN_PROGRESS } }, orderBy: { id: 'asc' } });
  if (upload) throw inUse('upload_in_progress', `Model '${m.id}' cannot be deleted while upload '${upload.id}' into it is under way.`, 'modelId');
}

export async function deleteCatalogueModel(ctx: Context<'deleteCatalogueModel'>) {
  const projectId = checkProject(ctx);
  await ctx.db.write(async (tx) => {
    const m = await findCatalogueModel(tx, projectId, ctx.params.modelId);
    await checkDeletable(tx, m);
    const uploads = (await tx.remoteUpload.findMany({ where: { modelId: m.id }, select: { id: true } })).map((u) => u.id);
    await tx.remoteUploadEvent.deleteMany({ where: { uploadId: { in: uploads } } });
    await tx.remoteUpload.deleteMany({ where: { modelId: m.id } });
    await tx.modelRevision.deleteMany({ where: { modelId: m.id } });
    await tx.model.delete({ where: { id: m.id } });
  });
  return {};
}

export async function listCatalogueModelFiles(ctx: Context<'listCatalogueModelFiles'>) {
  const projectId = checkProject(ctx);
  const m = await findCatalogueModel(ctx.db.prisma, projectId, ctx.params.modelId);
  const { revisionId } = ctx.query;
  if (revisionId === undefined) return filesWire(await ctx.db.prisma.modelRevision.findFirst({ where: { modelId: m.id }, orderBy: { id: 'desc' } }));
  const revision = await ctx.db.prisma.modelRevision.findFirst({ where: { id: revisionId, modelId: m.id } });
  if (!revision) throw notFound('revision', revisionId, 'revisionId');
  return filesWire(revision);
}

export async function listCatalogueModelRevisions(ctx: Context<'listCatalogueModelRevisions'>) {
  const projectId = checkProject(ctx);
  const m = await findCatalogueModel(ctx.db.prisma, projectId, ctx.params.modelId);
  return listWire((await revisionsOf(ctx.db.prisma, m.id)).map(revisionWire), null);
}

export async function getCatalogueModelRevision(ctx: Context<'getCatalogueModelRevision'>) {
  const projectId = checkProject(ctx);
  const m = await findCatalogueModel(ctx.db.prisma, projectId, ctx.params.modelId);
  const revision = await ctx.db.prisma.modelRevision.findFirst({ where: { id: ctx.params.revisionId, modelId: m.id } });
  if (!revision) throw notFound('revision', ctx.params.revisionId, 'revisionId');
  return revisionWire(revision);
}

export async function createRemoteModelUpload(ctx: Context<'createRemoteModelUpload'>) {
  const projectId = checkProject(ctx);
  const { db, clock, body } = ctx;
  // `token` is for the fetch only, which happens nowhere offline: it is neither stored nor logged.
  const upload = await db.write(async (tx) => {
    const model = await findCatalogueModel(tx, projectId, body.modelId, 'modelId');
    await checkSource(tx, model, body.remoteUrl);
    const now = instant(clock);
    const u = await tx.remoteUpload.create({
      data: {
        id: newId('mu', clock.now()),
        projectId,
        modelId: model.id,
        remoteUrl: body.remoteUrl,
        status: 'REMOTE_UPLOAD_STATUS_PENDING',
        statusMessage: 'Queued.',
        maxRestarts: MAX_RESTARTS,
        createdAt: now,
        updatedAt: now,
      },
    });
    await recordEvent(tx, clock, u, 'upload.created', 'LEVEL_INFO', `Upload of ${u.remoteUrl} into model ${model.id} queued.`);
    await enter(tx, ctx, remoteUploadMachine, { id: u.id, projectId, state: u.status });
    return u;
  });
  return remoteUploadWire(upload);
}

export async function listRemoteModelUploads(ctx: Context<'listRemoteModelUploads'>) {
  const projectId = checkProject(ctx);
  const size = pageSize(ctx.query.limit);
  const args = pageArgs(ctx.query.after, size);
  const page = cut(await ctx.db.prisma.remoteUpload.findMany({ ...args, where: { ...args.where, projectId } }), size);
  return listWire(page.rows.map(remoteUploadWire), page.next);
}

const findUpload = (db: Db, projectId: string, id: string) => owned(db.remoteUpload, projectId, { id }, { what: 'upload', id, param: 'uploadId' });

export async function getRemoteModelUpload(ctx: Context<'getRemoteModelUpload'>) {
  const projectId = checkProject(ctx);
  return remoteUploadWire(await findUpload(ctx.db.prisma, projectId, ctx.params.uploadId));
}

export async function listRemoteModelUploadEvents(ctx: Context<'listRemoteModelUploadEvents'>) {
  const projectId = checkProject(ctx);
  const u = await findUpload(ctx.db.prisma, projectId, ctx.params.uploadId);
  const size = pageSize(ctx.query.limit);
  const args = pageArgs(ctx.query.after, size);
  const page = cut(await ctx.db.prisma.remoteUploadEvent.findMany({ ...args, where: { ...args.where, uploadId: u.id } }), size);
  return listWire(page.rows.map(uploadEventWire), page.next);
}
