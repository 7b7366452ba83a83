// Reinforcement learning on this server's small local model, through the API: model resources and sessions move
// through their machines on the runner; cross-entropy on a fixed text lowers the loss and moves the sampled text to
// it; a GRPO loop (sample, score, train) raises the reward of a rule; an inference checkpoint is served by chat
// completions with the trained weights; checkpoints download as safetensors from signed URLs and resume a session
// exactly; every other loss, the custom backward pass and Muon run; and the refusals (bounds, states) name their field.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readSafetensors } from '../server/engines/rl/safetensors.ts';
import { decode, encode } from '../server/engines/tokens.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const BASE = 'Qwen/Qwen2.5-7B-Instruct';
let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const http = () => t.caller.http;
const ok = (res: { status: number; body: any }) => {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};
const ops = (session: string) => `/v1/rl/training-sessions/${session}/operations`;

/** Model resources and a session on them, RUNNING. */
async function session(resources: object = {}, body: object = {}): Promise<string> {
  const r = ok(
    await http()
      .post('/v1/rl/model-resources')
      .send({ base_model: BASE, ...resources }),
  );
  const s = ok(
    await http()
      .post('/v1/rl/training-sessions')
      .send({ model_resources_id: r.id, ...body }),
  );
  await t.advance(0);
  expect(ok(await http().get(`/v1/rl/training-sessions/${s.id}`)).status).toBe('TRAINING_SESSION_STATUS_RUNNING');
  return s.id;
}

/** Submits an operation, lets the runner run it, and answers it as its GET does. */
async function run(sessionId: string, kind: string, body?: object) {
  const submitted = ok(
    await http()
      .post(`${ops(sessionId)}/${kind}`)
      .send(body),
  );
  await t.advance(0);
  const done = ok(await http().get(`${ops(sessionId)}/${kind}/${submitted.id}`));
  expect(done.status, JSON.stringify(done)).toBe('TRAINING_OPERATION_STATUS_COMPLETED');
  return done.output;
}

const chunks = (tokens: number[]) => ({ chunks: [{ encoded_text: { tokens } }] });
/** A sample of the whole sequence: inputs without its last token, targets without its first. */
const sampleOf = (tokens: number[], extra: Record<string, unknown> = {}) => ({
  model_input: chunks(tokens.slice(0, -1)),
  loss_inputs: { target_tokens: { data: tokens.slice(1) }, ...extra },
});
const greedy = async (id: string, prompt: number[], maxTokens: number) => {
  const out = await run(id, 'sample', { model_inputs: [chunks(prompt)], sampling_params: { max_tokens: maxTokens, temperature: 0 } });
  return out.results[0].sequences[0];
};

