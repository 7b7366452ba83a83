// A session's operations, in order, exactly once. Submitting one takes the session's lock, gives it the next
// sequence number and starts it when nothing is ahead of it; finishing one (its fenced commit) starts the next. Only
// the running operation has a work item, so the runner runs one operation of a session at a time, in order, each on
// the state the previous one left. The engine's work happens outside any transaction (runOperation); its outcome
// commits (settleOperation) only on the state it read (a compare-and-set on the session's `stateVersion`), in the
// same transaction as the operation's move: a worker killed mid-operation leaves nothing, and the one that takes
// the work over computes it again from the same state and seeds (the operation's id), to the same result.
import type { RlOperation, RlSession } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { ApiError } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { type Db, keyLock, type Tx } from '../../db/index.ts';
import { type CheckpointFile, OperationFailed, type RlEngine, type SampleOutcome, type SessionModel } from '../../engines/rl/engine.ts';
import { localRlEngine } from '../../engines/rl/local.ts';
import { upstreamRlEngine } from '../../engines/rl/upstream.ts';
import { transition } from '../../runner/progress.ts';
import { createUploadedModel } from '../models/index.ts';
import type { Services } from '../types.ts';
import { operations } from './machine.ts';
import { LIMITS } from './rules.ts';

export type OperationKind =
  | 'forward'
  | 'forward_backward'
  | 'custom_forward_backward'
  | 'optim_step'
  | 'weights_sync'
  | 'sample'
  | 'inference_checkpoint'
  | 'training_checkpoint';

const PENDING = 'TRAINING_OPERATION_STATUS_PENDING';
const RUNNING = 'TRAINING_OPERATION_STATUS_RUNNING';
const SESSION_RUNNING = 'TRAINING_SESSION_STATUS_RUNNING';
const ACTIVE = ['TRAINING_SESSION_STATUS_CREATING', SESSION_RUNNING];

/** Answers 409 without the official clients retrying it (they retry a 409 by default). */
const refusal = (code: string, message: string) => new ApiError(409, code, message, 'session_id', 'invalid_request_error', { 'x-should-retry': 'false' });

export const lockSession = (tx: Tx, services: Pick<Services, 'db'>, sessionId: string) => keyLock(services.db, tx, `rl-session:${sessionId}`);

/** Reads of a session that need not its engine bytes (up to megabytes): only an operation's work reads those. */
export const WITHOUT_BYTES = { trainer: true, sampler: true } as const;

/** A session's row without its engine bytes (`trainer` and `sampler` read as absent), for moves and checks. */
export const sessionRow = async (client: Tx | Db, id: string) =>
  (await client.rlSession.findUniqueOrThrow({ where: { id }, omit: WITHOUT_BYTES })) as RlSession;

/** The engine a session's model lives on: local, or the upstream its base model is routed to (ENGINES, capability `rl`). */
export function engineFor(services: Pick<Services, 'engines'>, session: Pick<RlSession, 'engine' | 'baseModel'>): RlEngine {
  if (session.engine === 'local') return localRlEngine;
  const route = services.engines.routeFor('rl', session.baseModel);
  if (route.engine !== 'upstream')
    throw new OperationFailed(
      'TRAINING_OPERATION_ERROR_CODE_INTERNAL_ERROR',
      `The session's model is upstream, and no ENGINES route sends ${session.baseModel} upstream any longer.`,
    );
  return upstreamRlEngine(route);
}

/** The engine a new session on `baseModel` starts on. */
export const engineNameFor = (services: Pick<Services, 'engines'>, baseModel: string) => services.engines.routeFor('rl', baseModel).engine;

/** What the `x-rl-engine` header says of a base model's engine. */
export function engineHeader(
  services: Pick<Services, 'engines'>,
  baseModel: string,
  engine: string = engineNameFor(services, baseModel),
): Record<string, string> {
  const route = services.engines.routeFor('rl', baseModel);
  return { 'x-rl-engine': engine === 'local' || route.engine === 'local' ? localRlEngine.description : `upstream ${route.url}` };
}

