// The reinforcement-learning engine interface (capability `rl`): what a training session's operations ask of a model,
// and the two engines that answer. The local engine (local.ts) really trains this server's small model (net.ts) on
// the CPU; the upstream engine (upstream.ts) runs each operation on another server speaking the platform's RL API
// (another instance of this server, or the platform). Either way the module keeps what the engine answers as opaque
// bytes (a trainer's state, a sampler's weights, a checkpoint) and hands them back with the next operation, in
// order: the engine itself keeps nothing between calls.
import type { TextEngine } from '../chat.ts';
import type { LossSpec } from './losses.ts';
import type { Lora } from './net.ts';
import type { OptimizerStep } from './optimizers.ts';
import type { SamplingParams, Sequence } from './sampling.ts';

export type { Lora, LossSpec, OptimizerStep, SamplingParams, Sequence };

/** The local engine's name and version (`x-rl-engine`, chat's `system_fingerprint`, checkpoint files). */
export const LOCAL_RL_ENGINE = 'local-rl-engine-1';

export interface SessionModel {
  baseModel: string;
  /** null: full fine-tuning. */
  lora: Lora | null;
  optimizer: 'adamw' | 'muon';
}

/** A training sample, as validated: input tokens, and per input position its target and the loss's inputs. */
export interface TrainingSample {
  tokens: number[];
  targets: number[];
  weights?: number[];
  advantages?: number[];
  /** The logprobs the targets were sampled with. */
  logprobs?: number[];
  referenceLogprobs?: number[];
}

export interface SampleRequest {
  prompts: number[][];
  numSamples: number;
  params: SamplingParams;
  promptLogprobs: boolean;
  topkPromptLogprobs: number;
}

export interface SampleOutcome {
  sequences: Sequence[];
  promptLogprobs?: number[];
  topkPromptLogprobs?: { token_ids: number[]; logprobs: number[] }[];
}

export interface CheckpointFile {
  filename: string;
  /** The bytes (a local checkpoint's files are made on request), or where the upstream serves them. */
  bytes?: Uint8Array;
  url?: string;
  size: number;
}

export type Variant = 'merged' | 'adapter';

/** An operation's failure that is the caller's outcome, not the server's: it fails the operation with this code. */
export class OperationFailed extends Error {
  constructor(
    readonly code:
      | 'TRAINING_OPERATION_ERROR_CODE_NON_FINITE_LOSS'
      | 'TRAINING_OPERATION_ERROR_CODE_INVALID_INPUT'
      | 'TRAINING_OPERATION_ERROR_CODE_INTERNAL_ERROR',
    message: string,
  ) {
    super(message);
  }
}

export interface RlEngine {
  readonly name: 'local' | 'upstream';
  /** What the engine is, for responses (`x-rl-engine`) and checkpoint files. */
  readonly description: string;
  /** A new session's trainer and sampler (from a training checkpoint's trainer when resuming). */
  start(model: SessionModel, resume?: Uint8Array): Promise<{ trainer: Uint8Array; sampler: Uint8Array }>;
  /** Each sample's target logprobs under the trainer's weights. */
  forward(trainer: Uint8Array, samples: TrainingSample[]): Promise<number[][]>;
  /** The loss, its gradient added to the trainer's accumulated gradients; `seed` draws LoRA dropout. */
  forwardBackward(
    trainer: Uint8Array,
    samples: TrainingSample[],
    loss: LossSpec,
    seed: string,
  ): Promise<{ trainer: Uint8Array; loss: number; metrics: Record<string, number> }>;
  /** The gradient of sum(gradients x target logprobs) added to the accumulated gradients. */
  customForwardBackward(
    trainer: Uint8Array,
    samples: TrainingSample[],
    gradients: number[][],
    seed: string,
  ): Promise<{ trainer: Uint8Array; metrics: Record<string, number> }>;
  optimStep(trainer: Uint8Array, step: OptimizerStep): Promise<{ trainer: Uint8Array; step: number }>;
  /** The trainer's weights for the sampler, and their version (the trainer's step). */
  weightsSync(trainer: Uint8Array): Promise<{ sampler: Uint8Array; version: number }>;
  sample(sampler: Uint8Array, request: SampleRequest): Promise<SampleOutcome[]>;
  /** A checkpoint of the trainer: `training` (weights and optimizer, to resume from) or `inference` (weights). */
  checkpoint(trainer: Uint8Array, kind: 'training' | 'inference'): Promise<{ bytes: Uint8Array; step: number }>;
  /** A checkpoint's files as a user downloads them. */
  files(checkpoint: Uint8Array, kind: 'training' | 'inference', variant: Variant): Promise<CheckpointFile[]>;
  /** The text engine that answers chat completions and completions with an inference checkpoint's weights; `about` says whose they are. */
  chat(checkpoint: Uint8Array, about: string): TextEngine;
}
