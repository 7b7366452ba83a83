// The rules of reinforcement learning's requests, each once: what a body must be beyond its schema (the bounds the
// spec's RL tag lists, the loss's inputs, the optimizer's parameters), with every default applied, as the engine
// takes it. Every refusal is 400 naming the field (a dotted path, indices included); nothing is written before.
import { createHash } from 'node:crypto';
import type { components } from '../../../generated/api.d.ts';
import { badRequest } from '../../core/errors.ts';
import type { Lora, LossSpec, OptimizerStep, SampleRequest, TrainingSample } from '../../engines/rl/engine.ts';
import { isToken, VOCABULARY_SIZE } from '../../engines/rl/net.ts';
import type { RequestBody } from '../types.ts';

type Schemas = components['schemas'];

export const LIMITS = {
  /** Tokens of one sequence: a training sample, or a prompt with its max_tokens. */
  sequence: 2048,
  samples: 64,
  batchTokens: 32_768,
  prompts: 64,
  numSamples: 64,
  sequences: 256,
  sampledTokens: 16_384,
  stops: 16,
  stopLength: 200,
  rank: 64,
  alpha: 1024,
  replicas: 8,
  /** Operations that may wait per session. */
  queue: 256,
} as const;

/** The base models model resources may name: catalogue models, whose names seed the local model. */
export const SUPPORTED_MODELS = [
  'meta-llama/Meta-Llama-3.1-8B-Instruct',
  'meta-llama/Llama-3.3-70B-Instruct',
  'Qwen/Qwen2.5-7B-Instruct',
  'Qwen/Qwen3.5-9B',
  'openai/gpt-oss-120b',
] as const;

export const SAMPLING_DEFAULTS = { n: 1, max_tokens: 512, temperature: 1, logprobs: 0 };

const refuse = (param: string, message: string) => badRequest(message, param);

function range(value: number, param: string, min: number, max: number, what = 'a number'): number {
  if (!(value >= min && value <= max)) throw refuse(param, `'${param}' must be ${what} from ${min} to ${max}; got ${value}.`);
  return value;
}

function below(value: number, param: string, min: number, max: number): number {
  if (!(value >= min && value < max)) throw refuse(param, `'${param}' must be at least ${min} and less than ${max}; got ${value}.`);
  return value;
}

const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n };

/** An integer given as a number or a decimal string, within 64 bits, as its decimal string. */
export function integerish(value: string | number, param: string): string {
  const text = String(value).trim();
  if (!/^-?\d+$/.test(text)) throw refuse(param, `'${param}' must be an integer (or its decimal string); got ${JSON.stringify(value)}.`);
  const n = BigInt(text);
  if (n < INT64.min || n > INT64.max) throw refuse(param, `'${param}' must fit in 64 bits; got ${text}.`);
  return n.toString();
}

/** The seed an operation draws from when none is given: a 63-bit integer from its id (the same on every run of it). */
export const seedOf = (id: string) => (createHash('sha256').update(id).digest().readBigUInt64BE(0) >> 1n).toString();

/** A token id of the server's tokenizer. */
function token(value: string | number, param: string): number {
  const n = Number(integerish(value, param));
  if (!isToken(n))
    throw refuse(param, `'${param}' is ${n}, which is not a token id of cl100k_base, this server's tokenizer (0 to 100255, and 100257-100260, 100276).`);
  return n;
}

// ---- model resources and sessions ----

export interface AcceptedResources {
  baseModel: string;
  loraEnabled: boolean;
  replicas: number;
  optimizer: { adamw: Record<string, never> } | { muon: { scaling_strategy: string } };
}

export function acceptResources(body: RequestBody<'createModelResources'>): AcceptedResources {
  if (!(SUPPORTED_MODELS as readonly string[]).includes(body.base_model))
    throw badRequest(
      `'${body.base_model}' is not a base model RL supports here; GET /v1/rl/supported-models lists them (${SUPPORTED_MODELS.join(', ')}).`,
      'base_model',
      'model_not_supported',
    );
  const replicas = range(body.compute_config?.num_generator_replicas ?? 1, 'compute_config.num_generator_replicas', 1, LIMITS.replicas, 'a whole number');
  const oc = body.optimizer_config ?? {};
  if (oc.adamw && oc.muon) throw refuse('optimizer_config', "'optimizer_config' names one optimizer: 'adamw' or 'muon', not both.");
  const optimizer = oc.muon
    ? {
        muon: {
          scaling_strategy:
            oc.muon.scaling_strategy === 'MUON_SCALING_STRATEGY_ORIGINAL' ? 'MUON_SCALING_STRATEGY_ORIGINAL' : 'MUON_SCALING_STRATEGY_MATCH_ADAMW',
        },
      }
    : { adamw: {} as Record<string, never> };
  return { baseModel: body.base_model, loraEnabled: body.lora_enabled ?? true, replicas, optimizer };
}

