// Module `dedicated`: LoRA adapters bound to one v2 deployment (the tag's **Bound adapters**); chat serves them
// there through traffic.ts (`servesAdapter`).
import type { Deployment, DeploymentAdapter, Model } from '../../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../../core/clock.ts';
import { apiError, badRequest, conflict } from '../../../core/errors.ts';
import { newId } from '../../../core/ids.ts';
import type { Db, Tx } from '../../../db/index.ts';
import { checkEtag, newEtag } from '../../../http/etag.ts';
import { cut, pageArgs, pageSize } from '../../../http/list.ts';
import { uniquely } from '../../../http/unique.ts';
import { findAdapter, fitsEndpoint } from '../../adapters/index.ts';
import type { Context } from '../../types.ts';
import { checkProject, findDeployment, parseModelRef, revisionOf } from '../refs.ts';
import { deploymentAdapterWire, listWire } from '../wire.ts';

/** The caller's completed adapter a reference names (id, name or `projects/{projectId}/models/{id}`), or 404. */
async function adapterOf(db: Db | Tx, projectId: string, ref: string, param: string): Promise<Model> {
  const { id } = parseModelRef(projectId, ref);
  const adapter = id === '' ? null : await findAdapter(db, projectId, id);
  if (!adapter) throw apiError(404, 'adapter_not_found', `No uploaded adapter '${ref}' whose upload completed exists in this project.`, param);
  return adapter;
}

/** The adapter's one revision: `given` must name it (absent: it). */
function checkRevision(adapter: Model, given: string | undefined): string {
  const revision = revisionOf(adapter.id);
  if (given !== undefined && given !== revision) {
    throw badRequest(`Adapter '${adapter.name}' has no revision '${given}'; its revision is '${revision}'.`, 'adapterRevisionId', 'revision_not_found');
  }
  return revision;
}

/** The binding `{id}` names on the deployment, or 404. */
async function bindingOf(db: Db | Tx, d: Deployment, ref: string): Promise<DeploymentAdapter> {
  const { id } = parseModelRef(d.projectId, ref);
  // By id first, so a binding whose adapter has since been deleted can still be read and removed.
  const byId = (adapterModelId: string) => db.deploymentAdapter.findUnique({ where: { deploymentId_adapterModelId: { deploymentId: d.id, adapterModelId } } });
  const named = id === '' ? null : ((await byId(id)) ?? (await findAdapter(db, d.projectId, id)));
  const b = named && 'deploymentId' in named ? named : named && (await byId(named.id));
  if (!b) throw apiError(404, 'not_found', `No adapter '${ref}' is bound to deployment '${d.id}'.`, 'id');
  return b;
}

const deploymentOf = (
  db: Db | Tx,
  ctx: Context<'listDeploymentAdapters' | 'addDeploymentAdapter' | 'getDeploymentAdapter' | 'updateDeploymentAdapter' | 'removeDeploymentAdapter'>,
) => findDeployment(db, checkProject(ctx), ctx.params.endpointId, ctx.params.deploymentId);

export async function listDeploymentAdapters(ctx: Context<'listDeploymentAdapters'>) {
  const d = await deploymentOf(ctx.db.prisma, ctx);
  const size = pageSize(ctx.query.limit);
  const args = pageArgs(ctx.query.after, size);
  const page = cut(await ctx.db.prisma.deploymentAdapter.findMany({ ...args, where: { ...args.where, deploymentId: d.id } }), size);
  return listWire(
    page.rows.map((b) => deploymentAdapterWire(b, d)),
    page.next,
  );
}

export async function addDeploymentAdapter(ctx: Context<'addDeploymentAdapter'>) {
  const { db, clock, body } = ctx;
  const adapter = await adapterOf(db.prisma, checkProject(ctx), body.adapterModelId, 'adapterModelId');
  const revisionId = checkRevision(adapter, body.adapterRevisionId);
  const taken = () => conflict(`Adapter '${adapter.name}' is already bound to this deployment.`, 'adapter_already_bound', 'adapterModelId');
  const bound = await uniquely(
    () =>
      db.write(async (tx) => {
        const d = await deploymentOf(tx, ctx);
        const served = await tx.model.findUnique({ where: { id: d.modelId }, select: { architecture: true } });
        if (!fitsEndpoint(adapter, { modelId: d.modelId, architecture: served?.architecture ?? null })) {
          throw badRequest(
            `Adapter '${adapter.name}' applies to ${adapter.baseModelId ?? adapter.loraModel} (${adapter.architecture ?? 'unknown architecture'}), but deployment '${d.name}' serves ${d.modelId} (${served?.architecture ?? 'another architecture'}).`,
            'adapterModelId',
            'adapter_base_mismatch',
          );
        }
        const existing = await tx.deploymentAdapter.findUnique({ where: { deploymentId_adapterModelId: { deploymentId: d.id, adapterModelId: adapter.id } } });
        if (existing && !body.force) throw taken();
        const now = instant(clock);
        const b =
          existing ??
          (await tx.deploymentAdapter.create({
            data: {
              id: newId('dab', clock.now()),
              projectId: d.projectId,
              deploymentId: d.id,
              adapterModelId: adapter.id,
              revisionId,
              etag: newEtag(),
              createdAt: now,
              updatedAt: now,
            },
          }));
        return { b, d };
      }),
    taken,
  );
  return deploymentAdapterWire(bound.b, bound.d);
}

export async function getDeploymentAdapter(ctx: Context<'getDeploymentAdapter'>) {
  const d = await deploymentOf(ctx.db.prisma, ctx);
  return deploymentAdapterWire(await bindingOf(ctx.db.prisma, d, ctx.params.id), d);
}

export async function updateDeploymentAdapter(ctx: Context<'updateDeploymentAdapter'>) {
  const { db, clock, body } = ctx;
  return db.write(async (tx) => {
    const d = await deploymentOf(tx, ctx);
    const b = await bindingOf(tx, d, ctx.params.id);
    checkEtag(body.etag, b.etag);
    const revisionId = revisionOf(b.adapterModelId);
    if (body.adapterRevisionId !== revisionId) {
      throw badRequest(
        `Adapter '${b.adapterModelId}' has no revision '${body.adapterRevisionId}'; its revision is '${revisionId}'.`,
        'adapterRevisionId',
        'revision_not_found',
      );
    }
    const next = await tx.deploymentAdapter.update({ where: { id: b.id }, data: { revisionId, etag: newEtag(), updatedAt: instant(clock) } });
    return deploymentAdapterWire(next, d);
  });
}

export async function removeDeploymentAdapter(ctx: Context<'removeDeploymentAdapter'>) {
  await ctx.db.write(async (tx) => {
    const d = await deploymentOf(tx, ctx);
    const b = await bindingOf(tx, d, ctx.params.id);
    checkEtag(ctx.query.etag, b.etag);
    await tx.deploymentAdapter.delete({ where: { id: b.id } });
  });
  return {};
}
