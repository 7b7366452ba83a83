// The fine-tuning job's state machine, and the runner's steps that move it: wait for the files' validation, queue,
// train (the simulation of training.ts, computed outside any transaction and committed with its metrics,
// checkpoints and events), compress, upload (the fine-tuned model enters the project's catalogue), and stop a
// cancelled run.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { FineTune, Prisma } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import type { Config } from '../../core/config.ts';
import { withArticle } from '../../core/errors.ts';
import { defineMachine } from '../../core/machine.ts';
import { type Database, insertRows, type Tx } from '../../db/index.ts';
import { type Progression, stored, type Timing, transition } from '../../runner/progress.ts';
import type { FileType, Purpose } from '../files/index.ts';
import { datasetRows, filePath, type Report, sampleTokens } from '../files/index.ts';
import { createUploadedModel } from '../models/index.ts';
import type { Accepted } from './rules.ts';
import { type Curves, type Dataset, earlyStop, learningRateAt, type Plan, plan, simulateCurves, stepTokens } from './training.ts';

export const fineTuneMachine = defineMachine({
  name: 'fine-tune',
  kind: 'fine_tune',
  states: ['pending', 'queued', 'running', 'compressing', 'uploading', 'cancel_requested', 'cancelled', 'error', 'completed'],
  events: ['queue', 'start', 'train', 'compress', 'upload', 'cancel', 'stop', 'fail'],
  terminal: ['cancelled', 'error', 'completed'],
  transitions: {
    pending: { queue: 'queued', cancel: 'cancelled', fail: 'error' },
    queued: { start: 'running', cancel: 'cancelled' },
    running: { train: 'compressing', cancel: 'cancel_requested', fail: 'error' },
    compressing: { compress: 'uploading' },
    uploading: { upload: 'completed' },
    cancel_requested: { stop: 'cancelled' },
  },
  timed: {
    pending: { duration: 'fine_tune_pending', defaultMs: 0 },
    queued: { duration: 'fine_tune_queue', defaultMs: 0 },
    running: { duration: 'fine_tune_train', defaultMs: 1000 },
    compressing: { duration: 'fine_tune_compress', defaultMs: 0 },
    uploading: { duration: 'fine_tune_upload', defaultMs: 0 },
    cancel_requested: { duration: 'fine_tune_cancel', defaultMs: 0 },
  },
});

export type FineTuneEvent = (typeof fineTuneMachine.events)[number];

type EventInput = { type: string; message: string; level?: string | null } & Record<string, unknown>;

/** Records events of a job, in order: ids are the job's id and the event's position, so they sort as they happened. */
export async function record(tx: Tx, timing: Timing, jobId: string, events: EventInput[]): Promise<void> {
  const now = timing.clock.now();
  const before = await tx.fineTuneEvent.count({ where: { jobId } });
  await insertRows(
    tx,
    'FineTuneEvent',
    events.map(({ type, message, level, ...data }, i) => ({
      id: `${jobId}:${String(before + i).padStart(6, '0')}`,
      jobId,
      type,
      level: level ?? 'info',
      message,
      data: JSON.stringify(data),
      createdAt: BigInt(now),
    })),
  );
}

export const fineTunes = stored<FineTune>()({
  machine: fineTuneMachine,
  table: (c) => c.fineTune,
  field: 'status',
  stamp: (_j, _m, now) => ({ updatedAt: now }),
});

/** Moves a job by `event` (with `data`), and records the move's `events` in the job's event list. */
export async function moveFineTune(
  tx: Tx,
  timing: Timing,
  job: FineTune,
  event: FineTuneEvent,
  data: Partial<FineTune> = {},
  events: EventInput[] = [],
): Promise<FineTune> {
  const moved = await transition(tx, timing, fineTunes, job, event, { data });
  if (events.length) await record(tx, timing, job.id, events);
  return moved;
}

/** For tests: replaces the simulated curves of a job (a hand-computed curve, to check early stopping's rules). */
export const curveHook: { override?: (job: FineTune, plan: Plan) => Curves | undefined } = {};

type Services = Timing & { db: Database; config: Pick<Config, 'dataDir'> };

/** A stored dataset as training reads it: each valid sample's tokens (cut to `maxSeq`), and a digest of its bytes. */
export async function loadDataset(services: Services, fileId: string, maxSeq: number): Promise<Dataset & { lines: number; bytes: bigint }> {
  const f = await services.db.prisma.file.findUniqueOrThrow({ where: { id: fileId } });
  const path = filePath(services.config, f);
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  const tokens: number[] = [];
  for await (const row of datasetRows(path, f.fileType as FileType, f.purpose as Purpose))
    if ('sample' in row) tokens.push(Math.min(maxSeq, sampleTokens(row.sample, maxSeq)));
  return { tokens, digest: hash.digest('hex'), lines: tokens.length, bytes: f.bytes };
}

interface Trained {
  plan: Plan;
  endStep: number;
  tokenCount: number;
  evalTokenCount: number;
  metrics: Record<string, number>[];
  early: { stopped: boolean; bestStep: number; bestMetric: number | null } | null;
  lines: number;
  bytes: string;
}

