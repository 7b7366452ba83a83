// The RL engine's model: a small neural n-gram language model (Bengio et al., 2003) that this CPU trains in
// milliseconds. Each next token's distribution depends on the CONTEXT tokens before it (and including the current
// one): their embeddings, concatenated, through one tanh hidden layer, then an output layer over the vocabulary.
//
// Vocabulary. Tokens are the server's tokenizer's (cl100k_base, 100,261 ids). A full output layer over all of them
// would cost 100k x HIDDEN per position, so the model keeps a table of the tokens a session has trained on (at most
// TABLE_SIZE), each with its own output row, and one shared row for every token not in the table: a token outside
// the table has the shared logit, and the softmax's normaliser counts it once per such token, so the distribution is
// exact over the whole vocabulary. A token enters the table when a training operation first meets it, with a copy
// of the shared row (and, for its input embedding, the embedding it already had): entering changes nothing the model
// computes, so logprobs taken before (by a sample) and after (by a forward-backward) agree until the weights move.
//
// Base model. An untrained model: every output row starts equal (zero), so it starts uniform over the vocabulary;
// input embeddings and the hidden layer's weights are random, drawn from a seed that is the base model's name (the
// same name always gives the same model, on any machine). LoRA sessions keep these frozen and train low-rank
// adapters on the hidden layer and (train_unembed) the output layer; full sessions train every weight.
//
// The backward pass is written out by hand for these few layers (and checked against finite differences in
// test/rl-engine.test.ts).
import { random } from './random.ts';

export const ARCHITECTURE = 'local-ngram-mlp';
/** Tokens of context each prediction sees (the current one and the CONTEXT - 1 before it). */
export const CONTEXT = 4;
export const EMBEDDING = 32;
export const HIDDEN = 64;
export const INPUT = CONTEXT * EMBEDDING;
/** Most tokens with their own output row, per session. */
export const TABLE_SIZE = 4096;

/** cl100k_base: ranks 0 to 100255, and its five special tokens (100256 and 100261-100275 are not tokens). */
const SPECIALS = new Set([100257, 100258, 100259, 100260, 100276]);
export const VOCABULARY_SIZE = 100_256 + SPECIALS.size;
export const END_OF_TEXT = 100257;
export const isToken = (id: number) => Number.isInteger(id) && id >= 0 && (id < 100_256 || SPECIALS.has(id));
/** The id of the n-th token of the vocabulary (n in [0, VOCABULARY_SIZE)). */
const tokenAt = (n: number) => (n < 100_256 ? n : [...SPECIALS][n - 100_256]!);

export interface Lora {
  rank: number;
  alpha: number;
  dropout: number;
  seed: string;
  trainUnembed: boolean;
}

/** A model's trainable weights: which base, full or LoRA, its token table and its parameters by name. */
export interface Weights {
  baseModel: string;
  lora: Lora | null;
  /** Slot -> token id. */
  table: number[];
  params: Record<string, Float32Array>;
}

/** The parameters of a mode, each with its shape (rows x cols) for a table of `slots` tokens. */
export function shapes(lora: Lora | null, slots: number): Record<string, [number, number]> {
  if (!lora)
    return {
      embed: [slots, EMBEDDING],
      unembed: [slots, HIDDEN],
      unembed_bias: [slots, 1],
      hidden: [HIDDEN, INPUT],
      hidden_bias: [1, HIDDEN],
      other_unembed: [1, HIDDEN],
      other_bias: [1, 1],
    };
  const r = lora.rank;
  return {
    lora_hidden_a: [r, INPUT],
    lora_hidden_b: [HIDDEN, r],
    ...(lora.trainUnembed ? { lora_unembed_a: [r, HIDDEN], lora_unembed_b: [slots, r], lora_other_b: [1, r] } : {}),
  };
}

/** Parameters with one row per table slot (they grow with the table). */
export const SLOT_PARAMS = new Set(['embed', 'unembed', 'unembed_bias', 'lora_unembed_b']);
/** Where a new slot's row starts: a copy of the shared row (function-preserving), or the token's base embedding. */
const SHARED_ROW: Record<string, string> = { unembed: 'other_unembed', unembed_bias: 'other_bias', lora_unembed_b: 'lora_other_b' };
/** The hidden layer's matrices (Muon orthogonalises these; every other parameter is an embedding, a bias or an output row). */
export const MATRICES = new Set(['hidden', 'lora_hidden_a', 'lora_hidden_b', 'lora_unembed_a']);

