// Module `fine-tuning`: what a download of a model or checkpoint holds. The local engine trained no weights, so the
// archive carries what it did compute for that checkpoint (the hyper-parameters, the checkpoint and its losses, the
// metrics so far) and a README saying so; never a made-up weight file or a hosted URL.
import type { FineTune, FineTuneCheckpoint } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { TarMember } from '../../core/tar.ts';
import type { Accepted } from './rules.ts';
import { fineTuneWire } from './wire.ts';

export type CheckpointType = 'merged' | 'adapter' | 'model_output_path';

/** The job's hyper-parameters, named and valued as the job reports them (GET /v1/fine-tunes/{id}). */
const TRAINING_ARGS = [
  'model',
  'training_file',
  'validation_file',
  'n_epochs',
  'n_checkpoints',
  'n_evals',
  'batch_size',
  'max_seq_length',
  'packing',
  'learning_rate',
  'lr_scheduler',
  'warmup_ratio',
  'max_grad_norm',
  'weight_decay',
  'random_seed',
  'training_type',
  'training_method',
  'train_on_inputs',
  'early_stopping_enabled',
  'early_stopping_patience',
  'early_stopping_min_delta',
  'early_stopping_warmup_evals',
  'suffix',
  'from_checkpoint',
  'from_hf_model',
  'hf_model_revision',
  'multimodal_params',
] as const;

/** What the platform's archive of `type` would hold, in words. */
function wouldHold(type: CheckpointType, lora: boolean, base: string): string {
  if (type === 'adapter' || (type === 'model_output_path' && lora)) return `the LoRA adapter's weights (for ${base})`;
  if (lora) return `the weights of ${base} with the LoRA adapter merged in`;
  return 'the weights of the fully trained model';
}

const json = (value: unknown) => Buffer.from(`${JSON.stringify(value, null, 2)}\n`);

/** The archive's members for checkpoint `c` of `job`, downloaded as `type`. */
export function archiveMembers(job: FineTune, c: FineTuneCheckpoint, type: CheckpointType): TarMember[] {
  const a = JSON.parse(job.params) as Accepted;
  const lora = a.trainingType.type === 'Lora';
  const rows = ((job.metrics ? JSON.parse(job.metrics) : []) as Record<string, number>[]).filter((r) => r['train/global_step']! <= c.step);
  const at = rows.find((r) => r['train/global_step'] === c.step);
  const lastEval = rows.filter((r) => 'eval/loss' in r).pop();
  const wire = fineTuneWire(job, []) as Record<string, unknown>;
  const args = Object.fromEntries(TRAINING_ARGS.filter((k) => wire[k] !== undefined).map((k) => [k, wire[k]]));
  const checkpoint = {
    job_id: job.id,
    step: c.step,
    checkpoint_type: c.type,
    checkpoint: type,
    kind: c.kind,
    path: `${job.id}:${c.step}`,
    created_at: iso(c.createdAt),
    base_model: job.model,
    model_output_name: job.outputName,
    train_loss: at?.['train/loss'] ?? null,
    learning_rate: at?.['train/learning_rate'] ?? null,
    epoch: at?.['train/epoch'] ?? null,
    eval_loss: lastEval?.['eval/loss'] ?? null,
    eval_step: lastEval?.['train/global_step'] ?? null,
    engine: 'local',
    weights: false,
  };
  const readme = [
    `Fine-tuning job ${job.id}: the ${c.type === 'Final' ? 'final model' : 'intermediate checkpoint'} at step ${c.step}, downloaded as '${type}'.`,
    '',
    'NO MODEL WEIGHTS ARE IN THIS ARCHIVE. It comes from the local engine, which simulates training',
    'deterministically from the dataset and trains no weights: there is no model here to load or serve.',
    `On the hosted platform this download would hold ${wouldHold(type, lora, job.model)}.`,
    '',
    'What the local engine did compute for this checkpoint:',
    "  training_args.json  the job's hyper-parameters, every default applied",
    `  checkpoint.json     the checkpoint: its step, type, and the loss values at step ${c.step}`,
    `  metrics.jsonl       the training metrics of steps 1 to ${c.step}, one JSON object a line`,
    '',
  ].join('\n');
  const mtimeMs = Number(c.createdAt);
  return [
    { name: 'README.txt', content: Buffer.from(readme), mtimeMs },
    { name: 'training_args.json', content: json(args), mtimeMs },
    { name: 'checkpoint.json', content: json(checkpoint), mtimeMs },
    { name: 'metrics.jsonl', content: Buffer.from(rows.map((r) => `${JSON.stringify(r)}\n`).join('')), mtimeMs },
  ];
}
