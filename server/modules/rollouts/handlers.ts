// Module `rollouts`: an endpoint's rollouts (spec/tags/rollouts.yaml). Each operation checks its paths (the
// caller's project and endpoint), then makes its move whole in one transaction (steps.ts).
import type { Deployment, Rollout } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { badRequest, conflict } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Db, Tx } from '../../db/index.ts';
import { checkEtag, newEtag } from '../../http/etag.ts';
import { listPage } from '../../http/list.ts';
import { checkProject, owned } from '../../http/scope.ts';
import { trafficSteered } from '../dedicated/index.ts';
import type { Context } from '../types.ts';
import { rolloutMachine } from './machine.ts';
import { type Plan, planOf, type RolloutRequest } from './rules.ts';
import { cancel, pause, promote, resume, start, stepsOf } from './steps.ts';
import { listWire, rolloutWire } from './wire.ts';

const READY = 'DEPLOYMENT_STATE_READY';
const ACTIVE = ['ROLLOUT_STATE_PENDING', 'ROLLOUT_STATE_RUNNING', 'ROLLOUT_STATE_PAUSED'];

type Paths = { params: { projectId: string; endpointId: string }; identity: { projectId: string } };

const endpointOf = (db: Db | Tx, ctx: Paths) =>
  owned(db.dedicatedEndpoint, checkProject(ctx), { id: ctx.params.endpointId }, { what: 'endpoint', id: ctx.params.endpointId, param: 'endpointId' });

const rolloutOf = (db: Db | Tx, ctx: Paths & { params: { id: string } }) =>
  owned(db.rollout, ctx.identity.projectId, { id: ctx.params.id, endpointId: ctx.params.endpointId }, { what: 'rollout', id: ctx.params.id, param: 'id' });

const view = async (db: Db | Tx, r: Rollout) => rolloutWire(r, await stepsOf(db, r.id));

/** The request's deployments (of this endpoint, and two different ones) and its plan; 400 naming the field otherwise. */
async function checked(db: Db | Tx, ctx: Paths & Pick<Context<'createRollout'>, 'config'>, body: RolloutRequest) {
  const e = await endpointOf(db, ctx);
  const plan = planOf(body, ctx.config);
  const deployment = async (id: string, param: string): Promise<Deployment> => {
    const d = await db.deployment.findFirst({ where: { id, endpointId: e.id } });
    if (!d) throw badRequest(`'${id}' is not a deployment of endpoint '${e.name}'.`, param, 'deployment_not_found');
    return d;
  };
  const source = await deployment(body.sourceDeploymentId, 'sourceDeploymentId');
  const target = await deployment(body.targetDeploymentId, 'targetDeploymentId');
  if (source.id === target.id) throw badRequest('The target must be another deployment than the source.', 'targetDeploymentId', 'same_deployment');
  return { e, plan, source, target };
}

export async function listRollouts(ctx: Context<'listRollouts'>) {
  const e = await endpointOf(ctx.db.prisma, ctx);
  const all = await ctx.db.prisma.rollout.findMany({ where: { endpointId: e.id } });
  const filter = ctx.query.filter;
  const kept = filter ? all.filter((r) => ACTIVE.includes(r.state) === (filter === 'ROLLOUT_FILTER_ACTIVE')) : all;
  const page = listPage(kept, { size: ctx.query.limit, cursor: ctx.query.after }, { fields: {}, params: { size: 'limit', cursor: 'after' } });
  const data = [];
  for (const r of page.rows) data.push(await view(ctx.db.prisma, r));
  return listWire(data, page.next);
}

async function insert(tx: Tx, ctx: Context<'createRollout'>, plan: Plan, projectId: string): Promise<Rollout> {
  const now = instant(ctx.clock);
  const r = await tx.rollout.create({
    data: {
      id: newId('ro', ctx.clock.now()),
      projectId,
      endpointId: ctx.params.endpointId,
      sourceDeploymentId: ctx.body.sourceDeploymentId,
      targetDeploymentId: ctx.body.targetDeploymentId,
      strategy: plan.strategy,
      state: 'ROLLOUT_STATE_PENDING',
      spec: JSON.stringify(plan.spec),
      stepMs: plan.stepMs,
      etag: newEtag(),
      createdAt: now,
      updatedAt: now,
    },
  });
  for (const [i, s] of plan.steps.entries()) {
    await tx.rolloutStep.create({
      data: { id: newId('ros', ctx.clock.now()), projectId, rolloutId: r.id, stepIndex: i, trafficPercent: s.traffic, state: 'ROLLOUT_STEP_STATE_PENDING' },
    });
  }
  return r;
}

