// The rules of a fine-tuning request: which models can be fine-tuned and their limits, every field's range and
// default, early stopping's preconditions, and the price. Everything is checked before anything is stored; a value
// out of range answers 400 naming it.
import { createHash } from 'node:crypto';
import type { Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { badRequest } from '../../core/errors.ts';
import type { RequestBody, Wire } from '../types.ts';

/** A job's parameters: creation's body, which the estimate takes too (its `model` is looked up by the caller). */
type Body = Omit<RequestBody<'createFineTune'>, 'model'>;
export type Limits = Wire<'FineTuneModelLimits'>;

/** Billions of parameters, read from the architecture's name (`llama-3.1-8b` 8, `mixtral-8x7b` 56, `deepseek-v3` 671). */
export function parameterBillions(architecture: string): number {
  if (/deepseek-v3/.test(architecture)) return 671;
  const moe = /(\d+)x(\d+(?:\.\d+)?)b/.exec(architecture);
  if (moe) return Number(moe[1]) * Number(moe[2]);
  const m = /(\d+(?:\.\d+)?)b\b/.exec(architecture);
  return m ? Number(m[1]) : 8;
}

/** Whether a catalogue model can be fine-tuned: a chat, language or code model of a known architecture. */
export const fineTunable = (m: Model) => m.projectId === null && m.modelType === 'model' && ['chat', 'language', 'code'].includes(m.type) && !!m.architecture;

/** The limits of fine-tuning `m` (a table by size, as the platform publishes per model). */
export function limitsOf(m: Model): Limits {
  const size = parameterBillions(m.architecture!);
  const [max, dpo] = size <= 16 ? [32, 16] : size <= 69 ? [16, 8] : [8, 8];
  const context = m.contextLength ?? 8192;
  return {
    model_name: m.id,
    lora_training: {
      max_batch_size: max,
      max_batch_size_dpo: dpo,
      min_batch_size: 8,
      max_rank: 64,
      target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
    },
    ...(size <= 100 && { full_training: { max_batch_size: max, max_batch_size_dpo: dpo, min_batch_size: 8 } }),
    max_num_epochs: 20,
    max_num_evals: 100,
    max_num_checkpoints: 10,
    max_learning_rate: 0.01,
    min_learning_rate: 1e-7,
    supports_full_training: size <= 100,
    supports_vision: false,
    supports_tools: true,
    supports_reasoning: /deepseek|gpt-oss|qwen3/.test(m.architecture!),
    merge_output_lora: false,
    min_max_seq_length: 512,
    max_seq_length_sft: context,
    max_seq_length_dpo: Math.floor(context / 2),
    default_gradient_accumulation_steps: 1,
  };
}

/** US dollars per million training tokens, by size and training type (the platform's published table); DPO costs 2.5x. */
export function pricePerMillion(m: Model, full: boolean, dpo: boolean): number {
  const size = parameterBillions(m.architecture!);
  const [lora, fullPrice] = size <= 16 ? [0.48, 0.54] : size <= 69 ? [1.5, 1.65] : size <= 100 ? [2.9, 3.2] : [6, 6.6];
  return (full ? fullPrice : lora) * (dpo ? 2.5 : 1);
}

/** What the job runs with, every default applied (stored as the job's params). */
export interface Accepted {
  nEpochs: number;
  nCheckpoints: number;
  nEvals: number;
  batchSize: number;
  maxSeqLength: number;
  packing: boolean;
  learningRate: number;
  lrScheduler: { lr_scheduler_type: 'linear' | 'cosine'; lr_scheduler_args: { min_lr_ratio: number; num_cycles?: number } };
  warmupRatio: number;
  maxGradNorm: number;
  weightDecay: number;
  randomSeed: number | null;
  trainingType: { type: 'Full' } | { type: 'Lora'; lora_r: number; lora_alpha: number; lora_dropout: number; lora_trainable_modules: string };
  trainingMethod: Record<string, unknown> & { method: 'sft' | 'dpo' };
  earlyStopping: { enabled: boolean; patience: number; minDelta: number; warmupEvals: number };
  suffix: string | null;
  wandb: { project_name: string | null; name: string | null; entity: string | null; base_url: string | null; key_given: boolean };
  fromCheckpoint: string | null;
  fromHfModel: string | null;
  hfModelRevision: string | null;
  hfOutputRepoName: string | null;
  multimodalParams: { train_vision?: boolean } | null;
  trainOnInputs: boolean | 'auto';
}

function range(value: number, min: number, max: number, field: string, what = 'a number'): number {
  if (!(value >= min && value <= max)) throw badRequest(`'${field}' must be ${what} from ${min} to ${max} (got ${value}).`, field);
  return value;
}

const int = (value: number, min: number, max: number, field: string) => {
  if (!Number.isInteger(value)) throw badRequest(`'${field}' must be an integer (got ${value}).`, field);
  return range(value, min, max, field, 'an integer');
};

/** Checks a request against the model's limits; answers what the job will run with. */
export function accept(body: Body, model: Model): Accepted {
  const limits = limitsOf(model);
  const tt = body.training_type ?? { type: 'Lora' as const, lora_r: 8, lora_alpha: 16 };
  const full = tt.type === 'Full';
  if (full && !limits.supports_full_training) throw badRequest(`${model.id} cannot be fully trained; use LoRA training.`, 'training_type.type');
  const tm = body.training_method ?? { method: 'sft' as const, train_on_inputs: 'auto' as const };
  const dpo = tm.method === 'dpo';
  const sizes = (full ? limits.full_training : limits.lora_training)!;
  const maxBatch = dpo ? sizes.max_batch_size_dpo : sizes.max_batch_size;
  const batchSize = body.batch_size === undefined || body.batch_size === 'max' ? maxBatch : int(body.batch_size, sizes.min_batch_size, maxBatch, 'batch_size');
  const maxSeq = dpo ? limits.max_seq_length_dpo : limits.max_seq_length_sft;
  const trainingType: Accepted['trainingType'] = full
    ? { type: 'Full' }
    : (() => {
        const lora = tt as { lora_r: number; lora_alpha: number; lora_dropout?: number; lora_trainable_modules?: string };
        const modules = lora.lora_trainable_modules ?? 'all-linear';
        const unknown =
          modules === 'all-linear'
            ? []
            : modules
                .split(',')
                .map((s) => s.trim())
                .filter((s) => !limits.lora_training.target_modules.includes(s));
        if (unknown.length)
          throw badRequest(
            `'lora_trainable_modules' must be 'all-linear' or a comma-separated list of ${limits.lora_training.target_modules.join(', ')} (unknown: ${unknown.join(', ')}).`,
            'training_type.lora_trainable_modules',
          );
        return {
          type: 'Lora',
          lora_r: int(lora.lora_r, 1, limits.lora_training.max_rank, 'training_type.lora_r'),
          lora_alpha: int(lora.lora_alpha, 1, 1024, 'training_type.lora_alpha'),
          lora_dropout: range(lora.lora_dropout ?? 0, 0, 0.99, 'training_type.lora_dropout'),
          lora_trainable_modules: modules,
        };
      })();
  const trainingMethod = dpo
    ? (() => {
        const d = tm as {
          dpo_beta?: number;
          rpo_alpha?: number;
          dpo_normalize_logratios_by_length?: boolean;
          dpo_reference_free?: boolean;
          simpo_gamma?: number;
        };
        const beta = d.dpo_beta ?? 0.1;
        if (!(beta > 0)) throw badRequest(`'dpo_beta' must be above 0 (got ${beta}).`, 'training_method.dpo_beta');
        return {
          method: 'dpo' as const,
          dpo_beta: beta,
          rpo_alpha: range(d.rpo_alpha ?? 0, 0, 100, 'training_method.rpo_alpha'),
          dpo_normalize_logratios_by_length: d.dpo_normalize_logratios_by_length ?? false,
          dpo_reference_free: d.dpo_reference_free ?? false,
          simpo_gamma: range(d.simpo_gamma ?? 0, 0, 100, 'training_method.simpo_gamma'),
        };
      })()
    : { method: 'sft' as const, train_on_inputs: (tm as { train_on_inputs: boolean | 'auto' }).train_on_inputs ?? 'auto' };

  const nEpochs = int(body.n_epochs ?? 1, 1, limits.max_num_epochs, 'n_epochs');
  const nEvals = int(body.n_evals ?? 0, 0, limits.max_num_evals, 'n_evals');
  const nCheckpoints = int(body.n_checkpoints ?? 1, 1, limits.max_num_checkpoints, 'n_checkpoints');
  if (nEvals > 0 && !body.validation_file) throw badRequest("'n_evals' above 0 needs a 'validation_file' to evaluate on.", 'validation_file', 'required');

  const sched = body.lr_scheduler ?? { lr_scheduler_type: 'linear' as const };
  const args = (sched.lr_scheduler_args ?? {}) as { min_lr_ratio?: number; num_cycles?: number };
  const lrScheduler: Accepted['lrScheduler'] =
    sched.lr_scheduler_type === 'cosine'
      ? {
          lr_scheduler_type: 'cosine',
          lr_scheduler_args: {
            min_lr_ratio: range(args.min_lr_ratio ?? 0, 0, 1, 'lr_scheduler.lr_scheduler_args.min_lr_ratio'),
            num_cycles: range(args.num_cycles ?? 0.5, 0.01, 100, 'lr_scheduler.lr_scheduler_args.num_cycles'),
          },
        }
      : {
          lr_scheduler_type: 'linear',
          lr_scheduler_args: { min_lr_ratio: range(args.min_lr_ratio ?? 0, 0, 1, 'lr_scheduler.lr_scheduler_args.min_lr_ratio') },
        };

  // Early stopping (2.11): a validation file, and room for the warm-up, the reference and `patience` evaluations.
  const enabled = body.early_stopping_enabled ?? false;
  const patience = int(body.early_stopping_patience ?? 2, 1, 1000, 'early_stopping_patience');
  const minDelta = range(body.early_stopping_min_delta ?? 0, 0, 1e6, 'early_stopping_min_delta');
  const warmupEvals = int(body.early_stopping_warmup_evals ?? 1, 0, 1000, 'early_stopping_warmup_evals');
  if (enabled) {
    if (!body.validation_file) throw badRequest('Early stopping needs a validation_file: it watches the validation loss.', 'validation_file', 'required');
    if (nEvals < patience + warmupEvals + 1) {
      throw badRequest(
        `Early stopping needs n_evals >= early_stopping_patience + early_stopping_warmup_evals + 1 = ${patience + warmupEvals + 1} (got n_evals ${nEvals}).`,
        'n_evals',
        'early_stopping_needs_evals',
      );
    }
  }
  if (body.suffix !== undefined && !/^[\w.-]{1,64}$/.test(body.suffix))
    throw badRequest("'suffix' must be 1 to 64 letters, digits, '_', '-' or '.'.", 'suffix');
  return {
    nEpochs,
    nCheckpoints,
    nEvals,
    batchSize,
    maxSeqLength: int(body.max_seq_length ?? maxSeq, limits.min_max_seq_length, maxSeq, 'max_seq_length'),
    packing: body.packing ?? true,
    learningRate: range(body.learning_rate ?? 1e-5, limits.min_learning_rate, limits.max_learning_rate, 'learning_rate'),
    lrScheduler,
    warmupRatio: range(body.warmup_ratio ?? 0, 0, 1, 'warmup_ratio'),
    maxGradNorm: range(body.max_grad_norm ?? 1, 0, 1e6, 'max_grad_norm'),
    weightDecay: range(body.weight_decay ?? 0, 0, 1e6, 'weight_decay'),
    randomSeed: body.random_seed ?? null,
    trainingType,
    trainingMethod,
    earlyStopping: { enabled, patience, minDelta, warmupEvals },
    suffix: body.suffix ?? null,
    wandb: {
      project_name: body.wandb_project_name ?? null,
      name: body.wandb_name ?? null,
      entity: body.wandb_entity ?? null,
      base_url: body.wandb_base_url ?? null,
      key_given: body.wandb_api_key !== undefined,
    },
    fromCheckpoint: body.from_checkpoint ?? null,
    fromHfModel: body.from_hf_model ?? null,
    hfModelRevision: body.hf_model_revision ?? null,
    hfOutputRepoName: body.hf_output_repo_name ?? null,
    multimodalParams: body.multimodal_params ?? null,
    trainOnInputs: body.train_on_inputs ?? 'auto',
  };
}

/**
 * The job's owner address: the owning project's, `0x` and 40 hex digits (the form of the platform's account
 * addresses), derived from the project's id so it is the same for every job of the project and never changes.
 */
export const ownerAddress = (projectId: string): string => `0x${createHash('sha256').update(`owner:${projectId}`).digest('hex').slice(0, 40)}`;

/** The fine-tuned model's name: `<project slug>/<base model name>-<suffix>-<job id's last 6>`. */
export function outputName(projectSlug: string, model: Model, suffix: string | null, jobId: string): string {
  const base = model.id.split('/').pop()!;
  return `${projectSlug}/${base}${suffix ? `-${suffix}` : ''}-${jobId.slice(-6)}`;
}

/** Dollars for `tokens` trained tokens. */
export const priceOf = (m: Model, a: Pick<Accepted, 'trainingType' | 'trainingMethod'>, tokens: number) =>
  (tokens / 1e6) * pricePerMillion(m, a.trainingType.type === 'Full', a.trainingMethod.method === 'dpo');
