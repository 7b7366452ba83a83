// Module `rl`: one handler per operation of the RL tag. Each reads like the pipeline: parse (rules.ts) -> look up,
// scoped to the project -> check the state -> write (a machine's move, or an operation submitted: operations.ts) ->
// format (wire.ts), with the `x-rl-engine` header saying which engine and model the answer is about.
import type { RlOperation, RlSession } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { ApiError, badRequest, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Tx } from '../../db/index.ts';
import { cut, pageArgs, pageSize } from '../../http/list.ts';
import { reply } from '../../http/reply.ts';
import { owned } from '../../http/scope.ts';
import { enter, transition } from '../../runner/progress.ts';
import { checkSignature, projectIdentity, signedUrl } from '../files/index.ts';
import type { Context, Services, SignedCheck } from '../types.ts';
import { ACTIVE_SESSION, LIVE_RESOURCES, resourcesMachine, resourcesRows, sessionMachine, sessions } from './machine.ts';
import { abandonPending, checkpointFiles, engineHeader, engineNameFor, type OperationKind, sessionRow, submitOperation, WITHOUT_BYTES } from './operations.ts';
import {
  type AcceptedResources,
  acceptGradients,
  acceptLora,
  acceptLoss,
  acceptOptimStep,
  acceptResources,
  acceptSample,
  acceptSamples,
  LIMITS,
  PRICED_HARDWARE,
  pricePerHour,
  SAMPLING_DEFAULTS,
  SUPPORTED_MODELS,
} from './rules.ts';
import { listMeta, operationWire, resourcesWire, sessionWire } from './wire.ts';

const LIST_DEFAULT = 20;
/** How long a checkpoint file's URL works. */
const FILE_URL_TTL_MS = 3_600_000;

/** A 409 the official clients must not retry (they retry a 409 by default). */
const conflictOn = (param: string, code: string, message: string) =>
  new ApiError(409, code, message, param, 'invalid_request_error', { 'x-should-retry': 'false' });

const findResources = (ctx: Services & { identity: { projectId: string } }, id: string, param = 'model_resources_id') =>
  owned(ctx.db.prisma.rlModelResources, ctx.identity.projectId, { id }, { what: 'model resources', id, param });

/** The caller's session, without its engine bytes. */
const findSession = (ctx: Services & { identity: { projectId: string } }, id: string) =>
  owned(
    {
      findFirst: (args: { where: Record<string, unknown> }) => ctx.db.prisma.rlSession.findFirst({ ...args, omit: WITHOUT_BYTES }) as Promise<RlSession | null>,
    },
    ctx.identity.projectId,
    { id },
    { what: 'training session', id, param: 'session_id' },
  );

const checkpointsOf = (ctx: Services, sessionIds: string[]) =>
  ctx.db.prisma.rlCheckpoint.findMany({ where: { sessionId: { in: sessionIds } }, orderBy: { id: 'asc' }, omit: { bytes: true } });

/** A session in its wire shape, with its checkpoints, and the engine header. */
async function sessionReply(ctx: Services, s: RlSession) {
  const checkpoints = await checkpointsOf(ctx, [s.id]);
  return reply.json(sessionWire(s, checkpoints as never), { headers: engineHeader(ctx, s.baseModel, s.engine) });
}

// ---- model resources ----

export async function listModelResources(ctx: Context<'listModelResources'>) {
  const q = ctx.query;
  const size = pageSize(q.limit, 'limit', LIST_DEFAULT);
  const args = pageArgs(q.after, size, 'desc');
  const page = cut(
    await ctx.db.prisma.rlModelResources.findMany({
      ...args,
      where: {
        ...args.where,
        projectId: ctx.identity.projectId,
        ...(q.status?.length && { status: { in: q.status } }),
        ...(q.created_by !== undefined && { createdBy: q.created_by }),
      },
    }),
    size,
  );
  return { data: page.rows.map(resourcesWire), meta: listMeta(size, page.next) };
}

