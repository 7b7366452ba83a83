// Module `fine-tuning`: create (create.ts, rules.ts), list, get, events, checkpoints, cancel, delete, estimate-price,
// metrics, download (download.ts), supported models and limits. The runner moves jobs (machine.ts). Cancel, estimate-price
// and metrics also serve the requirements' unprefixed paths (`...Unprefixed` operations, at the end).
import { iso } from '../../core/clock.ts';
import { apiError, badRequest, notFound } from '../../core/errors.ts';
import { tar, tarLength } from '../../core/tar.ts';
import type { Db, Tx } from '../../db/index.ts';
import { reply } from '../../http/reply.ts';
import { owned } from '../../http/scope.ts';
import { checkSignature, filePath, findFile, projectIdentity, type Report, signedUrl } from '../files/index.ts';
import { findModel } from '../models/index.ts';
import type { Context, Services, SignedCheck } from '../types.ts';
import { acceptFineTune, checkpointSource, insertFineTune, supportedModel } from './create.ts';
import { archiveMembers, type CheckpointType } from './download.ts';
import { loadDataset, moveFineTune } from './machine.ts';
import { firstSamples, preview } from './preview.ts';
import { type Accepted, accept, fineTunable, limitsOf, priceOf } from './rules.ts';
import { forgetTokenized, TOKENIZED_CONTENT_TYPE, tokenizedArchive, tokenizedName } from './tokenized.ts';
import { plan, runTokens } from './training.ts';
import { checkpointWire, eventWire, fineTuneTruncatedWire, fineTuneWire } from './wire.ts';

export async function createFineTune(ctx: Context<'createFineTune'>) {
  const { db, identity, body } = ctx;
  const accepted = await acceptFineTune(db.prisma, identity.projectId, body);
  const { job, events } = await db.write(async (tx) => {
    const job = await insertFineTune(tx, ctx, { projectId: identity.projectId, projectSlug: identity.projectSlug, userId: identity.apiKeyId }, accepted);
    return { job, events: await tx.fineTuneEvent.findMany({ where: { jobId: job.id }, orderBy: { id: 'asc' } }) };
  });
  return fineTuneTruncatedWire(job, events);
}

const eventsOf = (db: Db | Tx, jobId: string) => db.fineTuneEvent.findMany({ where: { jobId }, orderBy: { id: 'asc' } });

const find = (ctx: { db: Services['db']; identity: { projectId: string }; params: { id: string } }) =>
  owned(ctx.db.prisma.fineTune, ctx.identity.projectId, { id: ctx.params.id }, { what: 'fine-tuning job', id: ctx.params.id, param: 'id' });

export async function listFineTunes(ctx: Context<'listFineTunes'>) {
  const jobs = await ctx.db.prisma.fineTune.findMany({ where: { projectId: ctx.identity.projectId }, orderBy: { id: 'desc' } });
  const events = await ctx.db.prisma.fineTuneEvent.findMany({ where: { jobId: { in: jobs.map((j) => j.id) } }, orderBy: { id: 'asc' } });
  return {
    object: 'list' as const,
    data: jobs.map((j) =>
      fineTuneTruncatedWire(
        j,
        events.filter((e) => e.jobId === j.id),
      ),
    ),
  };
}

export async function retrieveFineTune(ctx: Context<'retrieveFineTune'>) {
  const job = await find(ctx);
  return fineTuneWire(job, await eventsOf(ctx.db.prisma, job.id));
}

export async function listFineTuneEvents(ctx: Context<'listFineTuneEvents'>) {
  const job = await find(ctx);
  return { object: 'list' as const, data: (await eventsOf(ctx.db.prisma, job.id)).map(eventWire) };
}

export async function listFineTuneCheckpoints(ctx: Context<'listFineTuneCheckpoints'>) {
  const job = await find(ctx);
  const rows = await ctx.db.prisma.fineTuneCheckpoint.findMany({ where: { jobId: job.id }, orderBy: [{ step: 'desc' }, { type: 'asc' }] });
  return { object: 'list' as const, data: rows.map((c) => checkpointWire(c, job.id)) };
}