/** Submits an operation to a CREATING or RUNNING session: PENDING, or RUNNING when nothing is ahead of it. */
export async function submitOperation(
  tx: Tx,
  services: Services,
  sessionId: string,
  kind: OperationKind,
  input: (id: string) => unknown,
): Promise<RlOperation> {
  await lockSession(tx, services, sessionId);
  const s = await sessionRow(tx, sessionId);
  if (!ACTIVE.includes(s.status))
    throw refusal('session_not_active', `Training session '${s.id}' is ${s.status}: it takes operations only while CREATING or RUNNING.`);
  const waiting = await tx.rlOperation.count({ where: { sessionId, status: { in: [PENDING, RUNNING] } } });
  if (waiting >= LIMITS.queue)
    throw refusal(
      'operation_queue_full',
      `Training session '${s.id}' has ${waiting} operations waiting, the most it takes; submit more once some have finished.`,
    );
  const now = services.clock.now();
  const { nextSeq } = await tx.rlSession.update({
    where: { id: sessionId },
    data: { nextSeq: { increment: 1 }, lastActivityAt: BigInt(now) },
    select: { nextSeq: true },
  });
  const id = newId('op', now);
  await tx.rlOperation.create({
    data: {
      id,
      projectId: s.projectId,
      sessionId,
      seq: nextSeq - 1,
      kind,
      status: PENDING,
      input: JSON.stringify(input(id)),
      createdAt: BigInt(now),
      updatedAt: BigInt(now),
    },
  });
  await startNext(tx, services, sessionId);
  return tx.rlOperation.findUniqueOrThrow({ where: { id } });
}

/** Starts the session's next waiting operation, unless one runs or the session does not. */
export async function startNext(tx: Tx, services: Services, sessionId: string): Promise<void> {
  await lockSession(tx, services, sessionId);
  const s = await tx.rlSession.findUnique({ where: { id: sessionId }, select: { status: true } });
  if (s?.status !== SESSION_RUNNING) return;
  if (await hasRunning(tx, sessionId)) return;
  const next = await tx.rlOperation.findFirst({ where: { sessionId, status: PENDING }, orderBy: { seq: 'asc' } });
  if (next) await transition(tx, services, operations, next, 'start');
}

export const hasRunning = async (tx: Tx, sessionId: string) => (await tx.rlOperation.count({ where: { sessionId, status: RUNNING } })) > 0;

/** Fails the session's waiting operations (it stopped, expired or failed); the running one, if any, finishes. */
export async function abandonPending(tx: Tx, services: Services, sessionId: string, code: string, message: string): Promise<void> {
  await lockSession(tx, services, sessionId);
  for (const op of await tx.rlOperation.findMany({ where: { sessionId, status: PENDING }, orderBy: { seq: 'asc' } }))
    await transition(tx, services, operations, op, 'abandon', { data: { errorCode: code, errorMessage: message } });
}

// ---- starting a session ----

export type Started =
  | { kind: 'started'; trainer: string; sampler: string; step: number }
  | { kind: 'wait' }
  | { kind: 'failed'; code: string; message: string };

/** The engine's bytes as the database keeps them (base64 text), and back. */
const stored = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
export const bytesOf = (text: string) => new Uint8Array(Buffer.from(text, 'base64'));

/** The session's model, made by its engine once its resources are READY (outside any transaction). */
export async function startSession(services: Services, id: string): Promise<Started> {
  const s = await sessionRow(services.db.prisma, id);
  const r = await services.db.prisma.rlModelResources.findUniqueOrThrow({ where: { id: s.modelResourcesId } });
  if (r.status === 'MODEL_RESOURCES_STATUS_PENDING' || r.status === 'MODEL_RESOURCES_STATUS_CREATING') return { kind: 'wait' };
  if (r.status !== 'MODEL_RESOURCES_STATUS_READY')
    return { kind: 'failed', code: 'TRAINING_SESSION_ERROR_CODE_RESOURCE_UNAVAILABLE', message: `Model resources '${r.id}' are ${r.status}.` };
  const model: SessionModel = {
    baseModel: s.baseModel,
    lora: s.loraConfig ? JSON.parse(s.loraConfig) : null,
    optimizer: 'muon' in JSON.parse(r.optimizerConfig) ? 'muon' : 'adamw',
  };
  const resume = s.resumeFromCheckpoint ? await services.db.prisma.rlCheckpoint.findUnique({ where: { id: s.resumeFromCheckpoint } }) : null;
  const made = await engineFor(services, s).start(model, resume ? bytesOf(resume.bytes) : undefined);
  // A resumed session starts at its checkpoint's step, its sampler with the checkpoint's weights.
  return { kind: 'started', trainer: stored(made.trainer), sampler: stored(made.sampler), step: resume?.step ?? 0 };
}

