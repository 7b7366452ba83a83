// The upstream RL engine: a session's model lives on another server speaking the platform's RL API (an `ENGINES`
// route with capability `rl`: another instance of this server, or the platform). Its "state" is where the remote
// session is; each operation is submitted there and polled until it ends. The remote session runs operations in the
// order they arrive, and this server sends them one at a time, in order. A worker killed between a submission and
// its commit here submits that operation again when its work is taken over: upstream, an operation runs at least
// once (the API has no idempotency key to prevent it).
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '../../core/errors.ts';
import { upstreamTextEngine } from '../chat.ts';
import type { UpstreamRoute } from '../routes.ts';
import { UPSTREAM_TIMEOUT_MS, upstreamFetch } from '../upstream.ts';
import type { LossSpec, OptimizerStep, RlEngine, SampleOutcome, TrainingSample } from './engine.ts';
import { OperationFailed } from './engine.ts';

/** Where a remote session is (the bytes the module keeps as its trainer and sampler). */
interface Remote {
  session: string;
  resources: string;
}

/** A remote checkpoint: a training checkpoint's id, or an inference checkpoint's model name (and id). */
interface RemoteCheckpoint {
  session: string;
  kind: 'training' | 'inference';
  id: string;
  modelName?: string;
}

const encode = (value: unknown) => new Uint8Array(Buffer.from(JSON.stringify(value)));
const decode = <T>(bytes: Uint8Array): T => JSON.parse(Buffer.from(bytes).toString('utf8')) as T;

const LOSS_TYPE: Record<LossSpec['type'], string> = {
  cross_entropy: 'LOSS_TYPE_CROSS_ENTROPY',
  importance_sampling: 'LOSS_TYPE_IMPORTANCE_SAMPLING',
  ppo: 'LOSS_TYPE_PPO',
  cispo: 'LOSS_TYPE_CISPO',
  dro: 'LOSS_TYPE_DRO',
  grpo: 'LOSS_TYPE_GRPO',
};

function lossWire(loss: LossSpec): Record<string, unknown> {
  const clip = (l: { low: number; high: number }) => ({ clip_low_threshold: l.low, clip_high_threshold: l.high });
  switch (loss.type) {
    case 'ppo':
      return { type: LOSS_TYPE.ppo, ppo_params: clip(loss) };
    case 'cispo':
      return { type: LOSS_TYPE.cispo, cispo_params: clip(loss) };
    case 'dro':
      return { type: LOSS_TYPE.dro, dro_params: { beta: loss.beta } };
    case 'grpo':
      return {
        type: LOSS_TYPE.grpo,
        grpo_params: {
          ...clip(loss),
          beta: loss.beta,
          agg_type: `GRPO_LOSS_AGGREGATION_TYPE_${loss.aggregation.toUpperCase()}`,
          ratio_type: `GRPO_LOSS_RATIO_TYPE_${loss.ratio.toUpperCase()}`,
        },
      };
    default:
      return { type: LOSS_TYPE[loss.type] };
  }
}

const tokensWire = (tokens: number[]) => ({ chunks: [{ encoded_text: { tokens } }] });

function sampleWire(s: TrainingSample, loss?: LossSpec['type']) {
  const inputs: Record<string, unknown> = { target_tokens: { data: s.targets } };
  if (s.weights) inputs.weights = { data: s.weights };
  if (loss && loss !== 'cross_entropy' && s.advantages && s.logprobs)
    inputs[`${loss}_inputs`] = {
      advantages: { data: s.advantages },
      logprobs: { data: s.logprobs },
      ...(s.referenceLogprobs ? { reference_logprobs: { data: s.referenceLogprobs } } : {}),
    };
  return { model_input: tokensWire(s.tokens), loss_inputs: inputs };
}

const adamWire = (a: Extract<OptimizerStep, { kind: 'adamw' }>['adam']) => ({
  learning_rate: a.learningRate,
  beta1: a.beta1,
  beta2: a.beta2,
  eps: a.eps,
  weight_decay: a.weightDecay,
  grad_clip_norm: a.gradClipNorm,
});