describe('training on a fixed text', () => {
  // The transcript a chat of this question renders (see Inference: the RL checkpoint's template), then the answer.
  const PROMPT = 'user: Say the rhyme\nassistant:';
  const ANSWER = ' Twinkle, twinkle, little star, how I wonder what you are.';
  const TEXT = encode(PROMPT + ANSWER);
  let id: string;

  test('cross-entropy steps lower the loss, and the sampled text moves to the text', async () => {
    id = await session();
    const prompt = encode(PROMPT);
    const before = await greedy(id, prompt, encode(ANSWER).length);
    expect(decode(before.tokens)).not.toBe(ANSWER);
    const losses: number[] = [];
    for (let step = 0; step < 8; step++) {
      const fb = await run(id, 'forward-backward', { samples: [sampleOf([...TEXT, 100257])], loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' } });
      expect(fb.metrics).toMatchObject({ 'loss:sum': fb.loss, tokens: TEXT.length });
      expect(fb.metrics.grad_norm).toBeGreaterThan(0);
      losses.push(fb.loss);
      expect((await run(id, 'optim-step', { adam_params: { learning_rate: 0.02 } })).step).toBe(step + 1);
    }
    // Untrained, the model is uniform over the vocabulary: the loss starts at tokens x ln(100261).
    expect(losses[0]).toBeCloseTo(TEXT.length * Math.log(100_261), 3);
    for (let i = 1; i < losses.length; i++) expect(losses[i]).toBeLessThan(losses[i - 1]!);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! / 10);
    // The sampler has the initial weights until a weights-sync.
    expect((await greedy(id, prompt, 4)).tokens).toEqual(before.tokens.slice(0, 4));
    expect(await run(id, 'weights-sync', { weight_sync_type: 'WEIGHT_SYNC_TYPE_SYNCHRONOUS' })).toEqual({ weights_version: 8 });
    const after = await greedy(id, prompt, 40);
    expect(decode(after.tokens)).toBe(`${ANSWER}<|endoftext|>`);
    expect(after.stop_reason).toBe('STOP_REASON_STOP');
    // The sampled logprobs are the model's own: a forward pass gives the same.
    const fwd = await run(id, 'forward', { samples: [sampleOf([...prompt, ...after.tokens])] });
    const tail = fwd.logprobs[0].data.slice(prompt.length - 1);
    for (const [k, lp] of (tail as number[]).entries()) expect(lp).toBeCloseTo(after.logprobs[k], 5);
    expect((await http().get(`/v1/rl/training-sessions/${id}`)).body.step).toBe(8);
  });

  test("an inference checkpoint is a chat model answered by the trained weights, and says it is this server's small model", async () => {
    const out = await run(id, 'inference-checkpoint');
    expect(out.model_name).toMatch(/^ml_/);
    const s = ok(await http().get(`/v1/rl/training-sessions/${id}`));
    expect(s.inference_checkpoints).toEqual([
      expect.objectContaining({ step: 8, registration: expect.objectContaining({ model_name: out.model_name, model_object_id: out.model_name }) }),
    ]);
    const chat = await http()
      .post('/v1/chat/completions')
      .send({ model: out.model_name, messages: [{ role: 'user', content: 'Say the rhyme' }], temperature: 0, logprobs: true, top_logprobs: 2 });
    ok(chat);
    expect(chat.body.choices[0].message.content).toBe(ANSWER);
    expect(chat.body.choices[0].finish_reason).toBe('stop');
    expect(chat.body.system_fingerprint).toBe('local-rl-engine-1');
    expect(chat.body.warnings[0].message).toMatch(/small local model/);
    expect(chat.body.usage.completion_tokens).toBe(encode(ANSWER).length);
    const lp = chat.body.choices[0].logprobs.content;
    expect(lp[0].top_logprobs).toHaveLength(2);
    expect(lp[0].logprob).toBeLessThan(0);
    expect(lp[0].logprob).toBeGreaterThan(-0.5);
    // Streamed, and as a completion of the raw prompt, the same text.
    const completion = ok(
      await http()
        .post('/v1/completions')
        .send({ model: out.model_name, prompt: PROMPT, temperature: 0, max_tokens: 30, stop: ['<|endoftext|>'] }),
    );
    expect(completion.choices[0].text).toBe(ANSWER);
    // The model list shows it as the project's own.
    const models = ok(await http().get('/v1/models'));
    expect(models.find((m: { id: string }) => m.id === out.model_name)).toMatchObject({ type: 'chat' });
  });
});

describe('reinforcement learning', () => {
  test('a GRPO loop (sample, score, train) raises the reward of answers that end with a given token', async () => {
    const id = await session();
    const prompt = encode('Answer:');
    const [yes] = encode(' yes');
    const [no] = encode(' no');
    // A little supervised warm-up: the untrained model is uniform over 100,261 tokens, so it would never say either.
    for (let step = 0; step < 8; step++) {
      await run(id, 'forward-backward', {
        samples: [sampleOf([...prompt, yes!, 100257]), sampleOf([...prompt, no!, 100257])],
        loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' },
      });
      await run(id, 'optim-step', { adam_params: { learning_rate: 0.02 } });
    }
    await run(id, 'weights-sync', { weight_sync_type: 'WEIGHT_SYNC_TYPE_SYNCHRONOUS' });
    const rewards: number[] = [];
    for (let round = 0; round < 4; round++) {
      const out = await run(id, 'sample', {
        model_inputs: [chunks(prompt)],
        num_samples: 16,
        sampling_params: { max_tokens: 3, temperature: 1, seed: round },
      });
      const sequences = out.results[0].sequences as { tokens: number[]; logprobs: number[] }[];
      expect(out.results[0].policy_segments).toEqual([{ version: 8 + round, start_token: 0 }]);
      // The rule: the answer (without its end-of-text token) ends with " yes".
      const reward = sequences.map((q) => (q.tokens.filter((x) => x !== 100257).at(-1) === yes ? 1 : 0));
      const mean = reward.reduce((a, b) => a + b, 0) / reward.length;
      rewards.push(mean);
      const samples = sequences.map((q, i) => {
        const full = [...prompt, ...q.tokens];
        const n = full.length - 1;
        const at = (k: number) => k - (prompt.length - 1);
        const completion = (k: number) => at(k) >= 0;
        return sampleOf(full, {
          weights: { data: Array.from({ length: n }, (_, k) => (completion(k) ? 1 : 0)) },
          grpo_inputs: {
            advantages: { data: Array.from({ length: n }, (_, k) => (completion(k) ? reward[i]! - mean : 0)) },
            logprobs: { data: Array.from({ length: n }, (_, k) => (completion(k) ? q.logprobs[at(k)]! : 0)) },
          },
        });
      });
      const fb = await run(id, 'forward-backward', { samples, loss: { type: 'LOSS_TYPE_GRPO', grpo_params: { agg_type: 'GRPO_LOSS_AGGREGATION_TYPE_TOKEN_MEAN' } } });
      // On-policy: the sampler's weights are the trainer's, so no ratio is clipped.
      expect(fb.metrics.clip_fraction).toBe(0);
      await run(id, 'optim-step', { adam_params: { learning_rate: 0.02 } });
      await run(id, 'weights-sync', { weight_sync_type: 'WEIGHT_SYNC_TYPE_PIPELINE' });
    }
    expect(rewards.at(-1)!).toBeGreaterThan(rewards[0]! + 0.3);
    expect(rewards.at(-1)!).toBeGreaterThanOrEqual(0.8);
  });
});