// ---- the base model: frozen, derived from its name ----------------------------------------------------------------

const baseHidden = new Map<string, Float32Array>();
const baseEmbeddings = new Map<string, Float32Array>();
const BASE_EMBEDDING_CACHE = 200_000;

/** The base hidden layer (HIDDEN x INPUT), N(0, 1/INPUT). */
function hiddenOf(baseModel: string): Float32Array {
  let w = baseHidden.get(baseModel);
  if (!w) {
    const rng = random('rl-base-hidden', baseModel);
    w = Float32Array.from({ length: HIDDEN * INPUT }, () => rng.normal() / Math.sqrt(INPUT));
    baseHidden.set(baseModel, w);
  }
  return w;
}

/** A token's base embedding, N(0, 1); `-1` is the padding before a sequence's start. */
export function baseEmbedding(baseModel: string, token: number): Float32Array {
  const key = `${baseModel}\u0000${token}`;
  let e = baseEmbeddings.get(key);
  if (!e) {
    const rng = random('rl-base-embedding', baseModel, token);
    e = Float32Array.from({ length: EMBEDDING }, () => rng.normal());
    if (baseEmbeddings.size >= BASE_EMBEDDING_CACHE) baseEmbeddings.clear();
    baseEmbeddings.set(key, e);
  }
  return e;
}

/** A new model's weights: the base model's (full), or LoRA adapters that leave it unchanged until trained. */
export function initialWeights(baseModel: string, lora: Lora | null): Weights {
  const params: Record<string, Float32Array> = {};
  for (const [name, [rows, cols]] of Object.entries(shapes(lora, 0))) params[name] = new Float32Array(rows * cols);
  if (!lora) params.hidden!.set(hiddenOf(baseModel));
  else {
    const rng = random('rl-lora', lora.seed);
    const a = params.lora_hidden_a!;
    for (let i = 0; i < a.length; i++) a[i] = rng.normal() / Math.sqrt(INPUT);
    const au = params.lora_unembed_a;
    if (au) for (let i = 0; i < au.length; i++) au[i] = rng.normal() / Math.sqrt(HIDDEN);
  }
  return { baseModel, lora, table: [], params };
}

/**
 * Gives every token of `tokens` not yet in the table a slot (while there is room), each new row a copy of what the
 * model already computed for it: the model's outputs do not change. `companions` (optimizer moments, gradients:
 * same names, same shapes) get zero rows. Answers how many tokens entered.
 */
export function enterTokens(w: Weights, tokens: Iterable<number>, companions: Record<string, Float32Array>[] = []): number {
  const known = new Set(w.table);
  const fresh: number[] = [];
  for (const t of tokens) {
    if (known.has(t) || w.table.length + fresh.length >= TABLE_SIZE) continue;
    known.add(t);
    fresh.push(t);
  }
  if (!fresh.length) return 0;
  const before = w.table.length;
  const after = before + fresh.length;
  const shape = shapes(w.lora, after);
  for (const name of Object.keys(w.params)) {
    if (!SLOT_PARAMS.has(name)) continue;
    const cols = shape[name]![1];
    const grown = new Float32Array(after * cols);
    grown.set(w.params[name]!);
    for (const [k, token] of fresh.entries()) {
      const row = grown.subarray((before + k) * cols, (before + k + 1) * cols);
      row.set(name === 'embed' ? baseEmbedding(w.baseModel, token) : w.params[SHARED_ROW[name]!]!);
    }
    w.params[name] = grown;
    for (const c of companions) {
      if (!c[name]) continue;
      const z = new Float32Array(after * cols);
      z.set(c[name]!);
      c[name] = z;
    }
  }
  w.table.push(...fresh);
  return fresh.length;
}

// ---- the forward and backward passes ------------------------------------------------------------------------------

