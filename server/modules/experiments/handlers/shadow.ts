// Module `experiments`: shadow experiments and their targets (the tag's **Shadow experiments**). The copies
// themselves are mirror.ts's; every change here makes this process re-read the endpoint's experiments.
import type { DedicatedEndpoint, ShadowTarget } from '../../../../generated/prisma/sqlite/client/client.ts';
import type { Clock } from '../../../core/clock.ts';
import { instant } from '../../../core/clock.ts';
import { badRequest, conflict, notFound, taken } from '../../../core/errors.ts';
import { newId } from '../../../core/ids.ts';
import type { Tx } from '../../../db/index.ts';
import { checkEtag, masked, newEtag } from '../../../http/etag.ts';
import { cut, pageArgs, pageSize } from '../../../http/list.ts';
import { uniquely } from '../../../http/unique.ts';
import { splitOf, timeRange } from '../../dedicated/index.ts';
import type { Context, Services, Wire } from '../../types.ts';
import { shadowsOf } from '../mirror.ts';
import { deploymentIds, endpointOf, shadowExperimentOf, targetsOf } from '../refs.ts';
import { shadowResults } from '../report.ts';
import { checkName, checkSampling } from '../rules.ts';
import { listWire, shadowExperimentWire, shadowTargetWire } from '../wire.ts';

type TargetCreate = Wire<'ShadowTargetCreate'>;

const unknownDeployment = (id: string, param: string) =>
  badRequest(`'${id}' is not a deployment of this endpoint (a shadow target is one of the experiment's endpoint's deployments).`, param, 'unknown_deployment');
const targetExists = (deploymentId: string) =>
  conflict(`Deployment '${deploymentId}' is already a target of this experiment.`, 'target_exists', 'targetDeploymentId');
const experimentNameTaken = (name: string) => taken(`The endpoint already has a shadow experiment named '${name}'.`, 'experiment_name_taken', 'name');
const targetNameTaken = (name: string) => taken(`The experiment already has a target named '${name}'.`, 'target_name_taken', 'name');

/** A target is a deployment of the endpoint that the split gives no live traffic (weight 0 or absent). */
function checkTarget(e: DedicatedEndpoint, ids: Set<string>, deploymentId: string, param: string): void {
  if (!ids.has(deploymentId)) throw unknownDeployment(deploymentId, param);
  if (splitOf(e).some((s) => s.deploymentId === deploymentId && s.weight > 0)) {
    throw badRequest(
      `Deployment '${deploymentId}' receives live traffic (its weight in the endpoint's traffic split is positive); a shadow target is one the split gives weight 0 or leaves out.`,
      param,
      'target_receives_traffic',
    );
  }
}

/** This process applies a change to the endpoint's experiments from the next request on. */
const changed = (services: Services, endpointId: string) => shadowsOf(services).forget(endpointId);

function newTarget(tx: Tx, clock: Clock, experiment: { id: string; projectId: string }, t: TargetCreate) {
  const now = instant(clock);
  return tx.shadowTarget.create({
    data: {
      id: newId('sht', clock.now()),
      projectId: experiment.projectId,
      experimentId: experiment.id,
      name: t.name,
      description: t.description ?? null,
      targetDeploymentId: t.targetDeploymentId,
      etag: newEtag(),
      createdAt: now,
      updatedAt: now,
    },
  });
}

export async function listShadowExperiments(ctx: Context<'listShadowExperiments'>) {
  const { prisma } = ctx.db;
  const e = await endpointOf(prisma, ctx);
  const size = pageSize(ctx.query.limit);
  const args = pageArgs(ctx.query.after, size);
  const page = cut(await prisma.shadowExperiment.findMany({ ...args, where: { ...args.where, endpointId: e.id } }), size);
  const targets = await prisma.shadowTarget.findMany({ where: { experimentId: { in: page.rows.map((x) => x.id) } }, orderBy: { id: 'asc' } });
  const shown = ctx.query.includeTargets === true;
  return listWire(
    page.rows.map((x) =>
      shadowExperimentWire(
        x,
        targets.filter((t) => t.experimentId === x.id),
        shown,
      ),
    ),
    page.next,
  );
}