/** The H100 configuration the estimate prices resources on. */
export const PRICED_HARDWARE = '1x_nvidia_h100_80gb_sxm';

/** Dollars per hour: a GPU per generator replica, and the trainer's (one for LoRA, eight for full training). */
export const pricePerHour = (r: AcceptedResources, centsPerMinute: number) => Math.round((r.replicas + (r.loraEnabled ? 1 : 8)) * centsPerMinute * 60) / 100;

/** A session's LoRA configuration with every default applied (`seed`: the session's id when absent). */
export function acceptLora(given: Schemas['RlLoraConfig'] | undefined, sessionId: string): Lora {
  const rank = range(given?.rank ?? 32, 'lora_config.rank', 1, LIMITS.rank, 'a whole number');
  const alpha = range(given?.alpha ?? 64, 'lora_config.alpha', 1, LIMITS.alpha, 'a whole number');
  const dropout = below(given?.dropout ?? 0, 'lora_config.dropout', 0, 1);
  if (given?.train_unembed === false)
    throw refuse(
      'lora_config.train_unembed',
      "The local model's output layer starts shared by every token, so a LoRA session must train its adapter to tell tokens apart: 'train_unembed' must be true.",
    );
  const seed = given?.seed === undefined ? sessionId : integerish(given.seed, 'lora_config.seed');
  return { rank, alpha, dropout, seed, trainUnembed: true };
}

// ---- training samples ----

/** A tensor given with a sample: one value per input position. */
function perPosition<T>(data: T[] | undefined, length: number, param: string): T[] | undefined {
  if (data === undefined) return undefined;
  if (data.length !== length) throw refuse(param, `'${param}' has ${data.length} values; the sample's model_input has ${length} tokens, one value each.`);
  return data;
}

type LossKey = 'importance_sampling_inputs' | 'ppo_inputs' | 'cispo_inputs' | 'dro_inputs' | 'grpo_inputs';
const INPUTS_OF: Partial<Record<LossSpec['type'], LossKey>> = {
  importance_sampling: 'importance_sampling_inputs',
  ppo: 'ppo_inputs',
  cispo: 'cispo_inputs',
  dro: 'dro_inputs',
  grpo: 'grpo_inputs',
};

/** Samples as the engine takes them, checked against the bounds; `loss` says which inputs each must carry. */
export function acceptSamples(samples: Schemas['RlTrainingSample'][], loss?: LossSpec['type']): TrainingSample[] {
  if (samples.length < 1 || samples.length > LIMITS.samples)
    throw refuse('samples', `'samples' must hold 1 to ${LIMITS.samples} samples; got ${samples.length}.`);
  let total = 0;
  return samples.map((s, i) => {
    const at = `samples.${i}`;
    const tokens: number[] = [];
    for (const [c, chunk] of s.model_input.chunks.entries())
      for (const [k, t] of chunk.encoded_text.tokens.entries()) tokens.push(token(t, `${at}.model_input.chunks.${c}.encoded_text.tokens.${k}`));
    if (tokens.length < 1 || tokens.length > LIMITS.sequence)
      throw refuse(`${at}.model_input`, `'${at}.model_input' must hold 1 to ${LIMITS.sequence} tokens; it holds ${tokens.length}.`);
    total += tokens.length;
    if (total > LIMITS.batchTokens) throw refuse('samples', `The samples hold more than ${LIMITS.batchTokens} tokens in all.`);
    const li = s.loss_inputs;
    const targetParam = `${at}.loss_inputs.target_tokens.data`;
    const targets = perPosition(li.target_tokens.data, tokens.length, targetParam)!.map((t, k) => token(t, `${targetParam}.${k}`));
    const out: TrainingSample = { tokens, targets, weights: perPosition(li.weights?.data, tokens.length, `${at}.loss_inputs.weights.data`) };
    const key = loss && INPUTS_OF[loss];
    if (key) {
      const inputs = li[key];
      if (!inputs) throw refuse(`${at}.loss_inputs.${key}`, `This loss needs '${at}.loss_inputs.${key}' (advantages and the sampling logprobs).`);
      out.advantages = perPosition(inputs.advantages.data, tokens.length, `${at}.loss_inputs.${key}.advantages.data`);
      out.logprobs = perPosition(inputs.logprobs.data, tokens.length, `${at}.loss_inputs.${key}.logprobs.data`);
      const ref = key === 'grpo_inputs' ? (inputs as Schemas['RlGRPOLossInputs']).reference_logprobs : undefined;
      if (ref) out.referenceLogprobs = perPosition(ref.data, tokens.length, `${at}.loss_inputs.grpo_inputs.reference_logprobs.data`);
    }
    return out;
  });
}