/** What the forward pass keeps of one position for the backward pass. */
interface Position {
  x: Float64Array;
  /** LoRA: the dropped-out input, A x, and (train_unembed) A_u h. */
  xd?: Float64Array;
  u?: Float64Array;
  v?: Float64Array;
  h: Float64Array;
  logZ: number;
}

export interface Pass {
  /** Each position's log probability of its target. */
  logprobs: number[];
  positions: Position[];
  targets: number[];
  tokens: number[];
}

export type Grads = Record<string, Float64Array>;

const dot = (a: ArrayLike<number>, ao: number, b: ArrayLike<number>, bo: number, n: number) => {
  let s = 0;
  for (let i = 0; i < n; i++) s += a[ao + i]! * b[bo + i]!;
  return s;
};

/** The model over given weights: logits, log probabilities, and gradients. */
export class Net {
  readonly slotOf = new Map<number, number>();
  private readonly hiddenW: Float32Array;
  private readonly scaleH: number;
  private readonly scaleU: number;
  /** Tokens outside the table: each has the shared logit. */
  readonly outside: number;

  constructor(readonly w: Weights) {
    w.table.forEach((t, i) => {
      this.slotOf.set(t, i);
    });
    this.hiddenW = w.lora ? hiddenOf(w.baseModel) : w.params.hidden!;
    this.scaleH = w.lora ? w.lora.alpha / w.lora.rank : 1;
    this.scaleU = this.scaleH;
    this.outside = VOCABULARY_SIZE - w.table.length;
  }

  get slots(): number {
    return this.w.table.length;
  }

  /** The input embedding of a token: its trained row (full mode, in the table), else its base embedding. */
  private embedding(token: number): { data: ArrayLike<number>; at: number } {
    const slot = this.slotOf.get(token);
    if (slot !== undefined && !this.w.lora) return { data: this.w.params.embed!, at: slot * EMBEDDING };
    return { data: baseEmbedding(this.w.baseModel, token), at: 0 };
  }

  /** The concatenated embeddings of the CONTEXT tokens ending at position t (padding before the start). */
  input(tokens: number[], t: number): Float64Array {
    const x = new Float64Array(INPUT);
    for (let j = 0; j < CONTEXT; j++) {
      const e = this.embedding(t - j >= 0 ? tokens[t - j]! : -1);
      for (let i = 0; i < EMBEDDING; i++) x[j * EMBEDDING + i] = e.data[e.at + i]!;
    }
    return x;
  }

  /** The hidden state at a position; with `dropout`, LoRA's input dropout drawn from it. */
  hidden(x: Float64Array, dropout?: () => number): Omit<Position, 'logZ'> {
    const p = this.w.params;
    const a = new Float64Array(HIDDEN);
    for (let o = 0; o < HIDDEN; o++) a[o] = dot(this.hiddenW, o * INPUT, x, 0, INPUT);
    let xd: Float64Array | undefined;
    let u: Float64Array | undefined;
    if (this.w.lora) {
      const r = this.w.lora.rank;
      const keep = 1 - this.w.lora.dropout;
      xd = x;
      if (dropout && this.w.lora.dropout > 0) xd = x.map((xi) => (dropout() < keep ? xi / keep : 0));
      u = new Float64Array(r);
      for (let k = 0; k < r; k++) u[k] = dot(p.lora_hidden_a!, k * INPUT, xd, 0, INPUT);
      const b = p.lora_hidden_b!;
      for (let o = 0; o < HIDDEN; o++) a[o]! += this.scaleH * dot(b, o * r, u, 0, r);
    } else {
      const bias = p.hidden_bias!;
      for (let o = 0; o < HIDDEN; o++) a[o]! += bias[o]!;
    }
    const h = a.map(Math.tanh);
    let v: Float64Array | undefined;
    if (this.w.lora?.trainUnembed) {
      const r = this.w.lora.rank;
      v = new Float64Array(r);
      for (let k = 0; k < r; k++) v[k] = dot(p.lora_unembed_a!, k * HIDDEN, h, 0, HIDDEN);
    }
    return { x, xd, u, h, v };
  }