export async function createShadowExperiment(ctx: Context<'createShadowExperiment'>) {
  const { db, clock, body, identity } = ctx;
  const name = checkName(body.name);
  const sampling = checkSampling(body.source.endpoint.sampling);
  const wanted = body.targets ?? [];
  wanted.forEach((t, i) => {
    checkName(t.name, `targets.${i}.name`);
  });
  const { x, e, targets } = await uniquely(
    () =>
      db.write(async (tx) => {
        const e = await endpointOf(tx, ctx);
        if (await tx.shadowExperiment.findFirst({ where: { endpointId: e.id, name } })) throw experimentNameTaken(name);
        const ids = await deploymentIds(tx, e.id);
        const seen = new Set<string>();
        const names = new Set<string>();
        wanted.forEach((t, i) => {
          const param = `targets.${i}.targetDeploymentId`;
          checkTarget(e, ids, t.targetDeploymentId, param);
          if (seen.has(t.targetDeploymentId)) throw badRequest(`Deployment '${t.targetDeploymentId}' is named twice.`, param, 'duplicate_deployment');
          if (names.has(t.name)) throw badRequest(`Two targets are named '${t.name}'.`, `targets.${i}.name`, 'duplicate_name');
          seen.add(t.targetDeploymentId);
          names.add(t.name);
        });
        const now = instant(clock);
        const x = await tx.shadowExperiment.create({
          data: {
            id: newId('shx', clock.now()),
            projectId: e.projectId,
            endpointId: e.id,
            name,
            sampling: JSON.stringify(sampling),
            createdBy: identity.apiKeyId,
            etag: newEtag(),
            createdAt: now,
            updatedAt: now,
          },
        });
        const targets: ShadowTarget[] = [];
        for (const t of wanted) targets.push(await newTarget(tx, clock, x, t));
        return { x, e, targets };
      }),
    () => experimentNameTaken(name),
  );
  changed(ctx, e.id);
  return shadowExperimentWire(x, targets);
}

export async function getShadowExperiment(ctx: Context<'getShadowExperiment'>) {
  const { prisma } = ctx.db;
  const e = await endpointOf(prisma, ctx);
  const x = await shadowExperimentOf(prisma, e, ctx.params.id, 'id');
  return shadowExperimentWire(x, await targetsOf(prisma, x.id));
}

export async function getShadowExperimentResults(ctx: Context<'getShadowExperimentResults'>) {
  const { prisma } = ctx.db;
  const e = await endpointOf(prisma, ctx);
  const x = await shadowExperimentOf(prisma, e, ctx.params.experimentId, 'experimentId');
  return shadowResults(prisma, x, timeRange(ctx.clock, ctx.query));
}

export async function updateShadowExperiment(ctx: Context<'updateShadowExperiment'>) {
  const { db, clock } = ctx;
  const body = masked(ctx.body, ctx.query.updateMask, ['description', 'source']);
  const sampling = body.source === undefined ? undefined : checkSampling(body.source.endpoint.sampling);
  const { x, targets } = await db.write(async (tx) => {
    const e = await endpointOf(tx, ctx);
    const x = await shadowExperimentOf(tx, e, ctx.params.id, 'id');
    checkEtag(ctx.body.etag, x.etag);
    const next = await tx.shadowExperiment.update({
      where: { id: x.id },
      data: {
        description: body.description ?? x.description,
        sampling: sampling === undefined ? x.sampling : JSON.stringify(sampling),
        etag: newEtag(),
        updatedAt: instant(clock),
      },
    });
    return { x: next, targets: await targetsOf(tx, x.id) };
  });
  changed(ctx, x.endpointId);
  return shadowExperimentWire(x, targets);
}

export async function deleteShadowExperiment(ctx: Context<'deleteShadowExperiment'>) {
  const e = await ctx.db.write(async (tx) => {
    const e = await endpointOf(tx, ctx);
    const x = await shadowExperimentOf(tx, e, ctx.params.id, 'id');
    checkEtag(ctx.query.etag, x.etag);
    await tx.shadowTarget.deleteMany({ where: { experimentId: x.id } });
    await tx.shadowExperiment.delete({ where: { id: x.id } });
    return e;
  });
  changed(ctx, e.id);
  return {};
}

// ---- targets ----

type TargetOp = 'listShadowTargets' | 'createShadowTarget' | 'getShadowTarget' | 'updateShadowTarget' | 'deleteShadowTarget';

