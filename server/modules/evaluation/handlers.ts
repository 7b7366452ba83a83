// Module `evaluation`: evaluation jobs, evaluated by the runner (machine.ts, evaluate.ts) through the judge engines.
import { instant } from '../../core/clock.ts';
import { badRequest } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Database } from '../../db/index.ts';
import { pageSize } from '../../http/list.ts';
import { owned } from '../../http/scope.ts';
import { enter } from '../../runner/progress.ts';
import { resolveTarget } from '../inference/index.ts';
import type { Context } from '../types.ts';
import { inputExists } from './dataset.ts';
import { evaluationMachine, type StatusUpdate } from './machine.ts';
import { accept, MODEL_SOURCES, STATUSES } from './rules.ts';
import { evaluationStatusWire, evaluationWire } from './wire.ts';

/** The most jobs one list answers. */

/** The serverless models that judge: the catalogue's serverless chat models with the `judge` capability. */
async function serverlessJudges(db: Database): Promise<string[]> {
  const chat = await db.prisma.model.findMany({
    where: { projectId: null, serverless: true, type: 'chat' },
    select: { id: true, capabilities: true },
    orderBy: { id: 'asc' },
  });
  return chat.filter((m) => (JSON.parse(m.capabilities) as string[]).includes('judge')).map((m) => m.id);
}

export async function createEvaluationJob(ctx: Context<'createEvaluationJob'>) {
  const { db, clock, identity, body } = ctx;
  const p = body.parameters;
  await accept(
    body.type,
    p,
    async (source, model, role) => {
      if (source === 'serverless' && role === 'judge') return (await serverlessJudges(db)).includes(model);
      if ((source === 'dedicated') !== model.startsWith(`${identity.projectSlug}/`)) return false;
      // A model exists for the caller when inference could address it (a 503 "not ready now" still exists).
      return resolveTarget(db, identity, model, 'chat').then(
        () => true,
        (err) => err?.status === 503,
      );
    },
    ctx.config.urlFetch,
  );
  if (!(await inputExists(ctx, identity.projectId, p.input_data_file_path))) {
    throw badRequest(
      `No file '${p.input_data_file_path}' exists in this project: upload the input with POST /v1/files/upload.`,
      'parameters.input_data_file_path',
      'file_not_found',
    );
  }
  const now = instant(clock);
  const updates: StatusUpdate[] = [{ status: 'pending', message: 'The job was accepted.', at: Number(now) }];
  const job = await db.write(async (tx) => {
    const j = await tx.evaluationJob.create({
      data: {
        id: newId('eval', Number(now)).replace(/^eval_/, 'eval-'),
        projectId: identity.projectId,
        type: body.type,
        status: 'pending',
        parameters: JSON.stringify(p),
        statusUpdates: JSON.stringify(updates),
        createdAt: now,
        updatedAt: now,
      },
    });
    await enter(tx, ctx, evaluationMachine, { id: j.id, projectId: j.projectId, state: j.status });
    return j;
  });
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
  const serverless = source === 'all' || source === 'serverless' ? await serverlessJudges(db) : [];
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
