// Module `fine-tuning`: rows -> wire shapes.
import type { FineTune, FineTuneCheckpoint, FineTuneEvent } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';
import { type Accepted, ownerAddress } from './rules.ts';
import { evalInterval, plan } from './training.ts';

export function eventWire(e: FineTuneEvent): Wire<'FineTuneEvent'> {
  return {
    object: 'fine-tune-event',
    created_at: iso(e.createdAt),
    level: e.level as Wire<'FineTuneEvent'>['level'],
    message: e.message,
    type: e.type as Wire<'FineTuneEvent'>['type'],
    ...JSON.parse(e.data),
  };
}

export function checkpointWire(c: FineTuneCheckpoint, jobId: string): Wire<'FineTuneCheckpoint'> {
  return { step: c.step, created_at: iso(c.createdAt), path: `${jobId}:${c.step}`, checkpoint_type: c.type, checkpoint: c.kind as 'model' | 'adapter' };
}

/** The truncated job (create, cancel, list). */
export function fineTuneTruncatedWire(j: FineTune, events: FineTuneEvent[]): Wire<'FineTuneTruncated'> {
  const a = JSON.parse(j.params) as Accepted;
  const finished = ['completed', 'cancelled', 'error'].includes(j.status);
  return {
    id: j.id,
    status: j.status as Wire<'FineTuneTruncated'>['status'],
    created_at: iso(j.createdAt),
    updated_at: iso(j.updatedAt),
    ...(j.startedAt !== null && { started_at: iso(j.startedAt) }),
    user_id: j.userId,
    owner_address: ownerAddress(j.projectId),
    ...(j.totalPriceCents !== null && { total_price: j.totalPriceCents }),
    ...(j.tokenCount !== null && { token_count: j.tokenCount }),
    events: events.map(eventWire),
    training_file: j.trainingFile,
    ...(j.validationFile !== null && { validation_file: j.validationFile }),
    packing: a.packing,
    max_seq_length: a.maxSeqLength,
    model: j.model,
    model_output_name: j.outputName,
    ...(a.suffix !== null && { suffix: a.suffix }),
    n_epochs: a.nEpochs,
    n_evals: a.nEvals,
    n_checkpoints: a.nCheckpoints,
    batch_size: a.batchSize,
    training_type: a.trainingType,
    training_method: a.trainingMethod as Wire<'FineTuneTruncated'>['training_method'],
    learning_rate: a.learningRate,
    lr_scheduler: a.lrScheduler,
    warmup_ratio: a.warmupRatio,
    max_grad_norm: a.maxGradNorm,
    weight_decay: a.weightDecay,
    random_seed: a.randomSeed,
    ...(a.wandb.project_name !== null && { wandb_project_name: a.wandb.project_name }),
    ...(a.wandb.name !== null && { wandb_name: a.wandb.name }),
    ...(a.wandb.entity !== null && { wandb_entity: a.wandb.entity }),
    ...(a.wandb.base_url !== null && { wandb_base_url: a.wandb.base_url }),
    ...(a.fromCheckpoint !== null && { from_checkpoint: a.fromCheckpoint }),
    ...(a.fromHfModel !== null && { from_hf_model: a.fromHfModel }),
    ...(a.hfModelRevision !== null && { hf_model_revision: a.hfModelRevision }),
    progress: finished ? { estimate_available: true, seconds_remaining: 0 } : { estimate_available: false, seconds_remaining: 0 },
    early_stopping_enabled: a.earlyStopping.enabled,
    ...(a.earlyStopping.enabled && {
      early_stopping_patience: a.earlyStopping.patience,
      early_stopping_min_delta: a.earlyStopping.minDelta,
      early_stopping_warmup_evals: a.earlyStopping.warmupEvals,
    }),
    ...(j.earlyStopped !== null && { early_stopped: j.earlyStopped }),
    ...(j.bestStep !== null && { early_stopping_best_step: j.bestStep }),
    ...(j.earlyStopped !== null && { early_stopping_best_metric: j.bestMetric }),
    ...(j.error !== null && { error: j.error }),
  };
}

/** The whole job (get). */
export function fineTuneWire(j: FineTune, events: FineTuneEvent[]): Wire<'FineTune'> {
  const a = JSON.parse(j.params) as Accepted;
  return {
    ...fineTuneTruncatedWire(j, events),
    job_id: j.id,
    ...(j.status === 'completed' && { model_output_path: j.outputName }),
    ...(j.trainingLines !== null && { trainingfile_numlines: j.trainingLines }),
    ...(j.trainingBytes !== null && { trainingfile_size: Number(j.trainingBytes) }),
    // As planned: early stopping ends a run sooner, not its evaluations' spacing.
    ...(j.trainingLines !== null && a.nEvals > 0 && { eval_steps: evalInterval(plan(j.trainingLines, a.batchSize, a.nEpochs, a.nEvals, a.nCheckpoints)) }),
    train_on_inputs: a.trainOnInputs,
    ...(a.multimodalParams !== null && { multimodal_params: a.multimodalParams }),
    ...(j.epochsCompleted !== null && { epochs_completed: j.epochsCompleted }),
  };
}