  /** Logits of the table's tokens (`z`) and the shared logit of every other token (`other`). */
  logits(s: Omit<Position, 'logZ'>): { z: Float64Array; other: number } {
    const p = this.w.params;
    const n = this.slots;
    const z = new Float64Array(n);
    if (!this.w.lora) {
      const U = p.unembed!;
      const c = p.unembed_bias!;
      for (let j = 0; j < n; j++) z[j] = dot(U, j * HIDDEN, s.h, 0, HIDDEN) + c[j]!;
      return { z, other: dot(p.other_unembed!, 0, s.h, 0, HIDDEN) + p.other_bias![0]! };
    }
    // LoRA: the base output layer is zero; train_unembed's adapter is all there is.
    if (!s.v) return { z, other: 0 };
    const r = this.w.lora.rank;
    const B = p.lora_unembed_b!;
    for (let j = 0; j < n; j++) z[j] = this.scaleU * dot(B, j * r, s.v, 0, r);
    return { z, other: this.scaleU * dot(p.lora_other_b!, 0, s.v, 0, r) };
  }

  /** The normaliser: every table token once, and the shared logit once per token outside the table. */
  logNormaliser(z: Float64Array, other: number): number {
    let max = this.outside > 0 ? other : -Infinity;
    for (let j = 0; j < z.length; j++) if (z[j]! > max) max = z[j]!;
    let sum = this.outside > 0 ? this.outside * Math.exp(other - max) : 0;
    for (let j = 0; j < z.length; j++) sum += Math.exp(z[j]! - max);
    return max + Math.log(sum);
  }

  /** The log probability of `target` given logits. */
  logprobOf(target: number, z: Float64Array, other: number, logZ: number): number {
    const slot = this.slotOf.get(target);
    return (slot === undefined ? other : z[slot]!) - logZ;
  }

  /** Forward pass over one sequence: the log probability of each position's target. */
  forward(tokens: number[], targets: number[], dropout?: () => number): Pass {
    const positions: Position[] = [];
    const logprobs: number[] = [];
    for (let t = 0; t < tokens.length; t++) {
      const s = this.hidden(this.input(tokens, t), dropout);
      const { z, other } = this.logits(s);
      const logZ = this.logNormaliser(z, other);
      positions.push({ ...s, logZ });
      logprobs.push(this.logprobOf(targets[t]!, z, other, logZ));
    }
    return { logprobs, positions, targets, tokens };
  }

