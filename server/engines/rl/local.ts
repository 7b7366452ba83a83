// The local RL engine: this server's small model (net.ts), really trained on the CPU. Every operation reads the state
// the previous one left (safetensors bytes, state.ts) and answers the next; nothing is kept in between, so an
// operation run again (after a crash) from the same state and seed computes the same bytes.
import { setImmediate as yieldNow } from 'node:timers/promises';
import type { CheckpointFile, RlEngine, SampleOutcome, TrainingSample, Variant } from './engine.ts';
import { LOCAL_RL_ENGINE, OperationFailed } from './engine.ts';
import { computeLoss } from './losses.ts';
import {
  ARCHITECTURE,
  baseEmbedding,
  CONTEXT,
  EMBEDDING,
  enterTokens,
  type Grads,
  HIDDEN,
  INPUT,
  initialWeights,
  Net,
  type Pass,
  shapes,
  TABLE_SIZE,
  VOCABULARY_SIZE,
  type Weights,
} from './net.ts';
import { norm, optimizerStep } from './optimizers.ts';
import { random } from './random.ts';
import { writeSafetensors } from './safetensors.ts';
import { promptLogprobs, sampleSequences } from './sampling.ts';
import { copyWeights, decodeSnapshot, decodeTrainer, encodeSnapshot, encodeTrainer, type TrainerState } from './state.ts';
import { rlTextEngine } from './text.ts';

const DESCRIPTION = `${LOCAL_RL_ENGINE}: this server's small local model (${ARCHITECTURE}: ${CONTEXT} tokens of context, ${EMBEDDING}-wide embeddings, one ${HIDDEN}-unit hidden layer), trained on this CPU; not the named base model`;

const finite = (xs: Iterable<ArrayLike<number>>) => {
  for (const a of xs) for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i]!)) return false;
  return true;
};

/** Forward passes over the samples (yielding between them), with LoRA dropout drawn from `seed` when training. */
async function passes(net: Net, samples: TrainingSample[], seed?: string): Promise<Pass[]> {
  const out: Pass[] = [];
  for (const [i, s] of samples.entries()) {
    const rng = seed === undefined || !net.w.lora?.dropout ? undefined : random('rl-dropout', seed, i);
    out.push(net.forward(s.tokens, s.targets, rng?.next));
    await yieldNow();
  }
  return out;
}

/** Backward passes, their gradient added to the trainer's; answers its norm. Non-finite: the operation fails and nothing changes. */
async function accumulate(state: TrainerState, net: Net, all: Pass[], grads: number[][]): Promise<number> {
  const g: Grads = {};
  for (const [i, p] of all.entries()) {
    net.backward(p, grads[i]!, g);
    await yieldNow();
  }
  if (!finite(Object.values(g)))
    throw new OperationFailed('TRAINING_OPERATION_ERROR_CODE_NON_FINITE_LOSS', 'The gradient is not finite; nothing was accumulated.');
  for (const [name, a] of Object.entries(g)) {
    const before = state.grads[name];
    const acc = new Float32Array(a.length);
    if (before) acc.set(before.subarray(0, Math.min(before.length, a.length)));
    for (let k = 0; k < a.length; k++) acc[k]! += a[k]!;
    state.grads[name] = acc;
  }
  state.accumulated += 1;
  return norm(Object.values(g));
}

/** Every token of the samples (inputs and targets) enters the table: training is what teaches the model a token. */
function enterSamples(state: TrainerState, samples: TrainingSample[]): void {
  const tokens = new Set<number>();
  for (const s of samples) for (const t of [...s.tokens, ...s.targets]) tokens.add(t);
  enterTokens(state.weights, tokens, [state.grads, state.moments.m, state.moments.v]);
}