export function upstreamRlEngine(route: UpstreamRoute): RlEngine {
  const limit = route.timeoutMs ?? UPSTREAM_TIMEOUT_MS;
  // biome-ignore lint/suspicious/noExplicitAny: the upstream's JSON, read field by field.
  const call = async (path: string, body?: unknown): Promise<any> =>
    (await upstreamFetch(route, path, body, body === undefined ? { method: 'GET' } : {})).json();

  /** Polls until `done` says the resource is where it should be; gives up after the route's time limit. */
  // biome-ignore lint/suspicious/noExplicitAny: as `call`.
  async function until(path: string, done: (x: any) => boolean, what: string): Promise<any> {
    const deadline = Date.now() + limit;
    for (let wait = 10; ; wait = Math.min(500, wait * 2)) {
      const x = await call(path);
      if (done(x)) return x;
      if (Date.now() > deadline)
        throw new ApiError(
          504,
          'upstream_timeout',
          `The upstream RL engine at ${route.url}: ${what} did not finish within ${limit / 1000} s.`,
          null,
          'server_error',
        );
      await sleep(wait);
    }
  }

  /**
   * Submits an operation to the remote session and answers its output once it completed. A refusal of the
   * submission (a 4xx but 429) fails the operation here as invalid input; anything else is retried by the runner.
   */
  // biome-ignore lint/suspicious/noExplicitAny: as `call`.
  async function operation(session: string, kind: string, body: unknown = {}): Promise<any> {
    let op: { id: string };
    try {
      op = await call(`/rl/training-sessions/${session}/operations/${kind}`, body);
    } catch (err) {
      if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429)
        throw new OperationFailed('TRAINING_OPERATION_ERROR_CODE_INVALID_INPUT', err.message);
      throw err;
    }
    const ended = await until(
      `/rl/training-sessions/${session}/operations/${kind}/${op.id}`,
      (x) => x.status === 'TRAINING_OPERATION_STATUS_COMPLETED' || x.status === 'TRAINING_OPERATION_STATUS_FAILED',
      `operation ${op.id}`,
    );
    if (ended.status === 'TRAINING_OPERATION_STATUS_FAILED') {
      const code = ended.error?.code;
      throw new OperationFailed(
        code === 'TRAINING_OPERATION_ERROR_CODE_NON_FINITE_LOSS' || code === 'TRAINING_OPERATION_ERROR_CODE_INVALID_INPUT'
          ? code
          : 'TRAINING_OPERATION_ERROR_CODE_INTERNAL_ERROR',
        `The upstream RL engine at ${route.url} failed the operation: ${ended.error?.message ?? 'no reason given'}`,
      );
    }
    return ended.output ?? {};
  }

  const session = (bytes: Uint8Array) => decode<Remote>(bytes).session;

  return {
    name: 'upstream',
    description: `upstream ${route.url}`,

    async start(model, resume) {
      const resources = await call('/rl/model-resources', {
        base_model: route.model ?? model.baseModel,
        lora_enabled: model.lora !== null,
        optimizer_config: model.optimizer === 'muon' ? { muon: {} } : { adamw: {} },
      });
      await until(`/rl/model-resources/${resources.id}`, (r) => r.status === 'MODEL_RESOURCES_STATUS_READY', `model resources ${resources.id}`);
      const lora = model.lora && {
        rank: model.lora.rank,
        alpha: model.lora.alpha,
        dropout: model.lora.dropout,
        seed: model.lora.seed,
        train_unembed: model.lora.trainUnembed,
      };
      const s = await call('/rl/training-sessions', {
        model_resources_id: resources.id,
        ...(lora && !resume ? { lora_config: lora } : {}),
        ...(resume ? { resume_from_checkpoint_id: decode<RemoteCheckpoint>(resume).id } : {}),
      });
      await until(`/rl/training-sessions/${s.id}`, (x) => x.status === 'TRAINING_SESSION_STATUS_RUNNING', `training session ${s.id}`);
      const remote = encode({ session: s.id, resources: resources.id } satisfies Remote);
      return { trainer: remote, sampler: remote };
    },

    async forward(trainer, samples) {
      const out = await operation(session(trainer), 'forward', { samples: samples.map((s) => sampleWire(s)) });
      return (out.logprobs as { data: number[] }[]).map((l) => l.data);
    },

    async forwardBackward(trainer, samples, loss) {
      const out = await operation(session(trainer), 'forward-backward', { samples: samples.map((s) => sampleWire(s, loss.type)), loss: lossWire(loss) });
      return { trainer, loss: out.loss, metrics: out.metrics ?? {} };
    },

    async customForwardBackward(trainer, samples, gradients) {
      await operation(session(trainer), 'custom-forward-backward', {
        samples: samples.map((s) => sampleWire(s)),
        gradients: gradients.map((data) => ({ data })),
      });
      return { trainer, metrics: {} };
    },

    async optimStep(trainer, step) {
      const body =
        step.kind === 'adamw'
          ? { adam_params: adamWire(step.adam) }
          : {
              muon_params: {
                learning_rate: step.muon.learningRate,
                momentum: step.muon.momentum,
                newton_schulz_steps: step.muon.newtonSchulzSteps,
                weight_decay: step.muon.weightDecay,
                grad_clip_norm: step.muon.gradClipNorm,
                adam: adamWire(step.muon.adam),
              },
            };
      const out = await operation(session(trainer), 'optim-step', body);
      return { trainer, step: Number(out.step) };
    },

    async weightsSync(trainer) {
      const out = await operation(session(trainer), 'weights-sync', { weight_sync_type: 'WEIGHT_SYNC_TYPE_SYNCHRONOUS' });
      return { sampler: trainer, version: Number(out.weights_version) };
    },

    async sample(sampler, request) {
      const p = request.params;
      const out = await operation(session(sampler), 'sample', {
        model_inputs: request.prompts.map(tokensWire),
        num_samples: request.numSamples,
        prompt_logprobs: request.promptLogprobs,
        topk_prompt_logprobs: request.topkPromptLogprobs,
        sampling_params: { max_tokens: p.maxTokens, temperature: p.temperature, top_p: p.topP, top_k: p.topK, stop: p.stop, seed: p.seed },
      });
      // biome-ignore lint/suspicious/noExplicitAny: the upstream's JSON.
      return (out.results as any[]).map(
        (r): SampleOutcome => ({
          // biome-ignore lint/suspicious/noExplicitAny: as above.
          sequences: (r.sequences as any[]).map((q) => ({
            tokens: (q.tokens as (string | number)[]).map(Number),
            logprobs: q.logprobs ?? [],
            stop: q.stop_reason === 'STOP_REASON_STOP' ? 'stop' : 'length',
          })),
          ...(r.prompt_logprobs ? { promptLogprobs: r.prompt_logprobs } : {}),
          ...(r.topk_prompt_logprobs ? { topkPromptLogprobs: r.topk_prompt_logprobs } : {}),
        }),
      );
    },

    async checkpoint(trainer, kind) {
      const s = session(trainer);
      const out = await operation(s, kind === 'training' ? 'training-checkpoint' : 'inference-checkpoint');
      const remote = await call(`/rl/training-sessions/${s}`);
      if (kind === 'training') return { bytes: encode({ session: s, kind, id: out.checkpoint_id } satisfies RemoteCheckpoint), step: Number(remote.step) };
      const found = (remote.inference_checkpoints as { id: string; registration?: { model_name: string } }[]).find(
        (c) => c.registration?.model_name === out.model_name,
      );
      return { bytes: encode({ session: s, kind, id: found?.id ?? '', modelName: out.model_name } satisfies RemoteCheckpoint), step: Number(remote.step) };
    },

    async files(checkpoint, _kind, variant) {
      const c = decode<RemoteCheckpoint>(checkpoint);
      const out = await call(`/rl/checkpoints/${c.id}/download?variant=CHECKPOINT_VARIANT_${variant.toUpperCase()}`);
      return (out.data as { filename: string; url: string; size: string | number }[]).map((f) => ({ filename: f.filename, url: f.url, size: Number(f.size) }));
    },

    chat(checkpoint) {
      const c = decode<RemoteCheckpoint>(checkpoint);
      return upstreamTextEngine({ ...route, model: c.modelName });
    },
  };
}