function clipBounds(p: { clip_low_threshold?: number; clip_high_threshold?: number } | undefined, param: string, low: number, high: number) {
  const lo = p?.clip_low_threshold ?? low;
  const hi = p?.clip_high_threshold ?? high;
  range(lo, `${param}.clip_low_threshold`, 0, 1e6);
  range(hi, `${param}.clip_high_threshold`, 0, 1e6);
  if (lo > hi) throw refuse(`${param}.clip_low_threshold`, `'${param}.clip_low_threshold' (${lo}) must not be above 'clip_high_threshold' (${hi}).`);
  return { low: lo, high: hi };
}

export function acceptLoss(loss: RequestBody<'forwardBackward'>['loss']): LossSpec {
  switch (loss.type) {
    case 'LOSS_TYPE_CROSS_ENTROPY':
      return { type: 'cross_entropy' };
    case 'LOSS_TYPE_IMPORTANCE_SAMPLING':
      return { type: 'importance_sampling' };
    case 'LOSS_TYPE_PPO':
      return { type: 'ppo', ...clipBounds(loss.ppo_params, 'loss.ppo_params', 0.8, 1.2) };
    case 'LOSS_TYPE_CISPO':
      return { type: 'cispo', ...clipBounds(loss.cispo_params, 'loss.cispo_params', 0, 4) };
    case 'LOSS_TYPE_DRO':
      if (!loss.dro_params) throw refuse('loss.dro_params', "LOSS_TYPE_DRO needs 'loss.dro_params' with its 'beta'.");
      return { type: 'dro', beta: range(loss.dro_params.beta, 'loss.dro_params.beta', 0, 100) };
    case 'LOSS_TYPE_GRPO': {
      const p = loss.grpo_params;
      const agg = p?.agg_type ?? 'GRPO_LOSS_AGGREGATION_TYPE_FIXED_HORIZON';
      return {
        type: 'grpo',
        ...clipBounds(p, 'loss.grpo_params', 0.8, 1.2),
        beta: range(p?.beta ?? 0, 'loss.grpo_params.beta', 0, 100),
        aggregation:
          agg === 'GRPO_LOSS_AGGREGATION_TYPE_TOKEN_MEAN'
            ? 'token_mean'
            : agg === 'GRPO_LOSS_AGGREGATION_TYPE_SEQUENCE_MEAN'
              ? 'sequence_mean'
              : 'fixed_horizon',
        ratio: p?.ratio_type === 'GRPO_LOSS_RATIO_TYPE_SEQUENCE' ? 'sequence' : 'token',
      };
    }
    default:
      throw refuse('loss.type', `'loss.type' must name a loss (LOSS_TYPE_CROSS_ENTROPY, _IMPORTANCE_SAMPLING, _PPO, _CISPO, _DRO or _GRPO); got ${loss.type}.`);
  }
}

export function acceptGradients(gradients: Schemas['RlNumberTensor'][], samples: TrainingSample[]): number[][] {
  if (gradients.length !== samples.length)
    throw refuse('gradients', `'gradients' has ${gradients.length} arrays; there are ${samples.length} samples, one array each.`);
  return gradients.map((g, i) => perPosition(g.data, samples[i]!.targets.length, `gradients.${i}.data`)!);
}

// ---- the optimizer ----

function adam(p: Schemas['RlAdamParams'] | undefined, param: string, learningRate = 1e-4): Extract<OptimizerStep, { kind: 'adamw' }>['adam'] {
  return {
    learningRate: range(p?.learning_rate ?? learningRate, `${param}.learning_rate`, 0, 10),
    beta1: below(p?.beta1 ?? 0.9, `${param}.beta1`, 0, 1),
    beta2: below(p?.beta2 ?? 0.95, `${param}.beta2`, 0, 1),
    eps: range(p?.eps ?? 1e-8, `${param}.eps`, Number.MIN_VALUE, 1),
    weightDecay: range(p?.weight_decay ?? 0, `${param}.weight_decay`, 0, 10),
    gradClipNorm: range(p?.grad_clip_norm ?? 1, `${param}.grad_clip_norm`, 0, Number.MAX_VALUE),
  };
}