// ---- running an operation ----

export type Ran =
  | {
      kind: 'done';
      /** The session's stateVersion the work read. */
      version: number;
      output: Record<string, unknown>;
      /** The new trainer state and sampler weights, as stored (base64). */
      trainer?: string;
      sampler?: string;
      step?: number;
      weightsVersion?: number;
      checkpoint?: { kind: 'training' | 'inference'; bytes: string; step: number };
    }
  | { kind: 'failed'; code: string; message: string };

const results = (outcomes: SampleOutcome[], version: number, routedExperts: boolean) => ({
  results: outcomes.map((o) => ({
    sequences: o.sequences.map((q) => ({
      tokens: q.tokens,
      logprobs: q.logprobs,
      stop_reason: q.stop === 'stop' ? 'STOP_REASON_STOP' : 'STOP_REASON_LENGTH',
      prompt_cache_hit_tokens: 0,
      ...(routedExperts ? { routed_experts: { data: '', shape: [q.tokens.length, 0] } } : {}),
    })),
    policy_segments: [{ version, start_token: 0 }],
    ...(o.promptLogprobs ? { prompt_logprobs: o.promptLogprobs } : {}),
    ...(o.topkPromptLogprobs ? { topk_prompt_logprobs: o.topkPromptLogprobs } : {}),
  })),
});

/** The engine's work for a RUNNING operation, on the session's state as it is now (the operations before it have committed). */
export async function runOperation(services: Services, op: RlOperation): Promise<Ran> {
  const s = await services.db.prisma.rlSession.findUniqueOrThrow({ where: { id: op.sessionId } });
  const input = JSON.parse(op.input);
  const version = s.stateVersion;
  const trainer = bytesOf(s.trainer!);
  try {
    const engine = engineFor(services, s);
    switch (op.kind as OperationKind) {
      case 'forward':
        return { kind: 'done', version, output: { logprobs: (await engine.forward(trainer, input.samples)).map((data) => ({ data })) } };
      case 'forward_backward': {
        const r = await engine.forwardBackward(trainer, input.samples, input.loss, op.id);
        return { kind: 'done', version, output: { loss: r.loss, metrics: r.metrics }, trainer: stored(r.trainer) };
      }
      case 'custom_forward_backward': {
        const r = await engine.customForwardBackward(trainer, input.samples, input.gradients, op.id);
        return { kind: 'done', version, output: {}, trainer: stored(r.trainer) };
      }
      case 'optim_step': {
        const r = await engine.optimStep(trainer, input.step);
        return { kind: 'done', version, output: { step: r.step }, trainer: stored(r.trainer), step: r.step };
      }
      case 'weights_sync': {
        const r = await engine.weightsSync(trainer);
        return { kind: 'done', version, output: { weights_version: r.version }, sampler: stored(r.sampler), weightsVersion: r.version };
      }
      case 'sample': {
        const outcomes = await engine.sample(bytesOf(s.sampler!), input.request);
        return { kind: 'done', version, output: results(outcomes, s.weightsVersion, input.request.routedExperts) };
      }
      case 'inference_checkpoint':
      case 'training_checkpoint': {
        const kind = op.kind === 'training_checkpoint' ? 'training' : 'inference';
        const c = await engine.checkpoint(trainer, kind);
        return { kind: 'done', version, output: {}, checkpoint: { kind, bytes: stored(c.bytes), step: c.step } };
      }
    }
  } catch (err) {
    if (err instanceof OperationFailed) return { kind: 'failed', code: err.code, message: err.message };
    throw err;
  }
  throw new Error(`unknown operation kind ${op.kind}`);
}