export async function createModelResources(ctx: Context<'createModelResources'>) {
  const a = acceptResources(ctx.body);
  const now = instant(ctx.clock);
  const r = await ctx.db.write(async (tx) => {
    const row = await tx.rlModelResources.create({
      data: {
        id: newId('mr', ctx.clock.now()),
        projectId: ctx.identity.projectId,
        baseModel: a.baseModel,
        loraEnabled: a.loraEnabled,
        numGeneratorReplicas: a.replicas,
        optimizerConfig: JSON.stringify(a.optimizer),
        status: 'MODEL_RESOURCES_STATUS_PENDING',
        createdBy: ctx.identity.apiKeyId,
        createdAt: now,
        updatedAt: now,
      },
    });
    await enter(tx, ctx, resourcesMachine, { id: row.id, projectId: row.projectId, state: row.status });
    return row;
  });
  return reply.json(resourcesWire(r), { headers: engineHeader(ctx, r.baseModel) });
}

export async function estimateModelResourcesCost(ctx: Context<'estimateModelResourcesCost'>) {
  const a = acceptResources(ctx.body);
  const gpu = await ctx.db.prisma.hardware.findUniqueOrThrow({ where: { id: PRICED_HARDWARE } });
  return { price_per_hour: pricePerHour(a, gpu.centsPerMinute), currency: 'USD' as const };
}

export async function getModelResources(ctx: Context<'getModelResources'>) {
  const r = await findResources(ctx, ctx.params.model_resources_id);
  return reply.json(resourcesWire(r), { headers: engineHeader(ctx, r.baseModel) });
}

/** Stops a session (its waiting operations fail; the running one finishes). */
async function stopSession(tx: Tx, ctx: Services, s: RlSession) {
  const moved = await transition(tx, ctx, sessions, s, 'stop');
  await abandonPending(tx, ctx, s.id, 'TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE', `Training session '${s.id}' was stopped before the operation ran.`);
  return moved;
}

export async function stopModelResources(ctx: Context<'stopModelResources'>) {
  const id = ctx.params.model_resources_id;
  await findResources(ctx, id);
  const r = await ctx.db.write(async (tx) => {
    const row = await tx.rlModelResources.findUniqueOrThrow({ where: { id } });
    resourcesMachine.next(row.status, 'stop');
    const active = (await tx.rlSession.findMany({ where: { modelResourcesId: id, status: { in: ACTIVE_SESSION } }, omit: WITHOUT_BYTES })) as RlSession[];
    if (active.length && !ctx.query.force)
      throw conflictOn(
        'model_resources_id',
        'model_resources_in_use',
        `Model resources '${id}' run ${active.length} training session(s) (${active.map((s) => s.id).join(', ')}): stop them first, or stop with force=true.`,
      );
    for (const s of active) await stopSession(tx, ctx, s);
    return transition(tx, ctx, resourcesRows, row, 'stop');
  });
  return reply.json(resourcesWire(r), { headers: engineHeader(ctx, r.baseModel) });
}

export async function listRlSupportedModels(ctx: Context<'listRlSupportedModels'>) {
  // The catalogue's names, as the caller's project sees them (the list is the same for everyone).
  const data = SUPPORTED_MODELS.map((base_model) => ({
    base_model,
    generator_config: { context_length: LIMITS.sequence, sampling_defaults: SAMPLING_DEFAULTS },
    trainer_config: {
      full: { max_batch_size: LIMITS.samples, max_seq_length: LIMITS.sequence },
      lora: { max_batch_size: LIMITS.samples, max_seq_length: LIMITS.sequence, max_rank: LIMITS.rank },
    },
  }));
  return reply.json({ data }, { headers: engineHeader(ctx, SUPPORTED_MODELS[0]) });
}

// ---- sessions ----

export async function listTrainingSessions(ctx: Context<'listTrainingSessions'>) {
  const q = ctx.query;
  const size = pageSize(q.limit, 'limit', LIST_DEFAULT);
  const args = pageArgs(q.after, size, 'desc');
  const page = cut(
    await ctx.db.prisma.rlSession.findMany({
      ...args,
      omit: WITHOUT_BYTES,
      where: {
        ...args.where,
        projectId: ctx.identity.projectId,
        ...(q.status?.length && { status: { in: q.status } }),
        ...(q.model_resources_id !== undefined && { modelResourcesId: q.model_resources_id }),
        ...(q.created_by !== undefined && { createdBy: q.created_by }),
      },
    }),
    size,
  );
  const checkpoints = await checkpointsOf(
    ctx,
    page.rows.map((s) => s.id),
  );
  const data = page.rows.map((s) => sessionWire(s as RlSession, checkpoints.filter((c) => c.sessionId === s.id) as never));
  return reply.json({ data, meta: listMeta(size, page.next) }, { headers: engineHeader(ctx, page.rows[0]?.baseModel ?? SUPPORTED_MODELS[0]) });
}