export async function cancelFineTune(ctx: Context<'cancelFineTune' | 'cancelFineTuneUnprefixed'>) {
  const job = await find(ctx);
  return ctx.db.write(async (tx) => {
    const current = await tx.fineTune.findUniqueOrThrow({ where: { id: job.id } });
    const moved = await moveFineTune(tx, ctx, current, 'cancel', {}, [
      current.status === 'running'
        ? { type: 'cancel_requested', message: 'Cancellation requested.' }
        : { type: 'job_stopped', message: 'Job cancelled before training started.' },
    ]);
    return fineTuneTruncatedWire(moved, await eventsOf(tx, job.id));
  });
}

export async function deleteFineTune(ctx: Context<'deleteFineTune'>) {
  const job = await find(ctx);
  await ctx.db.write(async (tx) => {
    await tx.fineTuneEvent.deleteMany({ where: { jobId: job.id } });
    await tx.fineTuneCheckpoint.deleteMany({ where: { jobId: job.id } });
    await tx.fineTune.deleteMany({ where: { id: job.id, projectId: job.projectId } });
  });
  await forgetTokenized(ctx, job);
  return { message: `Fine-tuning job ${job.id} deleted.` };
}

/** Dollars of credit the project has left: FINE_TUNE_CREDIT_LIMIT less its jobs' prices (cancelled and failed jobs cost nothing). */
async function remainingCredit(ctx: Context<'estimateFineTunePrice' | 'estimateFineTunePriceUnprefixed'>): Promise<number> {
  const spent = await ctx.db.prisma.fineTune.aggregate({
    where: { projectId: ctx.identity.projectId, status: { notIn: ['cancelled', 'error'] } },
    _sum: { totalPriceCents: true },
  });
  return ctx.config.fineTuneCreditLimit - (spent._sum.totalPriceCents ?? 0) / 100;
}

async function supportedModels(db: Db) {
  return (await db.model.findMany({ where: { projectId: null }, orderBy: { id: 'asc' } })).filter(fineTunable);
}

export async function estimateFineTunePrice(ctx: Context<'estimateFineTunePrice' | 'estimateFineTunePriceUnprefixed'>) {
  const { body, identity } = ctx;
  const model = body.model ? await supportedModel(ctx.db.prisma, identity.projectId, body.model, 'model') : (await supportedModels(ctx.db.prisma))[0]!;
  // The job's own parameters and rules: what creation would refuse, the estimate refuses alike.
  const accepted = accept(body, model);
  const train = await findFile(ctx, identity.projectId, body.training_file);
  if (!train) throw apiError(404, 'file_not_found', `No file '${body.training_file}' was found.`, 'training_file');
  const validation = body.validation_file ? await findFile(ctx, identity.projectId, body.validation_file) : null;
  if (body.validation_file && !validation) throw apiError(404, 'file_not_found', `No file '${body.validation_file}' was found.`, 'validation_file');
  await checkpointSource(ctx.db.prisma, identity.projectId, body.from_checkpoint);
  const unavailable = (reason: 'train_file_not_validated' | 'eval_file_not_validated' | 'train_file_invalid' | 'eval_file_invalid' | 'multimodal_dataset') => ({
    estimation_available: false as const,
    unavailable_reason: reason,
  });
  for (const [f, which] of [
    [train, 'train'],
    [validation, 'eval'],
  ] as const) {
    if (!f) continue;
    if (f.status === 'PENDING') return unavailable(`${which}_file_not_validated`);
    if (f.status !== 'COMPLETED' || f.purpose !== 'fine-tune') return unavailable(`${which}_file_invalid`);
    if ((JSON.parse(f.report!) as Report).dataset_is_multimodal) return unavailable('multimodal_dataset');
  }
  // The tokens the job would count over its whole run: the same datasets, plan and steps as training (machine.ts).
  const trainSet = await loadDataset(ctx, train.id, accepted.maxSeqLength);
  const validationSet = validation ? await loadDataset(ctx, validation.id, accepted.maxSeqLength) : null;
  const run = plan(trainSet.tokens.length, accepted.batchSize, accepted.nEpochs, accepted.nEvals, accepted.nCheckpoints);
  const tokens = runTokens(trainSet, validationSet, run, accepted.packing);
  const price = priceOf(model, accepted, tokens.train + tokens.eval);
  const limit = await remainingCredit(ctx);
  return {
    estimation_available: true as const,
    estimated_total_price: Math.round(price * 1e6) / 1e6,
    allowed_to_proceed: price <= limit,
    user_limit: Math.round(limit * 100) / 100,
    estimated_train_token_count: tokens.train,
    estimated_eval_token_count: tokens.eval,
  };
}