export async function createRollout(ctx: Context<'createRollout'>) {
  const projectId = checkProject(ctx);
  const r = await ctx.db.write(async (tx) => {
    const { e, plan } = await checked(tx, ctx, ctx.body);
    if (e.trafficOwner) throw trafficSteered(e, null);
    return insert(tx, ctx, plan, projectId);
  });
  return view(ctx.db.prisma, r);
}

export async function previewRolloutDefaults(ctx: Context<'previewRolloutDefaults'>) {
  const { e, plan, source, target } = await checked(ctx.db.prisma, ctx, ctx.body);
  // The checks of createRollout, the steered split's included: what it would refuse, the preview refuses.
  if (e.trafficOwner) throw trafficSteered(e, null);
  const replicas = (d: Deployment) => (d.state === READY ? d.readyReplicas : 0);
  const warnings = [
    ...(target.state === READY ? [] : [{ code: 'target_not_ready', message: `Target deployment '${target.id}' is ${target.state}; start needs it READY.` }]),
    ...(plan.spec.metrics?.length ? [] : [{ code: 'no_metric_rules', message: 'No metric rule checks the steps: every step passes when its time is up.' }]),
  ];
  return {
    spec: plan.spec,
    estimatedEffectiveSteps: plan.steps,
    frozenPair: false,
    estimatedSeedPercent: plan.steps[0]!.traffic,
    sourceReplicas: replicas(source),
    targetReplicas: replicas(target),
    targetMinReplicas: target.minReplicas,
    targetMaxReplicas: target.maxReplicas,
    warnings,
  };
}

export async function getRollout(ctx: Context<'getRollout'>) {
  await endpointOf(ctx.db.prisma, ctx);
  return view(ctx.db.prisma, await rolloutOf(ctx.db.prisma, ctx));
}

export async function deleteRollout(ctx: Context<'deleteRollout'>) {
  await ctx.db.write(async (tx) => {
    await endpointOf(tx, ctx);
    const r = await rolloutOf(tx, ctx);
    checkEtag(ctx.query.etag, r.etag);
    if (r.state === 'ROLLOUT_STATE_RUNNING' || r.state === 'ROLLOUT_STATE_PAUSED') {
      throw conflict(`Rollout '${r.id}' is ${r.state}; cancel it before deleting it.`, 'rollout_in_progress');
    }
    await tx.rolloutStep.deleteMany({ where: { rolloutId: r.id } });
    await tx.rollout.delete({ where: { id: r.id } });
  });
  return {};
}

/** One caller's move: the paths checked, the etag compared, the move made, the rollout answered. */
async function move(
  ctx: Paths & { params: { id: string } } & Pick<Context<'startRollout'>, 'db' | 'clock' | 'config'>,
  etag: string | undefined,
  act: (tx: Tx, r: Rollout) => Promise<Rollout>,
) {
  const r = await ctx.db.write(async (tx) => {
    await endpointOf(tx, ctx);
    const found = await rolloutOf(tx, ctx);
    checkEtag(etag, found.etag);
    return act(tx, found);
  });
  return view(ctx.db.prisma, r);
}

export const startRollout = (ctx: Context<'startRollout'>) =>
  move(ctx, undefined, async (tx, r) => {
    rolloutMachine.next(r.state, 'start');
    const e = await tx.dedicatedEndpoint.findUniqueOrThrow({ where: { id: r.endpointId } });
    if (e.trafficOwner && e.trafficOwner !== `rollout:${r.id}`) throw trafficSteered(e, null);
    const pair = await tx.deployment.findMany({ where: { id: { in: [r.sourceDeploymentId, r.targetDeploymentId] }, endpointId: r.endpointId } });
    const target = pair.find((d) => d.id === r.targetDeploymentId);
    if (pair.length < 2) throw conflict(`The rollout's source or target deployment was deleted; create another rollout.`, 'deployment_not_found');
    if (target?.state !== READY)
      throw conflict(`Target deployment '${r.targetDeploymentId}' is ${target?.state}; it must be READY to start.`, 'target_not_ready');
    return start(tx, ctx, r);
  });

export const pauseRollout = (ctx: Context<'pauseRollout'>) => move(ctx, ctx.body.etag, (tx, r) => pause(tx, ctx, r, ctx.body.reason));
export const resumeRollout = (ctx: Context<'resumeRollout'>) => move(ctx, ctx.body.etag, (tx, r) => resume(tx, ctx, r));
export const promoteRollout = (ctx: Context<'promoteRollout'>) => move(ctx, ctx.body.etag, (tx, r) => promote(tx, ctx, r));
export const cancelRollout = (ctx: Context<'cancelRollout'>) => move(ctx, ctx.body.etag, (tx, r) => cancel(tx, ctx, r, ctx.body.reason, ctx.body.disposition));