/** The weights as one model: LoRA merged into the base (what `merged` downloads hold). */
function merged(w: Weights): Record<string, Float32Array> {
  if (!w.lora) return w.params;
  const n = w.table.length;
  const r = w.lora.rank;
  const s = w.lora.alpha / w.lora.rank;
  const p = w.params;
  const base = initialWeights(w.baseModel, null).params;
  const hidden = Float32Array.from(base.hidden!);
  for (let o = 0; o < HIDDEN; o++)
    for (let i = 0; i < INPUT; i++) {
      let sum = 0;
      for (let k = 0; k < r; k++) sum += p.lora_hidden_b![o * r + k]! * p.lora_hidden_a![k * INPUT + i]!;
      hidden[o * INPUT + i]! += s * sum;
    }
  const row = (b: Float32Array, j: number) =>
    Float32Array.from({ length: HIDDEN }, (_, i) => {
      if (!p.lora_unembed_a) return 0;
      let sum = 0;
      for (let k = 0; k < r; k++) sum += b[j * r + k]! * p.lora_unembed_a[k * HIDDEN + i]!;
      return s * sum;
    });
  const unembed = new Float32Array(n * HIDDEN);
  for (let j = 0; j < n; j++) unembed.set(row(p.lora_unembed_b ?? new Float32Array(n * r), j), j * HIDDEN);
  const embed = new Float32Array(n * EMBEDDING);
  w.table.forEach((t, j) => {
    embed.set(baseEmbedding(w.baseModel, t), j * EMBEDDING);
  });
  return {
    embed,
    unembed,
    unembed_bias: new Float32Array(n),
    hidden,
    hidden_bias: new Float32Array(HIDDEN),
    other_unembed: row(p.lora_other_b ?? new Float32Array(r), 0),
    other_bias: new Float32Array(1),
  };
}

const asTensors = (w: Weights, params: Record<string, Float32Array>) => {
  const shape = shapes(w.lora && params === w.params ? w.lora : null, w.table.length);
  return {
    table: { data: Int32Array.from(w.table), shape: [w.table.length] },
    ...Object.fromEntries(Object.entries(params).map(([n, data]) => [n, { data, shape: shape[n] ?? [data.length] }])),
  };
};

const json = (value: unknown) => Buffer.from(`${JSON.stringify(value, null, 2)}\n`);

function config(w: Weights, step: number) {
  return {
    architecture: ARCHITECTURE,
    engine: LOCAL_RL_ENGINE,
    note: `This server's small local model, trained in an RL session named after ${w.baseModel}; it is not ${w.baseModel}.`,
    context_tokens: CONTEXT,
    embedding_dim: EMBEDDING,
    hidden_dim: HIDDEN,
    activation: 'tanh',
    tokenizer: 'cl100k_base',
    vocabulary_size: VOCABULARY_SIZE,
    table_tokens: w.table.length,
    table_size: TABLE_SIZE,
    base_seed: w.baseModel,
    lora: w.lora,
    step,
  };
}

const README = (w: Weights, kind: string, variant: Variant) =>
  Buffer.from(
    [
      `A ${kind} checkpoint of this server's small local model (${ARCHITECTURE}), trained by its local RL engine (${LOCAL_RL_ENGINE}).`,
      `It is not ${w.baseModel}: that name seeds the model's random base weights, nothing more.`,
      '',
      `Each next token's distribution depends on the ${CONTEXT} tokens before it (their ${EMBEDDING}-wide embeddings, concatenated),`,
      `through one tanh layer of ${HIDDEN} units, then one output row per token of \`table\` (cl100k_base ids) and one shared`,
      `row (\`other_*\`) for each of the ${VOCABULARY_SIZE} tokens not in it. Tokens outside the table have base embeddings`,
      "drawn from the base model's name by the server's generator.",
      '',
      variant === 'adapter'
        ? '`adapter_model.safetensors`: the LoRA adapters (`lora_*_a`, `lora_*_b`; scale alpha / rank), and `table`.'
        : '`model.safetensors`: every weight (LoRA merged in), and `table`.',
      kind === 'training'
        ? '`trainer_state.safetensors`: the trainer as it was (weights, accumulated gradients, optimizer moments, step), to resume from.'
        : '',
      '',
    ].join('\n'),
  );