  /** Adds to `grads` the gradient of sum_t g[t] * logprob[t] over one forward pass (positions with g[t] = 0 cost nothing). */
  backward(pass: Pass, g: ArrayLike<number>, grads: Grads): void {
    const p = this.w.params;
    const n = this.slots;
    const lora = this.w.lora;
    const grad = (name: string) => {
      let a = grads[name];
      if (!a || a.length !== p[name]!.length) {
        const grown = new Float64Array(p[name]!.length);
        if (a) grown.set(a);
        a = grads[name] = grown;
      }
      return a;
    };
    for (let t = 0; t < pass.positions.length; t++) {
      const gt = g[t]!;
      if (gt === 0) continue;
      const s = pass.positions[t]!;
      const { z, other } = this.logits(s);
      // d logp / d z_j = [j is the target] - p_j; for the shared logit, [target outside] - (tokens outside) * p_other.
      const target = this.slotOf.get(pass.targets[t]!);
      const dz = new Float64Array(n);
      for (let j = 0; j < n; j++) dz[j] = gt * ((j === target ? 1 : 0) - Math.exp(z[j]! - s.logZ));
      const dOther = gt * ((target === undefined ? 1 : 0) - this.outside * Math.exp(other - s.logZ));
      const dh = new Float64Array(HIDDEN);
      if (!lora) {
        const U = p.unembed!;
        const dU = grad('unembed');
        const dc = grad('unembed_bias');
        for (let j = 0; j < n; j++) {
          const d = dz[j]!;
          if (d === 0) continue;
          dc[j]! += d;
          for (let i = 0; i < HIDDEN; i++) {
            dU[j * HIDDEN + i]! += d * s.h[i]!;
            dh[i]! += d * U[j * HIDDEN + i]!;
          }
        }
        const Uo = p.other_unembed!;
        const dUo = grad('other_unembed');
        grad('other_bias')[0]! += dOther;
        for (let i = 0; i < HIDDEN; i++) {
          dUo[i]! += dOther * s.h[i]!;
          dh[i]! += dOther * Uo[i]!;
        }
      } else if (s.v) {
        const r = lora.rank;
        const B = p.lora_unembed_b!;
        const dB = grad('lora_unembed_b');
        const dv = new Float64Array(r);
        for (let j = 0; j < n; j++) {
          const d = dz[j]! * this.scaleU;
          if (d === 0) continue;
          for (let k = 0; k < r; k++) {
            dB[j * r + k]! += d * s.v[k]!;
            dv[k]! += d * B[j * r + k]!;
          }
        }
        const Bo = p.lora_other_b!;
        const dBo = grad('lora_other_b');
        for (let k = 0; k < r; k++) {
          dBo[k]! += dOther * this.scaleU * s.v[k]!;
          dv[k]! += dOther * this.scaleU * Bo[k]!;
        }
        const Au = p.lora_unembed_a!;
        const dAu = grad('lora_unembed_a');
        for (let k = 0; k < r; k++) {
          const d = dv[k]!;
          for (let i = 0; i < HIDDEN; i++) {
            dAu[k * HIDDEN + i]! += d * s.h[i]!;
            dh[i]! += d * Au[k * HIDDEN + i]!;
          }
        }
      }
      const da = new Float64Array(HIDDEN);
      for (let i = 0; i < HIDDEN; i++) da[i] = dh[i]! * (1 - s.h[i]! * s.h[i]!);
      if (!lora) {
        const W = p.hidden!;
        const dW = grad('hidden');
        const db = grad('hidden_bias');
        const dx = new Float64Array(INPUT);
        for (let o = 0; o < HIDDEN; o++) {
          const d = da[o]!;
          if (d === 0) continue;
          db[o]! += d;
          for (let i = 0; i < INPUT; i++) {
            dW[o * INPUT + i]! += d * s.x[i]!;
            dx[i]! += d * W[o * INPUT + i]!;
          }
        }
        // Embeddings of the context tokens in the table get their part of dx.
        const dE = grad('embed');
        for (let j = 0; j < CONTEXT; j++) {
          const pos = t - j;
          if (pos < 0) continue;
          const slot = this.slotOf.get(pass.tokens[pos]!);
          if (slot === undefined) continue;
          for (let i = 0; i < EMBEDDING; i++) dE[slot * EMBEDDING + i]! += dx[j * EMBEDDING + i]!;
        }
      } else {
        const r = lora.rank;
        const B = p.lora_hidden_b!;
        const dB = grad('lora_hidden_b');
        const du = new Float64Array(r);
        for (let o = 0; o < HIDDEN; o++) {
          const d = da[o]! * this.scaleH;
          if (d === 0) continue;
          for (let k = 0; k < r; k++) {
            dB[o * r + k]! += d * s.u![k]!;
            du[k]! += d * B[o * r + k]!;
          }
        }
        const dA = grad('lora_hidden_a');
        for (let k = 0; k < r; k++) {
          const d = du[k]!;
          if (d === 0) continue;
          for (let i = 0; i < INPUT; i++) dA[k * INPUT + i]! += d * s.xd![i]!;
        }
      }
    }
  }

  /**
   * The distribution after `tokens` as (token, log probability) for the table's tokens, and the log probability
   * each token outside the table has: what sampling and top-k prompt logprobs read.
   */
  next(tokens: number[]): { z: Float64Array; other: number; logZ: number } {
    const s = this.hidden(this.input(tokens, tokens.length - 1));
    const { z, other } = this.logits(s);
    return { z, other, logZ: this.logNormaliser(z, other) };
  }

  /** The `n` lowest vocabulary ids outside the table (top-k's ties among them are broken by id). */
  outsideTokens(n: number): number[] {
    const out: number[] = [];
    for (let k = 0; out.length < n && k < VOCABULARY_SIZE; k++) {
      const id = tokenAt(k);
      if (!this.slotOf.has(id)) out.push(id);
    }
    return out;
  }

  /** A token drawn uniformly from those outside the table. */
  drawOutside(next: () => number): number {
    for (;;) {
      const id = tokenAt(Math.floor(next() * VOCABULARY_SIZE));
      if (!this.slotOf.has(id)) return id;
    }
  }
}