export async function startTrainingSession(ctx: Context<'startTrainingSession'>) {
  const b = ctx.body;
  const r = await findResources(ctx, b.model_resources_id);
  if (!(LIVE_RESOURCES as string[]).includes(r.status))
    throw conflictOn(
      'model_resources_id',
      'model_resources_not_active',
      `Model resources '${r.id}' are ${r.status}: a session needs resources that are PENDING, CREATING or READY.`,
    );
  if (b.resume_from_hf_checkpoint !== undefined)
    throw badRequest(
      'This offline server reaches no model hub: resume from one of its training checkpoints (resume_from_checkpoint_id).',
      'resume_from_hf_checkpoint',
    );
  const id = newId('ts', ctx.clock.now());
  let lora = r.loraEnabled ? acceptLora(b.lora_config, id) : null;
  if (!r.loraEnabled && b.lora_config !== undefined)
    throw badRequest(`Model resources '${r.id}' train every weight (lora_enabled: false): a session on them takes no lora_config.`, 'lora_config');
  if (b.resume_from_checkpoint_id !== undefined) {
    const cid = b.resume_from_checkpoint_id;
    const c = await owned(ctx.db.prisma.rlCheckpoint, ctx.identity.projectId, { id: cid }, { what: 'checkpoint', id: cid, param: 'resume_from_checkpoint_id' });
    const from = await ctx.db.prisma.rlSession.findUniqueOrThrow({ where: { id: c.sessionId }, omit: WITHOUT_BYTES });
    const param = 'resume_from_checkpoint_id';
    if (c.kind !== 'training') throw badRequest(`'${cid}' is an inference checkpoint (weights only): resume from a training checkpoint.`, param);
    if (from.baseModel !== r.baseModel) throw badRequest(`Checkpoint '${cid}' is of ${from.baseModel}; these resources are of ${r.baseModel}.`, param);
    if ((from.loraConfig !== null) !== r.loraEnabled)
      throw badRequest(
        `Checkpoint '${cid}' is of a ${from.loraConfig ? 'LoRA' : 'full'} session; these resources train ${r.loraEnabled ? 'LoRA adapters' : 'every weight'}.`,
        param,
      );
    if (b.lora_config !== undefined) throw badRequest("A resumed session takes its checkpoint's LoRA configuration: give no lora_config.", 'lora_config');
    lora = from.loraConfig ? JSON.parse(from.loraConfig) : null;
  }
  const now = instant(ctx.clock);
  const s = await ctx.db.write(async (tx) => {
    const row = await tx.rlSession.create({
      data: {
        id,
        projectId: ctx.identity.projectId,
        modelResourcesId: r.id,
        baseModel: r.baseModel,
        displayName: b.display_name ?? null,
        metadata: JSON.stringify(b.metadata ?? {}),
        loraConfig: lora ? JSON.stringify(lora) : null,
        resumeFromCheckpoint: b.resume_from_checkpoint_id ?? null,
        status: 'TRAINING_SESSION_STATUS_CREATING',
        engine: engineNameFor(ctx, r.baseModel),
        lastActivityAt: now,
        createdBy: ctx.identity.apiKeyId,
        createdAt: now,
        updatedAt: now,
      },
    });
    await enter(tx, ctx, sessionMachine, { id: row.id, projectId: row.projectId, state: row.status });
    return row;
  });
  return sessionReply(ctx, s);
}

export async function getTrainingSession(ctx: Context<'getTrainingSession'>) {
  return sessionReply(ctx, await findSession(ctx, ctx.params.session_id));
}

export async function updateTrainingSession(ctx: Context<'updateTrainingSession'>) {
  const s = await findSession(ctx, ctx.params.session_id);
  const b = ctx.body;
  const updated = await ctx.db.write((tx) =>
    tx.rlSession.update({
      where: { id: s.id },
      omit: WITHOUT_BYTES,
      data: {
        ...(b.display_name !== undefined && { displayName: b.display_name }),
        ...(b.metadata !== undefined && { metadata: JSON.stringify(b.metadata) }),
        updatedAt: instant(ctx.clock),
      },
    }),
  );
  return sessionReply(ctx, updated as RlSession);
}

