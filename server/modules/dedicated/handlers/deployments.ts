// Module `dedicated`: v2 deployments (a model and a config bound to an endpoint with an autoscaling policy), moved
// by the deployment machine (machine.ts) and the runner's provisioning (provisioning.ts).
import type { Deployment } from '../../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../../core/clock.ts';
import { apiError, conflict } from '../../../core/errors.ts';
import type { Tx } from '../../../db/index.ts';
import { checkEtag, masked, newEtag } from '../../../http/etag.ts';
import { type Fields, listPage } from '../../../http/list.ts';
import { uniquely } from '../../../http/unique.ts';
import { transition } from '../../../runner/progress.ts';
import { release, reserveIfFree } from '../../hardware/index.ts';
import type { Context } from '../../types.ts';
import { checkPolicy, ensureAutoscaler, metricsOf } from '../autoscaling.ts';
import { recordDeploymentChange, recordEndpointChange } from '../events.ts';
import { unqualified, V2_LIST, v2Query } from '../listing.ts';
import { type DeploymentEvent, deploymentMachine, deployments, desiredReplicas } from '../machine.ts';
import { DEPLOYMENT_OWNER } from '../placement.ts';
import { checkAutoscaling, checkName, checkProject, deploymentNameTaken, deploymentsOf, findDeployment, findEndpoint, parseModelRef } from '../refs.ts';
import { acceptDeployment, deploymentView, insertDeployment, mountsOf, policyColumns, releaseAll } from '../rows.ts';
import { scaledToZero, splitOf, trafficSteered } from '../traffic.ts';
import { deploymentWire, listWire } from '../wire.ts';

/**
 * What a deployment list's `filter` and `orderBy` read: `name` (bare, or as `<project_slug>/<endpoint>/<name>`),
 * `state`, `model` (compared as model ids, whatever reference names them) and the instants.
 */
function deploymentFields(projectId: string, qualifier: string): Fields<Deployment> {
  return {
    name: { kind: 'string', get: (d) => d.name, value: (v) => unqualified(v, qualifier) },
    state: { kind: 'enum', get: (d) => d.state, values: deploymentMachine.states, orderable: false },
    model: { kind: 'string', get: (d) => d.modelId, value: (v) => parseModelRef(projectId, v).id || null, orderable: false },
    created_at: { kind: 'time', get: (d) => Number(d.createdAt) },
    updated_at: { kind: 'time', get: (d) => Number(d.updatedAt) },
  };
}

export async function listDeployments(ctx: Context<'listDeployments'>) {
  const projectId = checkProject(ctx);
  const e = await findEndpoint(ctx.db.prisma, projectId, ctx.params.endpointId);
  const all = await deploymentsOf(ctx.db.prisma, e.id);
  const p = listPage(all, v2Query(ctx.query), { ...V2_LIST, fields: deploymentFields(projectId, `${ctx.identity.projectSlug}/${e.name}/`) });
  const mounts = await mountsOf(
    ctx.db.prisma,
    p.rows.map((d) => d.id),
  );
  return listWire(
    p.rows.map((d) => deploymentWire(d, e, all, ctx, mounts.get(d.id)!)),
    p.next,
  );
}

/** Thrown out of a write transaction to undo it (validateOnly), carrying the answer computed before the rollback. */
class RolledBack {
  constructor(readonly preview: Awaited<ReturnType<typeof deploymentView>>) {}
}

export async function createDeployment(ctx: Context<'createDeployment'>) {
  const projectId = checkProject(ctx);
  const { db, body } = ctx;
  await findEndpoint(db.prisma, projectId, ctx.params.endpointId);
  const request = await acceptDeployment(db.prisma, projectId, body);
  try {
    const created = await uniquely(
      () =>
        db.write(async (tx) => {
          const e = await findEndpoint(tx, projectId, ctx.params.endpointId);
          const d = await insertDeployment(tx, ctx, { projectId, endpointId: e.id, ...request });
          // validateOnly runs the very same checks and writes, then rolls them back: the answer is the preview.
          if (ctx.query.validateOnly) throw new RolledBack(await deploymentView(tx, d, ctx));
          return d;
        }),
      () => deploymentNameTaken(request.name),
    );
    return deploymentView(db.prisma, created, ctx);
  } catch (err) {
    if (err instanceof RolledBack) return err.preview;
    throw err;
  }
}

export async function getDeployment(ctx: Context<'getDeployment'>) {
  const projectId = checkProject(ctx);
  return deploymentView(ctx.db.prisma, await findDeployment(ctx.db.prisma, projectId, ctx.params.endpointId, ctx.params.deploymentId), ctx);
}

/**
 * What an autoscaling change does: to 0 replicas, `stop` (a deployment the autoscaler scaled to zero is already
 * stopped); from a stopped, failed or stopping deployment, `start` (provisioning anew); a READY deployment is resized
 * in place on its hardware (growing needs free GPUs there): to its minimum, or, when it follows metrics, to the
 * replicas it runs kept within the new bounds.
 */
