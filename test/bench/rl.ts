// The local RL engine (server/engines/rl/) as an operation runs it, state bytes in and out: a forward-backward plus
// an optimizer step on a small and a large batch (LoRA and full training, AdamW and Muon), and sampling (tokens per
// second). Median of BENCH_ROUNDS (default 5) after one warm-up; wall time and this process's CPU time.
import type { OptimizerStep, SessionModel } from '../../server/engines/rl/engine.ts';
import { localRlEngine as engine } from '../../server/engines/rl/local.ts';
import { encode } from '../../server/engines/tokens.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const LORA = { rank: 32, alpha: 64, dropout: 0, seed: 'bench', trainUnembed: true };
const ADAM: OptimizerStep = { kind: 'adamw', adam: { learningRate: 0.01, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, gradClipNorm: 1 } };
const MUON: OptimizerStep = {
  kind: 'muon',
  muon: { learningRate: 0.01, momentum: 0.95, newtonSchulzSteps: 5, weightDecay: 0, gradClipNorm: 1, scaling: 'match_adamw', adam: ADAM.adam },
};
const TEXT = encode('The quick brown fox jumps over the lazy dog; the five boxing wizards jump quickly. '.repeat(40));

const batch = (samples: number, tokens: number) =>
  Array.from({ length: samples }, (_, i) => {
    const seq = TEXT.slice(i, i + tokens + 1);
    return { tokens: seq.slice(0, -1), targets: seq.slice(1) };
  });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(f: () => Promise<unknown>) {
  await f();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const before = process.cpuUsage();
    const t = performance.now();
    await f();
    wall.push(performance.now() - t);
    const used = process.cpuUsage(before);
    cpu.push((used.user + used.system) / 1000);
  }
  return `${median(wall).toFixed(1)} ms (${median(cpu).toFixed(1)} ms CPU)`;
}

export async function benchRl(): Promise<void> {
  const cases: [string, SessionModel, OptimizerStep, number, number][] = [
    ['LoRA r32, AdamW, 1 x 32 tokens', { baseModel: 'bench', lora: LORA, optimizer: 'adamw' }, ADAM, 1, 32],
    ['LoRA r32, AdamW, 16 x 256 tokens', { baseModel: 'bench', lora: LORA, optimizer: 'adamw' }, ADAM, 16, 256],
    ['full, AdamW, 1 x 32 tokens', { baseModel: 'bench', lora: null, optimizer: 'adamw' }, ADAM, 1, 32],
    ['full, Muon, 16 x 256 tokens', { baseModel: 'bench', lora: null, optimizer: 'muon' }, MUON, 16, 256],
  ];
  for (const [name, model, step, samples, tokens] of cases) {
    let { trainer } = await engine.start(model);
    const data = batch(samples, tokens);
    // One pass first: the table holds the batch's tokens, as in a session past its first step.
    trainer = (await engine.forwardBackward(trainer, data, { type: 'cross_entropy' }, 'warm')).trainer;
    const fb = await measure(() => engine.forwardBackward(trainer, data, { type: 'cross_entropy' }, 'x'));
    const opt = await measure(() => engine.optimStep(trainer, step));
    console.log(`RESULT rl ${name}: forward-backward ${fb}, optimizer step ${opt}; state ${(trainer.byteLength / 1024).toFixed(0)} KiB`);
  }
  let { trainer } = await engine.start({ baseModel: 'bench', lora: LORA, optimizer: 'adamw' });
  trainer = (await engine.forwardBackward(trainer, batch(16, 256), { type: 'cross_entropy' }, 'warm')).trainer;
  const { sampler } = await engine.weightsSync(trainer);
  const request = {
    prompts: [TEXT.slice(0, 8)],
    numSamples: 8,
    params: { maxTokens: 128, temperature: 1, topP: 1, topK: -1, stop: [], seed: '1' },
    promptLogprobs: false,
    topkPromptLogprobs: 0,
  };
  const t = performance.now();
  const out = await engine.sample(sampler, request);
  const tokens = out[0]!.sequences.reduce((n, q) => n + q.tokens.length, 0);
  console.log(`RESULT rl sampling (LoRA r32, temperature 1): ${((tokens / (performance.now() - t)) * 1000).toFixed(0)} tokens/s (${tokens} tokens)`);
}