export async function stopTrainingSession(ctx: Context<'stopTrainingSession'>) {
  const s = await findSession(ctx, ctx.params.session_id);
  return sessionReply(ctx, await ctx.db.write(async (tx) => stopSession(tx, ctx, await sessionRow(tx, s.id))));
}

// ---- operations ----

type SessionCtx = Services & { identity: { projectId: string }; params: { session_id: string } };

/** Submits an operation of `kind` to the caller's session; `input` is made once its id is known. */
async function submit(ctx: SessionCtx, kind: OperationKind, input: (session: RlSession, id: string) => unknown) {
  const s = await findSession(ctx, ctx.params.session_id);
  // Checked before the write: a body that is refused changes nothing.
  input(s, 'op_check');
  const op = await ctx.db.write((tx) => submitOperation(tx, ctx, s.id, kind, (id) => input(s, id)));
  return reply.json(operationWire(op) as never, { headers: engineHeader(ctx, s.baseModel, s.engine) });
}

/** An operation of `kind` of the caller's session (another kind's id, or another session's, answers 404). */
async function read(ctx: SessionCtx & { params: { operation_id: string } }, kind: OperationKind) {
  const s = await findSession(ctx, ctx.params.session_id);
  const op = await ctx.db.prisma.rlOperation.findFirst({ where: { id: ctx.params.operation_id, sessionId: s.id, kind } });
  if (!op) throw notFound(`${kind.replace(/_/g, '-')} operation`, ctx.params.operation_id, 'operation_id');
  return reply.json(operationWire(op as RlOperation) as never, { headers: engineHeader(ctx, s.baseModel, s.engine) });
}

export async function forward(ctx: Context<'forward'>) {
  return submit(ctx, 'forward', () => ({ samples: acceptSamples(ctx.body.samples) }));
}

export async function getForwardOperation(ctx: Context<'getForwardOperation'>) {
  return read(ctx, 'forward');
}

export async function forwardBackward(ctx: Context<'forwardBackward'>) {
  return submit(ctx, 'forward_backward', () => {
    const loss = acceptLoss(ctx.body.loss);
    return { samples: acceptSamples(ctx.body.samples, loss.type), loss };
  });
}

export async function getForwardBackwardOperation(ctx: Context<'getForwardBackwardOperation'>) {
  return read(ctx, 'forward_backward');
}

export async function customForwardBackward(ctx: Context<'customForwardBackward'>) {
  return submit(ctx, 'custom_forward_backward', () => {
    const samples = acceptSamples(ctx.body.samples);
    return { samples, gradients: acceptGradients(ctx.body.gradients, samples) };
  });
}

export async function getCustomForwardBackwardOperation(ctx: Context<'getCustomForwardBackwardOperation'>) {
  return read(ctx, 'custom_forward_backward');
}

export async function OptimStep(ctx: Context<'OptimStep'>) {
  const s = await findSession(ctx, ctx.params.session_id);
  const r = await ctx.db.prisma.rlModelResources.findUniqueOrThrow({ where: { id: s.modelResourcesId } });
  const optimizer = JSON.parse(r.optimizerConfig) as AcceptedResources['optimizer'];
  return submit(ctx, 'optim_step', () => ({ step: acceptOptimStep(ctx.body, optimizer) }));
}

export async function getOptimStepOperation(ctx: Context<'getOptimStepOperation'>) {
  return read(ctx, 'optim_step');
}

export async function WeightsSync(ctx: Context<'WeightsSync'>) {
  return submit(ctx, 'weights_sync', () => ({ type: ctx.body.weight_sync_type }));
}

export async function getWeightsSyncOperation(ctx: Context<'getWeightsSyncOperation'>) {
  return read(ctx, 'weights_sync');
}

export async function Sample(ctx: Context<'Sample'>) {
  return submit(ctx, 'sample', (_s, id) => ({ request: acceptSample(ctx.body, id) }));
}