/** The whole simulated run of a job. */
async function train(services: Services, job: FineTune): Promise<Trained> {
  const a = JSON.parse(job.params) as Accepted;
  const trainSet = await loadDataset(services, job.trainingFile, a.maxSeqLength);
  const validation = job.validationFile ? await loadDataset(services, job.validationFile, a.maxSeqLength) : null;
  const p = plan(trainSet.tokens.length, a.batchSize, a.nEpochs, a.nEvals, a.nCheckpoints);
  const schedule = {
    learningRate: a.learningRate,
    warmupRatio: a.warmupRatio,
    scheduler: {
      type: a.lrScheduler.lr_scheduler_type,
      minLrRatio: a.lrScheduler.lr_scheduler_args.min_lr_ratio,
      numCycles: a.lrScheduler.lr_scheduler_args.num_cycles ?? 0.5,
    },
  };
  const curves = curveHook.override?.(job, p) ?? simulateCurves(trainSet, validation, p, schedule, a.randomSeed);
  const evals = p.evalSteps.map((step, i) => ({ step, loss: curves.eval[i]! }));
  const early = a.earlyStopping.enabled ? earlyStop(evals, a.earlyStopping, p.totalSteps) : null;
  const endStep = early?.endStep ?? p.totalSteps;
  const evalLoss = new Map(evals.map((e) => [e.step, e.loss]));
  const validationTokens = validation ? validation.tokens.reduce((x, y) => x + y, 0) : 0;
  let tokens = 0;
  let evalTokens = 0;
  const metrics: Record<string, number>[] = [];
  for (let step = 1; step <= endStep; step++) {
    const t = stepTokens(trainSet, p, step, a.packing);
    tokens += t;
    const row: Record<string, number> = {
      'train/loss': curves.train[step - 1]!,
      'train/learning_rate': learningRateAt(schedule, p, step),
      'train/epoch': step / p.stepsPerEpoch,
      'train/tokens': t,
      'train/global_step': step,
    };
    const e = evalLoss.get(step);
    if (e !== undefined) {
      row['eval/loss'] = e;
      evalTokens += validationTokens;
    }
    metrics.push(row);
  }
  return {
    plan: p,
    endStep,
    tokenCount: tokens + evalTokens,
    evalTokenCount: evalTokens,
    metrics,
    early,
    lines: trainSet.lines,
    bytes: String(trainSet.bytes),
  };
}

const isPreference = (r: Report) => r.dataset_format === 'PREFERENCE';