export async function previewFineTune(ctx: Context<'previewFineTune'>) {
  const { body, identity } = ctx;
  const model = await supportedModel(ctx.db.prisma, identity.projectId, body.model, 'model');
  const trainOnInputs = body.train_on_inputs ?? false;
  const f = await findFile(ctx, identity.projectId, body.training_file);
  if (!f) throw apiError(404, 'file_not_found', `No file '${body.training_file}' was found.`, 'training_file');
  if (f.status === 'PENDING')
    throw badRequest(`File '${f.id}' is still being validated: preview it once its processing_status is COMPLETED.`, 'training_file', 'file_not_ready');
  if (f.status !== 'COMPLETED' || f.purpose !== 'fine-tune')
    throw badRequest(`File '${f.id}' is not a valid fine-tuning dataset (${f.purpose}, ${f.status}).`, 'training_file', 'file_invalid');
  if (f.fileType !== 'jsonl')
    throw badRequest(
      `File '${f.id}' is ${f.fileType}: pre-tokenized rows have no preview; the preview takes JSON Lines datasets.`,
      'training_file',
      'preview_not_available',
    );
  const maxSeq = limitsOf(model).max_seq_length_sft;
  const { format, rows } = preview(await firstSamples(filePath(ctx.config, f), body.top_k ?? 5), trainOnInputs, maxSeq);
  return { model: model.id, dataset_format: format, max_seq_length: maxSeq, train_on_inputs: trainOnInputs, rows };
}

export async function getFineTuneMetrics(ctx: Context<'getFineTuneMetrics' | 'getFineTuneMetricsUnprefixed'>) {
  const job = await find(ctx);
  const q = ctx.query;
  let rows: Record<string, number>[] = job.metrics ? JSON.parse(job.metrics) : [];
  if (q.resolution !== undefined && q.resolution < 1) throw badRequest("'resolution' must be at least 1.", 'resolution');
  const loggedAt = (step: number) => Number(job.startedAt ?? job.createdAt) + step * 1000;
  const from = q.logged_at_from === undefined ? undefined : Date.parse(q.logged_at_from);
  const to = q.logged_at_to === undefined ? undefined : Date.parse(q.logged_at_to);
  rows = rows.filter((r) => {
    const step = r['train/global_step']!;
    return (
      (q.global_step_from === undefined || step >= q.global_step_from) &&
      (q.global_step_to === undefined || step <= q.global_step_to) &&
      (from === undefined || loggedAt(step) >= from) &&
      (to === undefined || loggedAt(step) <= to)
    );
  });
  if (q.resolution !== undefined && rows.length > q.resolution) {
    const keep = new Set(Array.from({ length: q.resolution }, (_, i) => Math.round((i * (rows.length - 1)) / Math.max(1, q.resolution! - 1))));
    rows = rows.filter((r, i) => keep.has(i) || 'eval/loss' in r);
  }
  return { metrics: rows };
}