export const localRlEngine: RlEngine = {
  name: 'local',
  description: DESCRIPTION,

  async start(model, resume) {
    if (resume) {
      const t = decodeTrainer(resume);
      return { trainer: resume, sampler: encodeSnapshot({ weights: t.weights, step: t.step }) };
    }
    const weights = initialWeights(model.baseModel, model.lora);
    const state: TrainerState = { weights, grads: {}, moments: { m: {}, v: {}, t: 0 }, step: 0, accumulated: 0 };
    return { trainer: encodeTrainer(state), sampler: encodeSnapshot({ weights, step: 0 }) };
  },

  async forward(trainer, samples) {
    const net = new Net(decodeTrainer(trainer).weights);
    return (await passes(net, samples)).map((p) => p.logprobs);
  },

  async forwardBackward(trainer, samples, loss, seed) {
    const state = decodeTrainer(trainer);
    enterSamples(state, samples);
    const net = new Net(state.weights);
    const all = await passes(net, samples, seed);
    const result = computeLoss(
      loss,
      samples.map((s, i) => ({
        logprobs: all[i]!.logprobs,
        weights: s.weights,
        advantages: s.advantages,
        sampling: s.logprobs,
        reference: s.referenceLogprobs,
      })),
    );
    if (!Number.isFinite(result.loss) || !finite(result.grads))
      throw new OperationFailed('TRAINING_OPERATION_ERROR_CODE_NON_FINITE_LOSS', `The loss is not finite (${result.loss}); nothing was accumulated.`);
    const gradNorm = await accumulate(state, net, all, result.grads);
    const tokens = samples.reduce((n, s) => n + s.targets.length, 0);
    return {
      trainer: encodeTrainer(state),
      loss: result.loss,
      metrics: { ...result.metrics, tokens, grad_norm: gradNorm, table_tokens: state.weights.table.length },
    };
  },

  async customForwardBackward(trainer, samples, gradients, seed) {
    const state = decodeTrainer(trainer);
    enterSamples(state, samples);
    const net = new Net(state.weights);
    const all = await passes(net, samples, seed);
    const gradNorm = await accumulate(state, net, all, gradients);
    return { trainer: encodeTrainer(state), metrics: { grad_norm: gradNorm } };
  },

  async optimStep(trainer, step) {
    const state = decodeTrainer(trainer);
    optimizerStep(state.weights, state.grads, state.moments, step);
    if (!finite(Object.values(state.weights.params)))
      throw new OperationFailed(
        'TRAINING_OPERATION_ERROR_CODE_NON_FINITE_LOSS',
        'The step would make weights that are not finite; the weights were left as they were.',
      );
    state.step += 1;
    state.accumulated = 0;
    return { trainer: encodeTrainer(state), step: state.step };
  },

  async weightsSync(trainer) {
    const state = decodeTrainer(trainer);
    return { sampler: encodeSnapshot({ weights: copyWeights(state.weights), step: state.step }), version: state.step };
  },

  async sample(sampler, request) {
    const { weights } = decodeSnapshot(sampler);
    const out: SampleOutcome[] = [];
    for (const [i, prompt] of request.prompts.entries()) {
      const sequences = await sampleSequences(weights, prompt, request.numSamples, request.params, String(i));
      const k = request.topkPromptLogprobs;
      const lp = request.promptLogprobs || k > 0 ? promptLogprobs(weights, prompt, k) : null;
      out.push({
        sequences,
        ...(request.promptLogprobs ? { promptLogprobs: lp!.logprobs } : {}),
        ...(k > 0 ? { topkPromptLogprobs: lp!.top } : {}),
      });
    }
    return out;
  },

  async checkpoint(trainer, kind) {
    const state = decodeTrainer(trainer);
    if (kind === 'training') return { bytes: trainer, step: state.step };
    return { bytes: encodeSnapshot({ weights: state.weights, step: state.step }), step: state.step };
  },

  async files(checkpoint, kind, variant) {
    const { weights, step } = decodeSnapshot(checkpoint);
    const files: { filename: string; bytes: Uint8Array }[] =
      variant === 'adapter'
        ? [
            { filename: 'adapter_model.safetensors', bytes: writeSafetensors({ tensors: asTensors(weights, weights.params), metadata: { format: 'pt' } }) },
            {
              filename: 'adapter_config.json',
              bytes: json({
                ...config(weights, step),
                r: weights.lora!.rank,
                lora_alpha: weights.lora!.alpha,
                lora_dropout: weights.lora!.dropout,
                target_modules: weights.lora!.trainUnembed ? ['hidden', 'unembed'] : ['hidden'],
              }),
            },
          ]
        : [
            { filename: 'model.safetensors', bytes: writeSafetensors({ tensors: asTensors(weights, merged(weights)), metadata: { format: 'pt' } }) },
            { filename: 'config.json', bytes: json({ ...config(weights, step), lora: null, merged_from_lora: weights.lora !== null }) },
          ];
    files.push({ filename: 'README.md', bytes: README(weights, kind, variant) });
    if (kind === 'training') files.push({ filename: 'trainer_state.safetensors', bytes: checkpoint });
    return files.map((f): CheckpointFile => ({ ...f, size: f.bytes.byteLength }));
  },

  chat: (checkpoint, about) => rlTextEngine(checkpoint, about),
};
