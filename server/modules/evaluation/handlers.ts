// Module `evaluation`: evaluation jobs, evaluated by the runner (machine.ts, evaluate.ts) through the judge engines.
import { badRequest } from '../../core/errors.ts';
import { pageSize } from '../../http/list.ts';
import { owned } from '../../http/scope.ts';
import type { Context } from '../types.ts';
import { acceptEvaluation, insertEvaluation, serverlessJudges } from './create.ts';
import { MODEL_SOURCES, STATUSES } from './rules.ts';
import { evaluationStatusWire, evaluationWire } from './wire.ts';

export async function createEvaluationJob(ctx: Context<'createEvaluationJob'>) {
  const { db, identity, body } = ctx;
  await acceptEvaluation(db, ctx.config, identity, body);
  const job = await db.write((tx) => insertEvaluation(tx, ctx, identity.projectId, body));
  return { workflow_id: job.id, status: 'pending' as const };
}

export async function getAllEvaluationJobs(ctx: Context<'getAllEvaluationJobs'>) {
  const { status } = ctx.query;
  const limit = pageSize(ctx.query.limit, 'limit', 10);
  if (status !== undefined && !(STATUSES as readonly string[]).includes(status)) {
    throw badRequest(`'status' must be one of ${STATUSES.join(', ')} (got '${status}').`, 'status');
  }
  const rows = await ctx.db.prisma.evaluationJob.findMany({
    where: { projectId: ctx.identity.projectId, ...(status !== undefined && { status }) },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: limit,
  });
  return rows.map(evaluationWire);
}

export async function getModelList(ctx: Context<'getModelList'>) {
  const source = ctx.query.model_source ?? 'all';
  if (!(MODEL_SOURCES as readonly string[]).includes(source))
    throw badRequest(`'model_source' must be one of ${MODEL_SOURCES.join(', ')} (got '${source}').`, 'model_source');
  const { db, identity } = ctx;
  const serverless = source === 'all' || source === 'serverless' ? await serverlessJudges(db.prisma) : [];
  const dedicated =
    source === 'all' || source === 'dedicated'
      ? [
          ...(await db.prisma.dedicatedEndpoint.findMany({ where: { projectId: identity.projectId }, select: { name: true } })),
          ...(await db.prisma.v1Endpoint.findMany({ where: { projectId: identity.projectId }, select: { name: true } })),
        ]
          .map((e) => `${identity.projectSlug}/${e.name}`)
          .sort()
      : [];
  return { model_list: [...serverless, ...dedicated] };
}

const find = (ctx: Context<'getEvaluationJobDetails'> | Context<'getEvaluationJobStatusAndResults'>) =>
  owned(ctx.db.prisma.evaluationJob, ctx.identity.projectId, { id: ctx.params.id }, { what: 'evaluation job', id: ctx.params.id, param: 'id' });

export async function getEvaluationJobDetails(ctx: Context<'getEvaluationJobDetails'>) {
  return evaluationWire(await find(ctx));
}

export async function getEvaluationJobStatusAndResults(ctx: Context<'getEvaluationJobStatusAndResults'>) {
  return evaluationStatusWire(await find(ctx));
}