async function rescale(ctx: Context<'updateDeployment'>, tx: Tx, d: Deployment, wanted: { minReplicas: number; maxReplicas: number }, metrics: boolean) {
  let replicas = desiredReplicas(wanted);
  if (replicas === 0 && scaledToZero(d)) return { event: null, data: { message: 'Stopped.' } };
  if (replicas === 0) {
    const stopping = d.state === 'DEPLOYMENT_STATE_READY';
    return { event: 'stop' as DeploymentEvent, data: stopping ? { message: 'Stopping replicas.' } : { message: 'Stopped.', readyReplicas: 0 } };
  }
  if (['DEPLOYMENT_STATE_STOPPED', 'DEPLOYMENT_STATE_FAILED', 'DEPLOYMENT_STATE_STOPPING'].includes(d.state)) {
    return { event: 'start' as DeploymentEvent, data: { hardwareId: null, readyReplicas: 0, message: 'Provisioning replicas.' } };
  }
  if (d.state === 'DEPLOYMENT_STATE_READY') {
    if (metrics) replicas = Math.min(wanted.maxReplicas, Math.max(replicas, d.readyReplicas));
    const delta = replicas - d.readyReplicas;
    const grown = { projectId: d.projectId, hardwareId: d.hardwareId!, replicas: delta, ownerKind: DEPLOYMENT_OWNER, ownerId: d.id } as const;
    if (delta > 0 && !(await reserveIfFree(tx, ctx.clock, grown))) {
      throw apiError(409, 'insufficient_capacity', `Not enough free ${d.hardwareId} capacity for ${delta} more replica(s).`, 'autoscaling.minReplicas');
    }
    if (delta < 0) await release(tx, ctx.clock, DEPLOYMENT_OWNER, d.id, -delta);
    return { event: null, data: { readyReplicas: replicas, message: `${replicas} replica(s) ready on ${d.hardwareId}.` } };
  }
  return { event: null, data: {} };
}

export async function updateDeployment(ctx: Context<'updateDeployment'>) {
  const projectId = checkProject(ctx);
  const { db, clock } = ctx;
  const body = masked(ctx.body, ctx.query.updateMask, ['name', 'autoscaling']);
  if (body.name !== undefined) checkName(body.name, 'name');
  if (body.autoscaling) checkPolicy(body.autoscaling);
  const updated = await uniquely(
    () =>
      db.write(async (tx) => {
        const d = await findDeployment(tx, projectId, ctx.params.endpointId, ctx.params.deploymentId);
        checkEtag(ctx.body.etag, d.etag);
        if (body.name !== undefined && body.name !== d.name && (await tx.deployment.findFirst({ where: { endpointId: d.endpointId, name: body.name } }))) {
          throw deploymentNameTaken(body.name);
        }
        let data: Partial<Deployment> = { name: body.name ?? d.name };
        let event: DeploymentEvent | null = null;
        const a = body.autoscaling;
        // An omitted field keeps its current value (the official client's contract); only the bounds move replicas.
        if (a) data = { ...data, ...policyColumns(a, d) };
        if (a && (a.minReplicas !== undefined || a.maxReplicas !== undefined)) {
          const wanted = { minReplicas: a.minReplicas ?? d.minReplicas, maxReplicas: a.maxReplicas ?? d.maxReplicas };
          checkAutoscaling(wanted, 'autoscaling.');
          const change = await rescale(ctx, tx, d, wanted, metricsOf({ ...d, ...data } as Deployment).length > 0);
          event = change.event;
          data = { ...data, ...wanted, ...change.data };
        }
        const next = event
          ? await transition(tx, ctx, deployments, d, event, { data })
          : await tx.deployment.update({ where: { id: d.id }, data: { ...data, etag: newEtag(), updatedAt: instant(clock) } });
        await ensureAutoscaler(tx, ctx, next);
        await recordDeploymentChange(tx, clock, 'api', d, next);
        return next;
      }),
    () => deploymentNameTaken(body.name!),
  );
  return deploymentView(db.prisma, updated, ctx);
}

export async function deleteDeployment(ctx: Context<'deleteDeployment'>) {
  const projectId = checkProject(ctx);
  await ctx.db.write(async (tx) => {
    const d = await findDeployment(tx, projectId, ctx.params.endpointId, ctx.params.deploymentId);
    checkEtag(ctx.query.etag, d.etag);
    const e = await tx.dedicatedEndpoint.findUniqueOrThrow({ where: { id: d.endpointId } });
    const split = splitOf(e);
    if (e.trafficOwner && split.some((s) => s.deploymentId === d.id)) throw trafficSteered(e, 'deploymentId');
    if (split.some((s) => s.deploymentId === d.id && s.weight > 0)) {
      throw conflict(
        `Deployment '${d.id}' still receives traffic; route the endpoint's traffic elsewhere first.`,
        'deployment_receives_traffic',
        'deploymentId',
      );
    }
    if (split.some((s) => s.deploymentId === d.id)) {
      const next = await tx.dedicatedEndpoint.update({
        where: { id: e.id },
        data: { trafficSplit: JSON.stringify(split.filter((s) => s.deploymentId !== d.id)), etag: newEtag(), updatedAt: instant(ctx.clock) },
      });
      await recordEndpointChange(tx, ctx.clock, e, next);
    }
    await releaseAll(tx, ctx.clock, d.id);
    await tx.deploymentAdapter.deleteMany({ where: { deploymentId: d.id } });
    await tx.deployment.delete({ where: { id: d.id } });
    await recordDeploymentChange(tx, ctx.clock, 'api', d, null);
  });
  return {};
}
