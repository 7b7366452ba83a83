// The losses a forward-backward computes, each a function of the per-token log probabilities of the targets
// (`logprobs`, the current model's) and the sample's inputs. Each answers its value and its gradient with respect to
// every logprob (the model's backward pass turns that into the weights' gradient), and a few metrics. Sums over
// tokens, as the platform's losses are (callers scale by `weights` and `advantages`), except GRPO, which aggregates
// as its `agg_type` says. The ratio r = exp(logprob - sampling logprob) is 1 on-policy.

export type LossSpec =
  | { type: 'cross_entropy' }
  | { type: 'importance_sampling' }
  | { type: 'ppo'; low: number; high: number }
  | { type: 'cispo'; low: number; high: number }
  | { type: 'dro'; beta: number }
  | {
      type: 'grpo';
      low: number;
      high: number;
      beta: number;
      aggregation: 'fixed_horizon' | 'token_mean' | 'sequence_mean';
      ratio: 'token' | 'sequence';
    };

/** One sample's inputs to a loss, per target position. */
export interface LossSample {
  /** The current model's log probability of each target. */
  logprobs: number[];
  /** Per-token weights (a mask for GRPO); absent: 1 each. */
  weights?: number[];
  advantages?: number[];
  /** The logprobs the tokens were sampled with. */
  sampling?: number[];
  /** GRPO's reference model logprobs, for its KL penalty. */
  reference?: number[];
}

export interface LossResult {
  loss: number;
  /** d loss / d logprob, per sample and position. */
  grads: number[][];
  metrics: Record<string, number>;
}

const clip = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));

export function computeLoss(spec: LossSpec, samples: LossSample[]): LossResult {
  const grads = samples.map((s) => new Array<number>(s.logprobs.length).fill(0));
  const metrics: Record<string, number> = {};
  let loss = 0;
  let clipped = 0;
  let counted = 0;
  const w = (s: LossSample, t: number) => s.weights?.[t] ?? 1;
  const ratio = (s: LossSample, t: number) => Math.exp(s.logprobs[t]! - s.sampling![t]!);

  if (spec.type === 'grpo') return grpo(spec, samples);
  for (const [i, s] of samples.entries()) {
    for (let t = 0; t < s.logprobs.length; t++) {
      const lp = s.logprobs[t]!;
      switch (spec.type) {
        case 'cross_entropy': {
          loss += -w(s, t) * lp;
          grads[i]![t] = -w(s, t);
          break;
        }
        case 'importance_sampling': {
          const r = ratio(s, t);
          const a = s.advantages![t]!;
          loss += -r * a;
          grads[i]![t] = -r * a;
          break;
        }
        case 'ppo': {
          // -min(r A, clip(r) A): the gradient flows only where the unclipped term is the smaller.
          const r = ratio(s, t);
          const a = s.advantages![t]!;
          const unclipped = r * a;
          const bounded = clip(r, spec.low, spec.high) * a;
          loss += -Math.min(unclipped, bounded);
          if (unclipped <= bounded) grads[i]![t] = -r * a;
          else clipped++;
          counted++;
          break;
        }
        case 'cispo': {
          // -sg(clip(r)) A logp: the clipped ratio weighs the log-likelihood's gradient, never zeroes it.
          const r = ratio(s, t);
          const c = clip(r, spec.low, spec.high);
          const a = s.advantages![t]!;
          loss += -c * a * lp;
          grads[i]![t] = -c * a;
          if (c !== r) clipped++;
          counted++;
          break;
        }
        case 'dro': {
          // -(logp A - beta/2 (logp - sampling logp)^2).
          const a = s.advantages![t]!;
          const d = lp - s.sampling![t]!;
          loss += -(lp * a - 0.5 * spec.beta * d * d);
          grads[i]![t] = -a + spec.beta * d;
          break;
        }
      }
    }
  }
  metrics['loss:sum'] = loss;
  if (counted) metrics.clip_fraction = clipped / counted;
  return { loss, grads, metrics };
}

/**
 * GRPO: the PPO surrogate with the ratio per token or per sequence (the geometric mean of its tokens' ratios), minus
 * beta times the KL estimate exp(ref - logp) - (ref - logp) - 1 against `reference` (when given), over the tokens of
 * each sample's mask (`weights`), aggregated as a fixed horizon (sum / (samples x the longest mask)), a token mean or a
 * sequence mean.
 */
function grpo(spec: Extract<LossSpec, { type: 'grpo' }>, samples: LossSample[]): LossResult {
  const grads = samples.map((s) => new Array<number>(s.logprobs.length).fill(0));
  const mask = (s: LossSample, t: number) => s.weights?.[t] ?? 1;
  const lengths = samples.map((s) => s.logprobs.reduce((n, _, t) => n + mask(s, t), 0));
  const totalTokens = lengths.reduce((a, b) => a + b, 0);
  const horizon = Math.max(0, ...lengths);
  // The weight of one token's term in the aggregate.
  const scale = (i: number) => {
    if (spec.aggregation === 'token_mean') return totalTokens > 0 ? 1 / totalTokens : 0;
    if (spec.aggregation === 'sequence_mean') return lengths[i]! > 0 ? 1 / (lengths[i]! * samples.length) : 0;
    return horizon > 0 ? 1 / (samples.length * horizon) : 0;
  };
  let loss = 0;
  let kl = 0;
  let clipped = 0;
  let counted = 0;
  for (const [i, s] of samples.entries()) {
    const k = scale(i);
    const T = s.logprobs.length;
    const logRatio = (t: number) => s.logprobs[t]! - s.sampling![t]!;
    const seqRatio =
      spec.ratio === 'sequence' && lengths[i]! > 0 ? Math.exp(s.logprobs.reduce((acc, _, t) => acc + mask(s, t) * logRatio(t), 0) / lengths[i]!) : 0;
    // For a sequence ratio, d r / d logp_t = r m_t / L: the surrogate's gradient gathers over the sequence.
    let seqGrad = 0;
    for (let t = 0; t < T; t++) {
      const m = mask(s, t);
      if (m === 0) continue;
      const a = s.advantages![t]!;
      const r = spec.ratio === 'sequence' ? seqRatio : Math.exp(logRatio(t));
      const unclipped = r * a;
      const bounded = clip(r, spec.low, spec.high) * a;
      loss += -k * m * Math.min(unclipped, bounded);
      counted++;
      if (unclipped <= bounded) {
        if (spec.ratio === 'sequence') seqGrad += -k * m * a;
        else grads[i]![t]! += -k * m * r * a;
      } else clipped++;
      if (spec.beta > 0 && s.reference) {
        const d = s.reference[t]! - s.logprobs[t]!;
        const kt = Math.exp(d) - d - 1;
        kl += m * kt;
        loss += k * m * spec.beta * kt;
        // d/dlogp (e^(ref-logp) - (ref-logp) - 1) = 1 - e^(ref-logp)
        grads[i]![t]! += k * m * spec.beta * (1 - Math.exp(d));
      }
    }
    if (spec.ratio === 'sequence' && seqGrad !== 0) {
      for (let t = 0; t < T; t++) grads[i]![t]! += (seqGrad * seqRatio * mask(s, t)) / lengths[i]!;
    }
  }
  const metrics: Record<string, number> = { 'loss:sum': loss, clip_fraction: counted ? clipped / counted : 0 };
  if (spec.beta > 0 && totalTokens > 0) metrics.kl = kl / totalTokens;
  return { loss, grads, metrics };
}