export async function GetSample(ctx: Context<'GetSample'>) {
  return read(ctx, 'sample');
}

export async function createInferenceCheckpoint(ctx: Context<'createInferenceCheckpoint'>) {
  return submit(ctx, 'inference_checkpoint', () => ({}));
}

export async function getInferenceCheckpointOperation(ctx: Context<'getInferenceCheckpointOperation'>) {
  return read(ctx, 'inference_checkpoint');
}

export async function createTrainingCheckpoint(ctx: Context<'createTrainingCheckpoint'>) {
  return submit(ctx, 'training_checkpoint', () => ({}));
}

export async function getTrainingCheckpointOperation(ctx: Context<'getTrainingCheckpointOperation'>) {
  return read(ctx, 'training_checkpoint');
}

// ---- checkpoints ----

const filesPath = (id: string, filename: string) => `/v1/rl/checkpoints/${encodeURIComponent(id)}/files/${encodeURIComponent(filename)}`;

/** The variant a download asks for: the adapter only of a LoRA checkpoint; `UNSPECIFIED` is the merged model. */
async function variantOf(ctx: Services, c: { sessionId: string; id: string }, variant: string | undefined): Promise<'merged' | 'adapter'> {
  if (variant !== 'CHECKPOINT_VARIANT_ADAPTER') return 'merged';
  const s = await ctx.db.prisma.rlSession.findUniqueOrThrow({ where: { id: c.sessionId }, omit: WITHOUT_BYTES });
  if (!s.loraConfig)
    throw badRequest(`Checkpoint '${c.id}' is of a session that trains every weight: it has no adapter (ask for CHECKPOINT_VARIANT_MERGED).`, 'variant');
  return 'adapter';
}

export async function downloadCheckpoint(ctx: Context<'downloadCheckpoint'>) {
  const c = await owned(ctx.db.prisma.rlCheckpoint, ctx.identity.projectId, { id: ctx.params.id }, { what: 'checkpoint', id: ctx.params.id, param: 'id' });
  const variant = await variantOf(ctx, c, ctx.query.variant);
  const files = await checkpointFiles(ctx, c, variant);
  const data = await Promise.all(
    files.map(async (f) => ({
      filename: f.filename,
      size: f.size,
      url:
        f.url ??
        (
          await signedUrl(
            ctx,
            ctx.origin,
            'GET',
            `${filesPath(c.id, f.filename)}?variant=${ctx.query.variant ?? 'CHECKPOINT_VARIANT_UNSPECIFIED'}`,
            FILE_URL_TTL_MS,
          )
        ).url,
    })),
  );
  const s = await ctx.db.prisma.rlSession.findUniqueOrThrow({ where: { id: c.sessionId }, omit: WITHOUT_BYTES });
  return reply.json({ data }, { headers: engineHeader(ctx, s.baseModel, s.engine) });
}

/** A checkpoint file's URL: its signature (403 otherwise), then the checkpoint (404 when gone). */
export const checkCheckpointFileUrl: SignedCheck = async (services, { params, query }) => {
  const path = `${filesPath(params.id!, params.filename!)}${query.variant === undefined ? '' : `?variant=${query.variant}`}`;
  await checkSignature(services, `GET ${path}`, query, `GET /v1/rl/checkpoints/${params.id}/download`);
  const c = await services.db.prisma.rlCheckpoint.findUnique({ where: { id: params.id! }, select: { projectId: true } });
  if (!c) throw notFound('checkpoint', params.id!, 'id');
  return projectIdentity(services, c.projectId);
};

export async function downloadCheckpointFile(ctx: Context<'downloadCheckpointFile'>) {
  const c = await owned(ctx.db.prisma.rlCheckpoint, ctx.identity.projectId, { id: ctx.params.id }, { what: 'checkpoint', id: ctx.params.id, param: 'id' });
  const files = await checkpointFiles(ctx, c, await variantOf(ctx, c, ctx.query.variant));
  const f = files.find((x) => x.filename === ctx.params.filename && x.bytes);
  if (!f) throw notFound(`file of checkpoint '${c.id}'`, ctx.params.filename, 'filename');
  return reply.text(Buffer.from(f.bytes!), 'application/octet-stream', {
    headers: { 'Content-Disposition': `attachment; filename=${f.filename}` },
  });
}