/** Commits an operation's outcome (fenced by the runner), then starts the session's next operation. */
export async function settleOperation(tx: Tx, services: Services, op: RlOperation, ran: Ran): Promise<void> {
  // The session's lock first, as a submission takes it: rows updated before it would deadlock with a submission
  // holding it (PostgreSQL then fails one of the two).
  await lockSession(tx, services, op.sessionId);
  if (ran.kind === 'failed') {
    await transition(tx, services, operations, op, 'fail', { data: { errorCode: ran.code, errorMessage: ran.message } });
  } else {
    const now = instant(services.clock);
    let output = ran.output;
    if (ran.trainer || ran.sampler) {
      const { count } = await tx.rlSession.updateMany({
        where: { id: op.sessionId, stateVersion: ran.version },
        data: {
          ...(ran.trainer && { trainer: ran.trainer }),
          ...(ran.sampler && { sampler: ran.sampler }),
          ...(ran.step !== undefined && { step: ran.step }),
          ...(ran.weightsVersion !== undefined && { weightsVersion: ran.weightsVersion }),
          stateVersion: { increment: 1 },
          updatedAt: now,
        },
      });
      // Only operations of this session change its state, one at a time: another commit here is a bug, and the
      // runner's retry computes the operation again from the state as it now is.
      if (count === 0) throw new Error(`training session ${op.sessionId} changed while operation ${op.id} ran`);
    }
    if (ran.checkpoint) output = await saveCheckpoint(tx, services, op, ran.checkpoint);
    await transition(tx, services, operations, op, 'complete', { data: { output: JSON.stringify(output) } });
  }
  await startNext(tx, services, op.sessionId);
}

/** A checkpoint's row; an inference checkpoint also enters the project's catalogue as the chat model that serves it. */
async function saveCheckpoint(tx: Tx, services: Services, op: RlOperation, c: NonNullable<Extract<Ran, { kind: 'done' }>['checkpoint']>) {
  const s = await sessionRow(tx, op.sessionId);
  const id = newId('ckpt', services.clock.now());
  let model: { id: string; name: string } | null = null;
  if (c.kind === 'inference') {
    model = await createUploadedModel(tx, services.clock, s.projectId, {
      name: `rl/${s.id}/${id}`,
      type: 'chat',
      modelType: 'model',
      architecture: null,
      baseModelId: null,
      minGpuMemory: null,
      contextLength: LIMITS.sequence,
      description: `Step ${c.step} of RL training session ${s.id}: this server's small local model (seeded by ${s.baseModel}'s name; not ${s.baseModel}).`,
      source: id,
      sourceKind: 'rl-checkpoint',
      status: 'ready',
    });
    // Served like a serverless model: chat completions name it and its weights answer (the inference module's engine).
    await tx.model.update({ where: { id: model.id }, data: { serverless: true } });
  }
  await tx.rlCheckpoint.create({
    data: {
      id,
      projectId: s.projectId,
      sessionId: s.id,
      kind: c.kind,
      step: c.step,
      bytes: c.bytes,
      modelId: model?.id ?? null,
      modelName: model?.id ?? null,
      createdAt: instant(services.clock),
    },
  });
  // Chat completions name a project's model by its id (`ml_...`).
  return c.kind === 'inference' ? { model_name: model!.id } : { checkpoint_id: id };
}

/** A checkpoint's files for a variant, as its engine makes them. */
export async function checkpointFiles(
  services: Services,
  checkpoint: { sessionId: string; kind: string; bytes: string },
  variant: 'merged' | 'adapter',
): Promise<CheckpointFile[]> {
  const s = await sessionRow(services.db.prisma, checkpoint.sessionId);
  return engineFor(services, s).files(bytesOf(checkpoint.bytes), checkpoint.kind as 'training' | 'inference', variant);
}
