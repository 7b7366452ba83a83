// The optimizer step: AdamW (decoupled weight decay, bias-corrected moments), or Muon for the hidden layer's
// matrices (Nesterov momentum, orthogonalised by Newton-Schulz iterations, scaled to match AdamW's update size or as
// originally proposed) with AdamW for everything else (embeddings, output rows, biases). Gradients are those the
// forward-backward passes accumulated since the last step; they are clipped to `gradClipNorm` (global norm, 0: no
// clipping) first, per group, and zeroed after.
import { MATRICES, shapes, type Weights } from './net.ts';

export interface Adam {
  learningRate: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  gradClipNorm: number;
}

export interface Muon {
  learningRate: number;
  momentum: number;
  newtonSchulzSteps: number;
  weightDecay: number;
  gradClipNorm: number;
  scaling: 'match_adamw' | 'original';
  adam: Adam;
}

export type OptimizerStep = { kind: 'adamw'; adam: Adam } | { kind: 'muon'; muon: Muon };

/** The optimizer's state: Adam's moments, Muon's momentum buffers, by parameter name. */
export interface Moments {
  m: Record<string, Float32Array>;
  v: Record<string, Float32Array>;
  /** Adam steps taken (for the bias correction). */
  t: number;
}

export const norm = (arrays: Iterable<ArrayLike<number>>) => {
  let s = 0;
  for (const a of arrays) for (let i = 0; i < a.length; i++) s += a[i]! * a[i]!;
  return Math.sqrt(s);
};

const zeros = (n: number) => new Float32Array(n);

function ensure(store: Record<string, Float32Array>, name: string, n: number): Float32Array {
  let a = store[name];
  if (!a || a.length !== n) {
    const grown = zeros(n);
    if (a) grown.set(a.subarray(0, Math.min(a.length, n)));
    a = store[name] = grown;
  }
  return a;
}

/** The scale that clips a group's gradient to `max` (1 when within it, or when max is 0). */
const clipScale = (grads: Float32Array[], max: number) => {
  const n = norm(grads);
  return max > 0 && n > max ? max / n : 1;
};

function adamStep(w: Weights, names: string[], grads: Record<string, Float32Array>, moments: Moments, p: Adam, t: number): void {
  const scale = clipScale(
    names.map((n) => grads[n]!),
    p.gradClipNorm,
  );
  const c1 = 1 - p.beta1 ** t;
  const c2 = 1 - p.beta2 ** t;
  for (const name of names) {
    const x = w.params[name]!;
    const g = grads[name]!;
    const m = ensure(moments.m, name, x.length);
    const v = ensure(moments.v, name, x.length);
    for (let i = 0; i < x.length; i++) {
      const gi = g[i]! * scale;
      m[i] = p.beta1 * m[i]! + (1 - p.beta1) * gi;
      v[i] = p.beta2 * v[i]! + (1 - p.beta2) * gi * gi;
      const update = m[i]! / c1 / (Math.sqrt(v[i]! / c2) + p.eps);
      x[i] = x[i]! * (1 - p.learningRate * p.weightDecay) - p.learningRate * update;
    }
  }
}

/** Newton-Schulz iterations towards the nearest semi-orthogonal matrix (the quintic of Muon's reference). */
export function orthogonalise(g: Float32Array, rows: number, cols: number, steps: number): Float64Array {
  const [a, b, c] = [3.4445, -4.775, 2.0315];
  const tall = rows > cols;
  // Work on the wide orientation (r <= c): X X^T is the smaller square.
  const r = tall ? cols : rows;
  const k = tall ? rows : cols;
  let X = new Float64Array(r * k);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) X[tall ? j * k + i : i * k + j] = g[i * cols + j]!;
  const n = norm([X]) + 1e-7;
  for (let i = 0; i < X.length; i++) X[i]! /= n;
  for (let s = 0; s < steps; s++) {
    // A = X X^T (r x r); B = b A + c A A; X = a X + B X.
    const A = new Float64Array(r * r);
    for (let i = 0; i < r; i++)
      for (let j = i; j < r; j++) {
        let sum = 0;
        for (let l = 0; l < k; l++) sum += X[i * k + l]! * X[j * k + l]!;
        A[i * r + j] = sum;
        A[j * r + i] = sum;
      }
    const B = new Float64Array(r * r);
    for (let i = 0; i < r; i++)
      for (let j = 0; j < r; j++) {
        let sum = 0;
        for (let l = 0; l < r; l++) sum += A[i * r + l]! * A[l * r + j]!;
        B[i * r + j] = b * A[i * r + j]! + c * sum;
      }
    const next = new Float64Array(r * k);
    for (let i = 0; i < r; i++)
      for (let j = 0; j < k; j++) {
        let sum = 0;
        for (let l = 0; l < r; l++) sum += B[i * r + l]! * X[l * k + j]!;
        next[i * k + j] = a * X[i * k + j]! + sum;
      }
    X = next;
  }
  const out = new Float64Array(rows * cols);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[i * cols + j] = X[tall ? j * k + i : i * k + j]!;
  return out;
}

function muonStep(w: Weights, names: string[], grads: Record<string, Float32Array>, moments: Moments, p: Muon): void {
  const shape = shapes(w.lora, w.table.length);
  const scale = clipScale(
    names.map((n) => grads[n]!),
    p.gradClipNorm,
  );
  for (const name of names) {
    const x = w.params[name]!;
    const g = grads[name]!;
    const [rows, cols] = shape[name]!;
    const buf = ensure(moments.m, name, x.length);
    // Nesterov: the update direction is g + momentum * (momentum * buf + g).
    const dir = new Float32Array(x.length);
    for (let i = 0; i < x.length; i++) {
      const gi = g[i]! * scale;
      buf[i] = p.momentum * buf[i]! + gi;
      dir[i] = gi + p.momentum * buf[i]!;
    }
    const o = orthogonalise(dir, rows, cols, p.newtonSchulzSteps);
    const size = p.scaling === 'original' ? Math.sqrt(Math.max(1, rows / cols)) : 0.2 * Math.sqrt(Math.max(rows, cols));
    for (let i = 0; i < x.length; i++) x[i] = x[i]! * (1 - p.learningRate * p.weightDecay) - p.learningRate * size * o[i]!;
  }
}

/** Applies one step to `w` (in place) from the accumulated `grads`, which it then zeroes. */
export function optimizerStep(w: Weights, grads: Record<string, Float32Array>, moments: Moments, step: OptimizerStep): void {
  const names = Object.keys(w.params);
  for (const n of names) ensure(grads, n, w.params[n]!.length);
  moments.t += 1;
  if (step.kind === 'adamw') adamStep(w, names, grads, moments, step.adam, moments.t);
  else {
    const matrices = names.filter((n) => MATRICES.has(n));
    muonStep(w, matrices, grads, moments, step.muon);
    adamStep(
      w,
      names.filter((n) => !MATRICES.has(n)),
      grads,
      moments,
      step.muon.adam,
      moments.t,
    );
  }
  for (const n of names) grads[n]!.fill(0);
}