/** The step's parameters for the resources' optimizer; the other optimizer's are refused. */
export function acceptOptimStep(body: RequestBody<'OptimStep'>, optimizer: AcceptedResources['optimizer']): OptimizerStep {
  if ('adamw' in optimizer) {
    if (body.muon_params) throw refuse('muon_params', "These model resources train with AdamW: give 'adam_params', not 'muon_params'.");
    return { kind: 'adamw', adam: adam(body.adam_params, 'adam_params') };
  }
  if (body.adam_params)
    throw refuse('adam_params', "These model resources train with Muon: give 'muon_params' (its 'adam' for the parameters Muon does not orthogonalise).");
  const m = body.muon_params;
  const learningRate = range(m?.learning_rate ?? 1e-4, 'muon_params.learning_rate', 0, 10);
  return {
    kind: 'muon',
    muon: {
      learningRate,
      momentum: below(m?.momentum ?? 0.95, 'muon_params.momentum', 0, 1),
      newtonSchulzSteps: range(m?.newton_schulz_steps ?? 5, 'muon_params.newton_schulz_steps', 1, 10, 'a whole number'),
      weightDecay: range(m?.weight_decay ?? 0, 'muon_params.weight_decay', 0, 10),
      gradClipNorm: range(m?.grad_clip_norm ?? 1, 'muon_params.grad_clip_norm', 0, Number.MAX_VALUE),
      scaling: optimizer.muon.scaling_strategy === 'MUON_SCALING_STRATEGY_ORIGINAL' ? 'original' : 'match_adamw',
      adam: adam(m?.adam, 'muon_params.adam', learningRate),
    },
  };
}

// ---- sampling ----

export function acceptSample(body: RequestBody<'Sample'>, operationId: string): SampleRequest & { routedExperts: boolean } {
  const n = body.model_inputs.length;
  if (n < 1 || n > LIMITS.prompts) throw refuse('model_inputs', `'model_inputs' must hold 1 to ${LIMITS.prompts} prompts; got ${n}.`);
  const numSamples = range(body.num_samples ?? 1, 'num_samples', 1, LIMITS.numSamples, 'a whole number');
  if (n * numSamples > LIMITS.sequences)
    throw refuse('num_samples', `${n} prompts x ${numSamples} samples is ${n * numSamples} sequences; at most ${LIMITS.sequences} per operation.`);
  const sp: Partial<NonNullable<RequestBody<'Sample'>['sampling_params']>> = body.sampling_params ?? {};
  const maxTokens = range(sp.max_tokens ?? 512, 'sampling_params.max_tokens', 0, LIMITS.sequence, 'a whole number');
  if (n * numSamples * maxTokens > LIMITS.sampledTokens)
    throw refuse(
      'sampling_params.max_tokens',
      `${n * numSamples} sequences x max_tokens ${maxTokens} is more than ${LIMITS.sampledTokens} tokens to sample in one operation.`,
    );
  const prompts = body.model_inputs.map((mi, i) => {
    const tokens: number[] = [];
    for (const [c, chunk] of mi.chunks.entries())
      for (const [k, t] of chunk.encoded_text.tokens.entries()) tokens.push(token(t, `model_inputs.${i}.chunks.${c}.encoded_text.tokens.${k}`));
    if (tokens.length + maxTokens > LIMITS.sequence)
      throw refuse(
        `model_inputs.${i}`,
        `Prompt ${i} has ${tokens.length} tokens; with max_tokens ${maxTokens} that is more than ${LIMITS.sequence}, the model's context length.`,
      );
    return tokens;
  });
  const topK = sp.top_k ?? -1;
  if (topK !== -1 && (topK < 0 || topK > VOCABULARY_SIZE))
    throw refuse('sampling_params.top_k', `'sampling_params.top_k' must be -1 or 0 (no limit) or 1 to ${VOCABULARY_SIZE}; got ${topK}.`);
  const topP = sp.top_p ?? 1;
  if (!(topP > 0 && topP <= 1)) throw refuse('sampling_params.top_p', `'sampling_params.top_p' must be above 0 and at most 1; got ${topP}.`);
  const stop = sp.stop ?? [];
  if (stop.length > LIMITS.stops) throw refuse('sampling_params.stop', `At most ${LIMITS.stops} stop strings; got ${stop.length}.`);
  stop.forEach((s, i) => {
    if (s.length < 1 || s.length > LIMITS.stopLength) throw refuse(`sampling_params.stop.${i}`, `A stop string must be 1 to ${LIMITS.stopLength} characters.`);
  });
  return {
    prompts,
    numSamples,
    params: {
      maxTokens,
      temperature: range(sp.temperature ?? 1, 'sampling_params.temperature', 0, 100),
      topP,
      topK,
      stop,
      seed: sp.seed === undefined ? seedOf(operationId) : integerish(sp.seed, 'sampling_params.seed'),
    },
    promptLogprobs: body.prompt_logprobs ?? false,
    topkPromptLogprobs: body.topk_prompt_logprobs ?? 0,
    routedExperts: body.return_routed_experts ?? false,
  };
}
