// The RL engine's mathematics, checked without a server: the hand-written backward pass against finite differences
// (full and LoRA weights, a target inside and outside the model's table), each loss's gradient against its value,
// entering tokens into the table changing nothing the model computes, Muon's orthogonalisation, and the state's
// safetensors bytes read back as written.
import { describe, expect, test } from 'vitest';
import { computeLoss, type LossSample, type LossSpec } from '../server/engines/rl/losses.ts';
import { enterTokens, initialWeights, type Lora, Net } from '../server/engines/rl/net.ts';
import { orthogonalise } from '../server/engines/rl/optimizers.ts';
import { readSafetensors, writeSafetensors } from '../server/engines/rl/safetensors.ts';
import { encode } from '../server/engines/tokens.ts';

const LORA: Lora = { rank: 4, alpha: 8, dropout: 0, seed: 'test', trainUnembed: true };
const TOKENS = encode('the cat sat on the mat and the dog sat too');

/** Weights with every parameter moved off its initial value, so each gradient is non-trivial. */
function trained(lora: Lora | null) {
  const w = initialWeights('test/base', lora);
  enterTokens(w, TOKENS);
  for (const a of Object.values(w.params)) for (let i = 0; i < a.length; i++) a[i]! += 0.1 * Math.sin(i * 1.7 + a.length);
  return w;
}

describe('the backward pass', () => {
  test.each([
    ['full', null],
    ['LoRA', LORA],
  ] as const)('%s: the gradient of sum(g x logprob) matches finite differences, a target outside the table included', (_name, lora) => {
    const w = trained(lora);
    const inputs = TOKENS.slice(0, -1);
    const targets = TOKENS.slice(1);
    targets[3] = 99_999; // not in the table: its logprob is the shared row's
    const g = targets.map((_, i) => Math.cos(i));
    const grads: Record<string, Float64Array> = {};
    const net = new Net(w);
    net.backward(net.forward(inputs, targets), g, grads);
    const value = () => new Net(w).forward(inputs, targets).logprobs.reduce((s, lp, i) => s + g[i]! * lp, 0);
    for (const [name, a] of Object.entries(w.params)) {
      for (const i of [0, Math.floor(a.length / 3), a.length - 1]) {
        const x = a[i]!;
        const h = 1e-2;
        a[i] = x + h;
        const up = value();
        a[i] = x - h;
        const down = value();
        a[i] = x;
        const numeric = (up - down) / (2 * h);
        expect(grads[name]?.[i] ?? 0, `${name}[${i}]`).toBeCloseTo(numeric, 2);
      }
    }
  });

  test("entering tokens into the table changes no logprob (a sample's logprobs stay a forward pass's)", () => {
    const w = trained(null);
    const inputs = encode('a sentence of words never trained on');
    const before = new Net(w).forward(inputs.slice(0, -1), inputs.slice(1)).logprobs;
    expect(enterTokens(w, inputs)).toBeGreaterThan(0);
    const after = new Net(w).forward(inputs.slice(0, -1), inputs.slice(1)).logprobs;
    for (const [i, lp] of after.entries()) expect(lp).toBeCloseTo(before[i]!, 5);
  });
});

describe('losses', () => {
  const sample = (): LossSample => ({
    logprobs: [-1.2, -0.3, -2.5, -0.9],
    weights: [1, 0.5, 1, 1],
    advantages: [1, -2, 0.5, 3],
    sampling: [-1, -0.5, -2.4, -1.6],
    reference: [-1.1, -0.2, -2, -1],
  });
  const specs: LossSpec[] = [
    { type: 'cross_entropy' },
    { type: 'importance_sampling' },
    { type: 'ppo', low: 0.8, high: 1.2 },
    { type: 'dro', beta: 0.7 },
    { type: 'grpo', low: 0.8, high: 1.2, beta: 0.3, aggregation: 'fixed_horizon', ratio: 'token' },
    { type: 'grpo', low: 0.5, high: 3, beta: 0.3, aggregation: 'sequence_mean', ratio: 'sequence' },
    { type: 'grpo', low: 0.8, high: 1.2, beta: 0, aggregation: 'token_mean', ratio: 'token' },
  ];
  test.each(specs.map((s) => [JSON.stringify(s), s] as const))("%s: the gradient is the value's derivative", (_name, spec) => {
    const { grads } = computeLoss(spec, [sample(), sample()]);
    for (let t = 0; t < 4; t++) {
      const at = (d: number) => {
        const a = sample();
        a.logprobs[t]! += d;
        return computeLoss(spec, [a, sample()]).loss;
      };
      expect(grads[0]![t]!, `position ${t}`).toBeCloseTo((at(1e-6) - at(-1e-6)) / 2e-6, 4);
    }
  });

  test("CISPO's gradient is the clipped ratio times the advantage (the ratio does not carry gradient)", () => {
    const s = sample();
    const { grads } = computeLoss({ type: 'cispo', low: 0, high: 1.1 }, [s]);
    for (let t = 0; t < 4; t++) expect(grads[0]![t]).toBeCloseTo(-Math.min(1.1, Math.exp(s.logprobs[t]! - s.sampling![t]!)) * s.advantages![t]!, 9);
  });
});

test("Muon's Newton-Schulz iterations bring every singular value near 1", () => {
  const rows = 8;
  const cols = 20;
  const g = Float32Array.from({ length: rows * cols }, (_, i) => Math.sin(i * 0.37) * (1 + (i % 7)));
  const o = orthogonalise(g, rows, cols, 5);
  // The diagonal of O O^T: each row's squared norm, near 1 (the quintic's fixed points lie between about 0.7 and 1.2).
  for (let r = 0; r < rows; r++) {
    let n = 0;
    for (let c = 0; c < cols; c++) n += o[r * cols + c]! ** 2;
    expect(n).toBeGreaterThan(0.4);
    expect(n).toBeLessThan(1.5);
  }
});

test('safetensors: tensors and metadata read back as written', () => {
  const tensors = { a: { data: Float32Array.from([1.5, -2, 3]), shape: [3] }, t: { data: Int32Array.from([7, 100257]), shape: [2] } };
  const back = readSafetensors(writeSafetensors({ tensors, metadata: { format: 'pt' } }));
  expect(back.metadata).toEqual({ format: 'pt' });
  expect(Array.from(back.tensors.a!.data)).toEqual([1.5, -2, 3]);
  expect(Array.from(back.tensors.t!.data)).toEqual([7, 100257]);
  expect(back.tensors.t!.shape).toEqual([2]);
});
