// What the local RL engine keeps between operations, as safetensors bytes: a trainer's state (its weights, the
// gradients accumulated since the last optimizer step, the optimizer's moments, its step), and a weights snapshot
// (the sampler's weights after a weights-sync, an inference checkpoint). The module stores these bytes as they are;
// every operation reads the state the previous one left and answers the next.
import type { Lora, Weights } from './net.ts';
import type { Moments } from './optimizers.ts';
import { readSafetensors, type Tensor, writeSafetensors } from './safetensors.ts';

export interface TrainerState {
  weights: Weights;
  /** Gradients accumulated by forward-backward passes since the last optimizer step. */
  grads: Record<string, Float32Array>;
  moments: Moments;
  /** Optimizer steps taken. */
  step: number;
  /** Forward-backward passes accumulated since the last step. */
  accumulated: number;
}

export interface Snapshot {
  weights: Weights;
  /** The trainer's step the weights are of. */
  step: number;
}

const TRAINER = 'local-rl-trainer-1';
const WEIGHTS = 'local-rl-weights-1';

const tensors = (prefix: string, arrays: Record<string, Float32Array>) =>
  Object.fromEntries(Object.entries(arrays).map(([n, data]) => [`${prefix}${n}`, { data, shape: [data.length] } as Tensor]));

const pick = (all: Record<string, Tensor>, prefix: string) =>
  Object.fromEntries(
    Object.entries(all)
      .filter(([n]) => n.startsWith(prefix))
      .map(([n, t]) => [n.slice(prefix.length), t.data as Float32Array]),
  );

const weightsMeta = (w: Weights) => ({ base_model: w.baseModel, lora: JSON.stringify(w.lora) });

const weightsOf = (file: ReturnType<typeof readSafetensors>): Weights => ({
  baseModel: file.metadata.base_model!,
  lora: JSON.parse(file.metadata.lora ?? 'null') as Lora | null,
  table: Array.from(file.tensors.table?.data ?? []),
  params: pick(file.tensors, 'w.'),
});

export function encodeTrainer(s: TrainerState): Uint8Array {
  return writeSafetensors({
    tensors: {
      table: { data: Int32Array.from(s.weights.table), shape: [s.weights.table.length] },
      ...tensors('w.', s.weights.params),
      ...tensors('g.', s.grads),
      ...tensors('m.', s.moments.m),
      ...tensors('v.', s.moments.v),
    },
    metadata: { format: TRAINER, ...weightsMeta(s.weights), step: String(s.step), accumulated: String(s.accumulated), adam_t: String(s.moments.t) },
  });
}

export function decodeTrainer(bytes: Uint8Array): TrainerState {
  const file = readSafetensors(bytes);
  if (file.metadata.format !== TRAINER) throw new Error('not a trainer state of the local RL engine');
  return {
    weights: weightsOf(file),
    grads: pick(file.tensors, 'g.'),
    moments: { m: pick(file.tensors, 'm.'), v: pick(file.tensors, 'v.'), t: Number(file.metadata.adam_t) },
    step: Number(file.metadata.step),
    accumulated: Number(file.metadata.accumulated),
  };
}

export function encodeSnapshot(s: Snapshot): Uint8Array {
  return writeSafetensors({
    tensors: { table: { data: Int32Array.from(s.weights.table), shape: [s.weights.table.length] }, ...tensors('w.', s.weights.params) },
    metadata: { format: WEIGHTS, ...weightsMeta(s.weights), step: String(s.step) },
  });
}

export function decodeSnapshot(bytes: Uint8Array): Snapshot {
  const file = readSafetensors(bytes);
  if (file.metadata.format === TRAINER) {
    const t = decodeTrainer(bytes);
    return { weights: t.weights, step: t.step };
  }
  if (file.metadata.format !== WEIGHTS) throw new Error('not a weights snapshot of the local RL engine');
  return { weights: weightsOf(file), step: Number(file.metadata.step) };
}

/** A deep copy of weights (a snapshot must not move with the trainer). */
export const copyWeights = (w: Weights): Weights => ({
  ...w,
  table: [...w.table],
  params: Object.fromEntries(Object.entries(w.params).map(([n, a]) => [n, Float32Array.from(a)])),
});