async function experimentOf(db: Tx | Services['db']['prisma'], ctx: Context<TargetOp>) {
  const e = await endpointOf(db, ctx);
  return { e, x: await shadowExperimentOf(db, e, ctx.params.experimentId, 'experimentId') };
}

async function targetOf(db: Tx | Services['db']['prisma'], experimentId: string, id: string) {
  const t = await db.shadowTarget.findFirst({ where: { id, experimentId } });
  if (!t) throw notFound('shadow experiment target', id, 'id');
  return t;
}

export async function listShadowTargets(ctx: Context<'listShadowTargets'>) {
  const { prisma } = ctx.db;
  const { x } = await experimentOf(prisma, ctx);
  const size = pageSize(ctx.query.limit);
  const args = pageArgs(ctx.query.after, size);
  const page = cut(await prisma.shadowTarget.findMany({ ...args, where: { ...args.where, experimentId: x.id } }), size);
  return listWire(page.rows.map(shadowTargetWire), page.next);
}

export async function createShadowTarget(ctx: Context<'createShadowTarget'>) {
  const { db, clock, body } = ctx;
  checkName(body.name);
  const { t, e } = await uniquely(
    () =>
      db.write(async (tx) => {
        const { e, x } = await experimentOf(tx, ctx);
        checkTarget(e, await deploymentIds(tx, e.id), body.targetDeploymentId, 'targetDeploymentId');
        if (await tx.shadowTarget.findFirst({ where: { experimentId: x.id, targetDeploymentId: body.targetDeploymentId } })) {
          throw targetExists(body.targetDeploymentId);
        }
        if (await tx.shadowTarget.findFirst({ where: { experimentId: x.id, name: body.name } })) throw targetNameTaken(body.name);
        return { t: await newTarget(tx, clock, x, body), e };
      }),
    () => targetExists(body.targetDeploymentId),
  );
  changed(ctx, e.id);
  return shadowTargetWire(t);
}

export async function getShadowTarget(ctx: Context<'getShadowTarget'>) {
  const { prisma } = ctx.db;
  const { x } = await experimentOf(prisma, ctx);
  return shadowTargetWire(await targetOf(prisma, x.id, ctx.params.id));
}

export async function updateShadowTarget(ctx: Context<'updateShadowTarget'>) {
  const { db, clock } = ctx;
  const body = masked(ctx.body, ctx.query.updateMask, ['name', 'targetDeploymentId', 'description']);
  if (body.name !== undefined) checkName(body.name);
  const deploymentId = body.targetDeploymentId;
  const { t, e } = await uniquely(
    () =>
      db.write(async (tx) => {
        const { e, x } = await experimentOf(tx, ctx);
        const t = await targetOf(tx, x.id, ctx.params.id);
        checkEtag(ctx.body.etag, t.etag);
        if (deploymentId !== undefined && deploymentId !== t.targetDeploymentId) {
          checkTarget(e, await deploymentIds(tx, e.id), deploymentId, 'targetDeploymentId');
          if (await tx.shadowTarget.findFirst({ where: { experimentId: x.id, targetDeploymentId: deploymentId } })) throw targetExists(deploymentId);
        }
        if (body.name !== undefined && body.name !== t.name && (await tx.shadowTarget.findFirst({ where: { experimentId: x.id, name: body.name } }))) {
          throw targetNameTaken(body.name);
        }
        const next = await tx.shadowTarget.update({
          where: { id: t.id },
          data: {
            name: body.name ?? t.name,
            description: body.description ?? t.description,
            targetDeploymentId: deploymentId ?? t.targetDeploymentId,
            etag: newEtag(),
            updatedAt: instant(clock),
          },
        });
        return { t: next, e };
      }),
    () => targetExists(deploymentId ?? ''),
  );
  changed(ctx, e.id);
  return shadowTargetWire(t);
}

export async function deleteShadowTarget(ctx: Context<'deleteShadowTarget'>) {
  const e = await ctx.db.write(async (tx) => {
    const { e, x } = await experimentOf(tx, ctx);
    const t = await targetOf(tx, x.id, ctx.params.id);
    checkEtag(ctx.query.etag, t.etag);
    await tx.shadowTarget.delete({ where: { id: t.id } });
    return e;
  });
  changed(ctx, e.id);
  return {};
}