export async function downloadFineTune(ctx: Context<'downloadFineTune'>) {
  const { ft_id: id, checkpoint_step: step, checkpoint } = ctx.query;
  const job = await owned(ctx.db.prisma.fineTune, ctx.identity.projectId, { id }, { what: 'fine-tuning job', id, param: 'ft_id' });
  const lora = (JSON.parse(job.params) as Accepted).trainingType.type === 'Lora';
  if (checkpoint === 'adapter' && !lora)
    throw badRequest(`Job '${job.id}' trained the full model, so it has no adapter: ask for 'merged' or 'model_output_path'.`, 'checkpoint');
  const type: CheckpointType = checkpoint ?? (lora ? 'merged' : 'model_output_path');
  if (step !== undefined && step < 0)
    throw badRequest(`'checkpoint_step' must be a step of the job's checkpoint list, or 0 for the final model (got ${step}).`, 'checkpoint_step');
  let saved: Awaited<ReturnType<typeof ctx.db.prisma.fineTuneCheckpoint.findFirstOrThrow>> | undefined;
  if (!step) {
    if (job.status !== 'completed') {
      throw badRequest(
        `Job '${job.id}' is ${job.status}: only a completed job has a final model (an earlier checkpoint is asked for by its checkpoint_step).`,
        'ft_id',
        'fine_tune_not_completed',
      );
    }
    saved = await ctx.db.prisma.fineTuneCheckpoint.findFirstOrThrow({ where: { jobId: job.id, type: 'Final' } });
  } else {
    // An intermediate checkpoint and the final model (early stopping's best step) may share a step: the final wins.
    const rows = await ctx.db.prisma.fineTuneCheckpoint.findMany({ where: { jobId: job.id, step }, orderBy: { type: 'asc' } });
    saved = rows.find((c) => c.type === 'Final') ?? rows[0];
    if (!saved)
      throw apiError(
        404,
        'checkpoint_not_found',
        `Job '${job.id}' has no checkpoint at step ${step}: see GET /v1/fine-tunes/${job.id}/checkpoints.`,
        'checkpoint_step',
      );
  }
  const members = archiveMembers(job, saved, type);
  return reply.stream(tar(members), 'application/octet-stream', {
    length: tarLength(members),
    headers: { 'Content-Disposition': `attachment; filename=${job.id}-${step ? step : 'final'}-${type}.tar` },
  });
}

export async function listFineTuneModels(ctx: Context<'listFineTuneModels'>) {
  const models = await supportedModels(ctx.db.prisma);
  return { models: models.map((m) => m.id), detailed_models: models.map((m) => ({ name: m.id, parent_model: m.architecture! })) };
}

export async function getFineTuneModelLimits(ctx: Context<'getFineTuneModelLimits'>) {
  const model = await findModel(ctx.db.prisma, ctx.identity.projectId, ctx.query.model_name);
  if (!model || !fineTunable(model)) throw apiError(404, 'model_not_found', `'${ctx.query.model_name}' is not a model that can be fine-tuned.`, 'model_name');
  return limitsOf(model);
}

// The requirements' paths without /v1 (POST /fine-tunes/{id}/cancel, POST /fine-tunes/estimate-price,
// GET /fine-tunes/{id}/metrics): operations of their own, each answered by its /v1 form's handler.
export async function cancelFineTuneUnprefixed(ctx: Context<'cancelFineTuneUnprefixed'>) {
  return cancelFineTune(ctx);
}

export async function estimateFineTunePriceUnprefixed(ctx: Context<'estimateFineTunePriceUnprefixed'>) {
  return estimateFineTunePrice(ctx);
}

export async function getFineTuneMetricsUnprefixed(ctx: Context<'getFineTuneMetricsUnprefixed'>) {
  return getFineTuneMetrics(ctx);
}

/** How long a tokenized dataset's URL works. */
const TOKENIZED_URL_MS = 3_600_000;
const tokenizedPath = (id: string) => `/v1/fine-tunes/${encodeURIComponent(id)}/tokenized-dataset`;

export async function retrieveFineTuneTokenizedDataset(ctx: Context<'retrieveFineTuneTokenizedDataset'>) {
  const job = await find(ctx);
  const { size } = await tokenizedArchive(ctx, job);
  const { url, expiresAt } = await signedUrl(ctx, ctx.origin, 'GET', tokenizedPath(job.id), TOKENIZED_URL_MS);
  return { url, filename: tokenizedName(job), size, content_type: TOKENIZED_CONTENT_TYPE, expires_at: iso(BigInt(expiresAt)) };
}

/** The signed URL's check: its signature, then the job (whose project the download acts as). */
export const checkTokenizedUrl: SignedCheck = async (services, { params, query }) => {
  await checkSignature(services, `GET ${tokenizedPath(params.id)}`, query, `GET /v1/fine-tunes/${params.id}/download-tokenized-dataset`);
  const job = await services.db.prisma.fineTune.findUnique({ where: { id: params.id } });
  if (!job) throw notFound('fine-tuning job', params.id, 'id');
  return projectIdentity(services, job.projectId);
};

export async function downloadFineTuneTokenizedDataset(ctx: Context<'downloadFineTuneTokenizedDataset'>) {
  const job = await find(ctx);
  const { path } = await tokenizedArchive(ctx, job);
  return reply.file(path, TOKENIZED_CONTENT_TYPE, { headers: { 'Content-Disposition': `attachment; filename=${tokenizedName(job)}` } });
}