export function fineTuneProgression(services: Services): Progression<(typeof fineTuneMachine.states)[number]> {
  const find = (tx: Tx, id: string) => tx.fineTune.findUniqueOrThrow({ where: { id } });
  const fail = (tx: Tx, job: FineTune, error: string) =>
    moveFineTune(tx, services, job, 'fail', { error }, [{ type: 'job_error', level: 'error', message: error }]);
  return {
    stored: fineTunes,
    steps: {
      // Waits for the files' validation, then checks them against the training method.
      pending: async (tx, id) => {
        const job = await find(tx, id);
        const a = JSON.parse(job.params) as Accepted;
        const ids = [job.trainingFile, ...(job.validationFile ? [job.validationFile] : [])];
        const files = await tx.file.findMany({ where: { id: { in: ids }, projectId: job.projectId } });
        if (files.length < ids.length) return void (await fail(tx, job, 'A file of the job was deleted before training started.'));
        if (files.some((f) => f.status === 'PENDING')) return 'wait';
        for (const f of files) {
          const field = f.id === job.trainingFile ? 'training' : 'validation';
          if (f.status !== 'COMPLETED') return void (await fail(tx, job, `The ${field} file ${f.id} is ${f.status}: see its validation_report.`));
          const report = JSON.parse(f.report!) as Report;
          if (isPreference(report) !== (a.trainingMethod.method === 'dpo')) {
            return void (await fail(
              tx,
              job,
              `The ${field} file ${f.id} is ${withArticle(report.dataset_format ?? 'unknown')} dataset; ${a.trainingMethod.method === 'dpo' ? 'DPO needs a preference dataset' : 'SFT needs a conversation, instruction, text or tokenized dataset'}.`,
            ));
          }
        }
        await moveFineTune(tx, services, job, 'queue', {}, [
          { type: 'training_data_download_complete', message: `Training file ${job.trainingFile} read.` },
          ...(job.validationFile ? [{ type: 'validation_data_download_complete', message: `Validation file ${job.validationFile} read.` }] : []),
        ]);
      },
      queued: async (tx, id) => {
        const job = await find(tx, id);
        await moveFineTune(tx, services, job, 'start', { startedAt: instant(services.clock) }, [
          { type: 'job_start', message: 'Job started.' },
          { type: 'model_download_complete', message: `Base model ${job.model} ready.` },
          { type: 'training_start', message: 'Training started (local engine: a deterministic simulation from the dataset; no weights are trained).' },
        ]);
      },
      running: {
        work: (id: string) => services.db.prisma.fineTune.findUniqueOrThrow({ where: { id } }).then((job) => train(services, job)),
        async apply(tx: Tx, id: string, r: Trained) {
          const job = await find(tx, id);
          const a = JSON.parse(job.params) as Accepted;
          const kind = a.trainingType.type === 'Full' ? 'model' : 'adapter';
          const now = instant(services.clock);
          const intermediate = r.plan.checkpointSteps.filter((s) => s < r.endStep);
          const finalStep = r.early?.stopped ? r.early.bestStep : r.endStep;
          const checkpoints: Prisma.FineTuneCheckpointCreateManyInput[] = [
            ...intermediate.map((step) => ({ id: `${job.id}:${step}`, jobId: job.id, step, type: 'Intermediate', kind, createdAt: now })),
            { id: `${job.id}:final`, jobId: job.id, step: finalStep, type: 'Final', kind, createdAt: now },
          ];
          await insertRows(tx, 'FineTuneCheckpoint', checkpoints);
          const epochs = Math.floor(r.endStep / r.plan.stepsPerEpoch);
          const price = Math.ceil((JSON.parse(job.params).pricePerMillion * r.tokenCount) / 1e4 - 1e-9);
          await moveFineTune(
            tx,
            services,
            job,
            'train',
            {
              tokenCount: r.tokenCount,
              evalTokenCount: r.evalTokenCount,
              totalPriceCents: price,
              metrics: JSON.stringify(r.metrics),
              totalSteps: r.endStep,
              epochsCompleted: epochs,
              trainingLines: r.lines,
              trainingBytes: BigInt(r.bytes),
              earlyStopped: r.early ? r.early.stopped : null,
              bestStep: r.early ? r.early.bestStep : null,
              bestMetric: r.early ? r.early.bestMetric : null,
            },
            [
              ...Array.from({ length: epochs }, (_, i) => ({
                type: 'epoch_complete',
                message: `Epoch ${i + 1}/${a.nEpochs} completed.`,
                step: (i + 1) * r.plan.stepsPerEpoch,
              })),
              ...intermediate.map((step) => ({
                type: 'checkpoint_save',
                message: `Checkpoint saved at step ${step}.`,
                step,
                checkpoint_path: `${job.id}:${step}`,
              })),
              ...(r.early?.stopped
                ? [
                    {
                      type: 'early_stopped',
                      message: `Early stopping: no improvement for ${a.earlyStopping.patience} evaluations; halted at step ${r.endStep}.`,
                      step: r.endStep,
                      early_stopping_best_step: r.early.bestStep,
                      early_stopping_best_metric_value: r.early.bestMetric,
                    },
                  ]
                : []),
              {
                type: 'training_complete',
                message: `Training completed: ${r.endStep} steps, ${r.tokenCount} tokens.`,
                token_count: r.tokenCount,
                total_steps: r.endStep,
              },
              { type: 'model_compressing', message: 'Compressing the model.' },
            ],
          );
        },
      },
      compressing: async (tx, id) => {
        await moveFineTune(tx, services, await find(tx, id), 'compress', {}, [
          { type: 'model_compression_complete', message: 'Model compressed.' },
          { type: 'model_uploading', message: 'Uploading the model.' },
        ]);
      },
      uploading: async (tx, id) => {
        const job = await find(tx, id);
        const a = JSON.parse(job.params) as Accepted;
        const base = await tx.model.findUniqueOrThrow({ where: { id: job.model } });
        const lora = a.trainingType.type === 'Lora';
        const model = await createUploadedModel(tx, services.clock, job.projectId, {
          name: job.outputName,
          type: base.type,
          modelType: lora ? 'adapter' : 'model',
          architecture: base.architecture,
          baseModelId: lora ? base.id : null,
          minGpuMemory: base.minGpuMemory,
          contextLength: base.contextLength,
          description: `Fine-tuned from ${base.id} by ${job.id} (local engine: simulated training, no weights).`,
          source: job.id,
          sourceKind: 'fine-tune',
          status: 'ready',
        });
        await moveFineTune(tx, services, job, 'upload', { outputModelId: model.id }, [
          { type: 'model_upload_complete', message: `Model ${job.outputName} is in the catalogue as ${model.id}.`, model_path: job.outputName },
          { type: 'job_complete', message: 'Job completed.' },
        ]);
      },
      cancel_requested: async (tx, id) => {
        await moveFineTune(tx, services, await find(tx, id), 'stop', {}, [{ type: 'job_stopped', message: 'Job cancelled.' }]);
      },
    },
    // The job's `error` is a message: the platform's fine-tune has no error code (a fault rule's default message names it).
    failure: { events: ['fail'], fail: (tx, job, _event, error) => fail(tx, job, error.message) },
    giveUp: async (tx, id, error) => {
      const job = await find(tx, id);
      if (fineTuneMachine.can(job.status, 'fail')) await fail(tx, job, `The job failed: ${error.slice(0, 500)}`);
    },
  };
}
