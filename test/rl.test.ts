// Reinforcement learning on this server's small local model, through the API: model resources and sessions move
// through their machines on the runner; cross-entropy on a fixed text lowers the loss and moves the sampled text to
// it; a GRPO loop (sample, score, train) raises the reward of a rule; an inference checkpoint is served by chat
// completions with the trained weights; checkpoints download as safetensors from signed URLs and resume a session
// exactly; every other loss, the custom backward pass and Muon run; and the refusals (bounds, states) name their field.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readSafetensors } from '../server/engines/rl/safetensors.ts';
import { decode, encode } from '../server/engines/tokens.ts';
import { signedUrl } from '../server/modules/files/index.ts';
import { expectError } from './support/expect.ts';
import { expectSignedReadFailures } from './support/outage-error.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

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

/** Model resources and a session on them, RUNNING (LoRA adapters drawn from a fixed seed: every run trains alike). */
async function session(resources: Record<string, unknown> & { lora_enabled?: boolean } = {}, body: object = {}): Promise<string> {
  const r = ok(
    await http()
      .post('/v1/rl/model-resources')
      .send({ base_model: BASE, ...resources }),
  );
  const lora = resources.lora_enabled === false ? {} : { lora_config: { seed: 1 } };
  const s = ok(
    await http()
      .post('/v1/rl/training-sessions')
      .send({ model_resources_id: r.id, ...lora, ...body }),
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

const chunks = (tokens: (number | string)[]) => ({ chunks: [{ encoded_text: { tokens } }] });
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
    for (let step = 0; step < 12; step++) {
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
    expect(await run(id, 'weights-sync', { weight_sync_type: 'WEIGHT_SYNC_TYPE_SYNCHRONOUS' })).toEqual({ weights_version: 12 });
    const after = await greedy(id, prompt, 40);
    expect(decode(after.tokens)).toBe(`${ANSWER}<|endoftext|>`);
    expect(after.stop_reason).toBe('STOP_REASON_STOP');
    // The sampled logprobs are the model's own: a forward pass gives the same.
    const fwd = await run(id, 'forward', { samples: [sampleOf([...prompt, ...after.tokens])] });
    const tail = fwd.logprobs[0].data.slice(prompt.length - 1);
    for (const [k, lp] of (tail as number[]).entries()) expect(lp).toBeCloseTo(after.logprobs[k], 5);
    expect((await http().get(`/v1/rl/training-sessions/${id}`)).body.step).toBe(12);
  });

  test("an inference checkpoint is a chat model answered by the trained weights, and says it is this server's small model", async () => {
    const out = await run(id, 'inference-checkpoint');
    expect(out.model_name).toMatch(/^ml_/);
    const s = ok(await http().get(`/v1/rl/training-sessions/${id}`));
    expect(s.inference_checkpoints).toEqual([
      expect.objectContaining({ step: 12, registration: expect.objectContaining({ model_name: out.model_name, model_object_id: out.model_name }) }),
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
    const streamed = await http()
      .post('/v1/chat/completions')
      .send({ model: out.model_name, messages: [{ role: 'user', content: 'Say the rhyme' }], temperature: 0, stream: true });
    const deltas = streamed.text
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)).choices[0]?.delta?.content ?? '');
    expect(deltas.join('')).toBe(ANSWER);
    const completion = ok(
      await http()
        .post('/v1/completions')
        .send({ model: out.model_name, prompt: PROMPT, temperature: 0, max_tokens: 30, stop: ['<|endoftext|>'] }),
    );
    expect(completion.choices[0].text).toBe(ANSWER);
    expectError(
      await http()
        .post('/v1/chat/completions')
        .send({ model: out.model_name, messages: [{ role: 'user', content: 'x' }], n: 65 }),
      400,
      { param: 'n' },
    );
    // The model list shows it as the project's own.
    const models = ok(await http().get('/v1/models'));
    expect(models.find((m: { id: string }) => m.id === out.model_name)).toMatchObject({ type: 'chat' });
  });
});

describe('sampling', () => {
  test('seeds, temperature, top-k and top-p, stop strings, prompt logprobs and routed experts', async () => {
    const id = await session();
    const text = encode('red green blue red green blue red green blue');
    for (let step = 0; step < 3; step++) {
      await run(id, 'forward-backward', { samples: [sampleOf(text)], loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' } });
      await run(id, 'optim-step', { adam_params: { learning_rate: 0.02 } });
    }
    await run(id, 'weights-sync', { weight_sync_type: 'WEIGHT_SYNC_TYPE_BACKGROUND_PUBLISH' });
    const prompt = text.slice(0, 2);
    const draw = (params: object, extra: object = {}) =>
      run(id, 'sample', { model_inputs: [chunks(prompt)], num_samples: 4, sampling_params: { max_tokens: 6, ...params }, ...extra });
    const a = await draw({ seed: 7, temperature: 1.5 });
    expect(await draw({ seed: '7', temperature: 1.5 })).toEqual(a);
    const b = await draw({ seed: 8, temperature: 1.5 });
    expect(b.results[0].sequences).not.toEqual(a.results[0].sequences);
    // top_k 1 is greedy whatever the temperature; so is a tiny top_p.
    const greedyTokens = (await greedy(id, prompt, 6)).tokens;
    for (const params of [
      { top_k: 1, temperature: 5 },
      { top_p: 1e-9, temperature: 5 },
    ]) {
      const out = await draw({ seed: 1, ...params });
      for (const q of out.results[0].sequences) expect(q.tokens).toEqual(greedyTokens);
    }
    // A stop string ends the sequence once its text contains it; the token that completed it is kept.
    const stopped = (await draw({ temperature: 0, stop: [' blue'] })).results[0].sequences[0];
    expect(decode(stopped.tokens).endsWith(' blue')).toBe(true);
    expect(stopped.stop_reason).toBe('STOP_REASON_STOP');
    // Prompt logprobs: each prompt token's, given those before it, as a forward pass computes them.
    const withPrompt = await draw({ temperature: 0, max_tokens: 0 }, { prompt_logprobs: true, topk_prompt_logprobs: 3, return_routed_experts: true });
    const r = withPrompt.results[0];
    const fwd = (await run(id, 'forward', { samples: [sampleOf(prompt)] })).logprobs[0].data;
    expect(r.prompt_logprobs[1]).toBeCloseTo(fwd[0], 6);
    // The three most likely tokens at each position, most likely first, among them the trained one.
    const top = r.topk_prompt_logprobs[1];
    expect(top.token_ids).toHaveLength(3);
    expect([...top.logprobs].sort((x: number, y: number) => y - x)).toEqual(top.logprobs);
    expect(top.logprobs[top.token_ids.indexOf(prompt[1])]).toBeCloseTo(r.prompt_logprobs[1], 6);
    expect(r.sequences[0]).toEqual({
      tokens: [],
      logprobs: [],
      stop_reason: 'STOP_REASON_LENGTH',
      prompt_cache_hit_tokens: 0,
      routed_experts: { data: '', shape: [0, 0] },
    });
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
    for (let round = 0; round < 5; round++) {
      const out = await run(id, 'sample', {
        model_inputs: [chunks(prompt)],
        num_samples: 16,
        sampling_params: { max_tokens: 3, temperature: 1, seed: round },
      });
      const sequences = out.results[0].sequences as { tokens: number[]; logprobs: number[] }[];
      expect(out.results[0].policy_segments).toEqual([{ version: 8 + round, start_token: 0 }]);
      // The rule: the answer (without its end-of-text token) ends with " yes".
      const reward: number[] = sequences.map((q) => (q.tokens.filter((x) => x !== 100257).at(-1) === yes ? 1 : 0));
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
      const fb = await run(id, 'forward-backward', {
        samples,
        loss: { type: 'LOSS_TYPE_GRPO', grpo_params: { agg_type: 'GRPO_LOSS_AGGREGATION_TYPE_TOKEN_MEAN' } },
      });
      // On-policy: the sampler's weights are the trainer's, so no ratio is clipped.
      expect(fb.metrics.clip_fraction).toBe(0);
      // A small step: the block of 100,000 untrained tokens gains from every token pushed down.
      await run(id, 'optim-step', { adam_params: { learning_rate: 0.005 } });
      await run(id, 'weights-sync', { weight_sync_type: 'WEIGHT_SYNC_TYPE_PIPELINE' });
    }
    expect(rewards.at(-1)!).toBeGreaterThan(rewards[0]! + 0.3);
    expect(rewards.at(-1)!).toBeGreaterThanOrEqual(0.8);
  });
});

describe('model resources and sessions', () => {
  test('resources are provisioned on the runner, listed newest first with filters and pages, priced, and stopped', async () => {
    const created = await http()
      .post('/v1/rl/model-resources')
      .send({ base_model: BASE, lora_enabled: false, optimizer_config: { muon: {} }, compute_config: { num_generator_replicas: 2 } });
    const r = ok(created);
    expect(created.headers['x-rl-engine']).toMatch(/^local-rl-engine-1: this server's small local model/);
    expect(r).toMatchObject({
      status: 'MODEL_RESOURCES_STATUS_PENDING',
      base_model: BASE,
      lora_enabled: false,
      compute_config: { num_generator_replicas: 2 },
      optimizer_config: { muon: { scaling_strategy: 'MUON_SCALING_STRATEGY_MATCH_ADAMW' } },
      created_by: t.caller.identity.apiKeyId,
    });
    await t.advance(0);
    expect(ok(await http().get(`/v1/rl/model-resources/${r.id}`)).status).toBe('MODEL_RESOURCES_STATUS_READY');
    const other = ok(await http().post('/v1/rl/model-resources').send({ base_model: BASE }));
    const page = ok(await http().get('/v1/rl/model-resources').query({ limit: 1 }));
    expect(page.data.map((x: { id: string }) => x.id)).toEqual([other.id]);
    expect(page.meta).toEqual({ has_more: true, limit: 1, next_cursor: other.id });
    const next = ok(await http().get('/v1/rl/model-resources').query({ limit: 1, after: other.id }));
    expect(next.data[0].id).toBe(r.id);
    const pending = ok(await http().get('/v1/rl/model-resources').query({ status: 'MODEL_RESOURCES_STATUS_PENDING' }));
    expect(pending.data.map((x: { id: string }) => x.id)).toEqual([other.id]);
    expect(ok(await http().get('/v1/rl/model-resources').query({ created_by: 'someone-else' })).data).toEqual([]);
    // Priced as the platform would: a GPU per generator replica, and one (LoRA) or eight (full) for the trainer.
    const h100 = ok(await http().get('/v1/hardware')).data.find((h: { id: string }) => h.id === '1x_nvidia_h100_80gb_sxm').pricing.cents_per_minute;
    const cost = ok(
      await http()
        .post('/v1/rl/model-resources/estimate-cost')
        .send({ base_model: BASE, lora_enabled: false, compute_config: { num_generator_replicas: 2 } }),
    );
    expect(cost).toEqual({ price_per_hour: Math.round(10 * h100 * 60) / 100, currency: 'USD' });
    const supported = await http().get('/v1/rl/supported-models');
    expect(ok(supported).data.map((m: { base_model: string }) => m.base_model)).toContain(BASE);
    expect(supported.body.data[0]).toMatchObject({ generator_config: { context_length: 2048 }, trainer_config: { lora: { max_rank: 64 } } });
    // Stopping: STOPPING, then STOPPED; once stopped, the machine refuses.
    expect(ok(await http().post(`/v1/rl/model-resources/${other.id}/stop`)).status).toBe('MODEL_RESOURCES_STATUS_STOPPING');
    await t.advance(0);
    expect(ok(await http().get(`/v1/rl/model-resources/${other.id}`)).status).toBe('MODEL_RESOURCES_STATUS_STOPPED');
    expectError(await http().post(`/v1/rl/model-resources/${other.id}/stop`), 409, { code: 'invalid_state_transition', param: null });
    expectError(await http().post('/v1/rl/training-sessions').send({ model_resources_id: other.id }), 409, {
      code: 'model_resources_not_active',
      param: 'model_resources_id',
    });
  });

  test('a session waits for its resources, takes operations while CREATING, and stops after the one in hand; stopping resources in use needs force', async () => {
    const r = ok(await http().post('/v1/rl/model-resources').send({ base_model: BASE, lora_enabled: false }));
    const s = ok(
      await http()
        .post('/v1/rl/training-sessions')
        .send({ model_resources_id: r.id, display_name: 'first', metadata: { wandb: { project: 'p' } } }),
    );
    expect(s).toMatchObject({
      status: 'TRAINING_SESSION_STATUS_CREATING',
      step: 0,
      display_name: 'first',
      metadata: { wandb: { project: 'p' } },
      inference_checkpoints: [],
      training_checkpoints: [],
    });
    expect(s.lora_config).toBeUndefined();
    const queued = ok(
      await http()
        .post(`${ops(s.id)}/weights-sync`)
        .send({ weight_sync_type: 'WEIGHT_SYNC_TYPE_SYNCHRONOUS' }),
    );
    expect(queued.status).toBe('TRAINING_OPERATION_STATUS_PENDING');
    await t.advance(0);
    expect(ok(await http().get(`${ops(s.id)}/weights-sync/${queued.id}`))).toEqual({
      id: queued.id,
      status: 'TRAINING_OPERATION_STATUS_COMPLETED',
      output: { weights_version: 0 },
    });
    // Another kind's path does not find it.
    expectError(await http().get(`${ops(s.id)}/sample/${queued.id}`), 404, { param: 'operation_id' });
    const renamed = ok(await http().patch(`/v1/rl/training-sessions/${s.id}`).send({ display_name: 'second' }));
    expect(renamed).toMatchObject({ display_name: 'second', metadata: { wandb: { project: 'p' } } });
    const listed = ok(await http().get('/v1/rl/training-sessions').query({ model_resources_id: r.id, status: 'TRAINING_SESSION_STATUS_RUNNING' }));
    expect(listed.data.map((x: { id: string }) => x.id)).toEqual([s.id]);
    expectError(await http().post(`/v1/rl/model-resources/${r.id}/stop`), 409, { code: 'model_resources_in_use', param: 'model_resources_id' });
    // Two operations: the first is running when the session stops, the second waits and fails.
    const first = ok(await http().post(`${ops(s.id)}/training-checkpoint`));
    const second = ok(await http().post(`${ops(s.id)}/training-checkpoint`));
    expect([first.status, second.status]).toEqual(['TRAINING_OPERATION_STATUS_RUNNING', 'TRAINING_OPERATION_STATUS_PENDING']);
    expect(ok(await http().post(`/v1/rl/model-resources/${r.id}/stop`).query({ force: true })).status).toBe('MODEL_RESOURCES_STATUS_STOPPING');
    expect(ok(await http().get(`/v1/rl/training-sessions/${s.id}`)).status).toBe('TRAINING_SESSION_STATUS_STOPPING');
    expect(ok(await http().get(`${ops(s.id)}/training-checkpoint/${second.id}`))).toMatchObject({
      status: 'TRAINING_OPERATION_STATUS_FAILED',
      error: { code: 'TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE' },
    });
    await t.advance(0);
    expect(ok(await http().get(`${ops(s.id)}/training-checkpoint/${first.id}`)).status).toBe('TRAINING_OPERATION_STATUS_COMPLETED');
    const stopped = ok(await http().get(`/v1/rl/training-sessions/${s.id}`));
    expect(stopped.status).toBe('TRAINING_SESSION_STATUS_STOPPED');
    expect(stopped.training_checkpoints).toHaveLength(1);
    expectError(await http().post(`/v1/rl/training-sessions/${s.id}/stop`), 409, { code: 'invalid_state_transition', param: null });
    // A stopped session takes no operation of any kind.
    const bodies: Record<string, object | undefined> = {
      forward: { samples: [sampleOf([1, 2])] },
      'forward-backward': { samples: [sampleOf([1, 2])], loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' } },
      'custom-forward-backward': { samples: [sampleOf([1, 2])], gradients: [{ data: [1] }] },
      'optim-step': {},
      'weights-sync': { weight_sync_type: 'WEIGHT_SYNC_TYPE_SYNCHRONOUS' },
      sample: { model_inputs: [chunks([1])] },
      'inference-checkpoint': undefined,
      'training-checkpoint': undefined,
    };
    for (const [kind, body] of Object.entries(bodies))
      expectError(
        await http()
          .post(`${ops(s.id)}/${kind}`)
          .send(body),
        409,
        { code: 'session_not_active', param: 'session_id' },
      );
  });

  test('an idle session expires, failing nothing that ran', async () => {
    const id = await session();
    await t.advance(3_600_000);
    expect(ok(await http().get(`/v1/rl/training-sessions/${id}`)).status).toBe('TRAINING_SESSION_STATUS_EXPIRED');
  });
});

describe('checkpoints', () => {
  test('a training checkpoint downloads as safetensors from signed URLs and resumes a session exactly where it was', async () => {
    const id = await session({}, { lora_config: { rank: 8, alpha: 16, seed: 1 } });
    const text = encode('The quick brown fox jumps over the lazy dog.');
    await run(id, 'forward-backward', { samples: [sampleOf(text)], loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' } });
    await run(id, 'optim-step', { adam_params: { learning_rate: 0.02 } });
    // A pass accumulated and not yet applied is part of the trainer's state too.
    await run(id, 'forward-backward', { samples: [sampleOf(text)], loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' } });
    const { checkpoint_id } = await run(id, 'training-checkpoint');
    const files = ok(await http().get(`/v1/rl/checkpoints/${checkpoint_id}/download`).query({ variant: 'CHECKPOINT_VARIANT_ADAPTER' }));
    expect(files.data.map((f: { filename: string }) => f.filename)).toEqual([
      'adapter_model.safetensors',
      'adapter_config.json',
      'README.md',
      'trainer_state.safetensors',
    ]);
    const adapter = files.data[0];
    // The URL is this server's, and needs no key.
    const path = adapter.url.slice(t.url.length);
    const res = await t.http
      .get(path)
      .buffer(true)
      .parse((r, done) => {
        const parts: Buffer[] = [];
        r.on('data', (c: Buffer) => parts.push(c));
        r.on('end', () => done(null, Buffer.concat(parts)));
      });
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(adapter.size);
    const tensors = readSafetensors(res.body).tensors;
    expect(tensors.lora_hidden_a!.shape).toEqual([8, 128]);
    expect(Array.from(tensors.table!.data)).toEqual(expect.arrayContaining(text));
    expectError(await t.http.get(path.replace('adapter_model.safetensors', 'model.safetensors')), 403, { code: 'invalid_signature', param: 'signature' });
    await expectSignedReadFailures(t, path);
    // A file the checkpoint does not have, under a valid signature.
    const none = await signedUrl(t.services, t.url, 'GET', `/v1/rl/checkpoints/${checkpoint_id}/files/none.bin?variant=CHECKPOINT_VARIANT_ADAPTER`, 60_000);
    expectError(await t.http.get(none.url.slice(t.url.length)), 404, { param: 'filename' });
    const merged = ok(await http().get(`/v1/rl/checkpoints/${checkpoint_id}/download`).query({ variant: 'CHECKPOINT_VARIANT_MERGED' }));
    expect(merged.data.map((f: { filename: string }) => f.filename)).toEqual(['model.safetensors', 'config.json', 'README.md', 'trainer_state.safetensors']);
    // Resumed: the same weights and optimizer state, so the same next step gives the same logprobs.
    const resources = ok(await http().get(`/v1/rl/training-sessions/${id}`)).model_resources_id;
    const resumed = ok(await http().post('/v1/rl/training-sessions').send({ model_resources_id: resources, resume_from_checkpoint_id: checkpoint_id }));
    expect(resumed).toMatchObject({ resume_from_checkpoint_id: checkpoint_id, lora_config: { rank: 8, alpha: 16, dropout: 0, train_unembed: true } });
    await t.advance(0);
    expect(ok(await http().get(`/v1/rl/training-sessions/${resumed.id}`)).step).toBe(1);
    const next = async (sid: string) => {
      await run(sid, 'optim-step', { adam_params: { learning_rate: 0.02 } });
      return (await run(sid, 'forward', { samples: [sampleOf(text)] })).logprobs[0].data;
    };
    expect(await next(resumed.id)).toEqual(await next(id));
    expectError(
      await http()
        .post('/v1/rl/training-sessions')
        .send({ model_resources_id: resources, resume_from_checkpoint_id: checkpoint_id, lora_config: { rank: 4 } }),
      400,
      { param: 'lora_config' },
    );
    expectError(await http().post('/v1/rl/training-sessions').send({ model_resources_id: resources, resume_from_checkpoint_id: 'ckpt_none' }), 404, {
      param: 'resume_from_checkpoint_id',
    });
  });
});

describe("the control plane's snapshots", () => {
  test("a snapshot and its restore keep a session's model (its bytes are text, as every row's columns are)", async () => {
    const id = await session();
    const text = encode('snap shot');
    const logprobs = async () => (await run(id, 'forward', { samples: [sampleOf(text)] })).logprobs[0].data;
    const control = (path: string) => t.http.post(path).set('Authorization', `Bearer ${TEST_CONTROL_KEY}`);
    await run(id, 'forward-backward', { samples: [sampleOf(text)], loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' } });
    await run(id, 'optim-step', { adam_params: { learning_rate: 0.02 } });
    const saved = await logprobs();
    ok(await control('/_control/snapshots').send({ name: 'rl' }));
    await run(id, 'forward-backward', { samples: [sampleOf(text)], loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' } });
    await run(id, 'optim-step', { adam_params: { learning_rate: 0.02 } });
    expect(await logprobs()).not.toEqual(saved);
    ok(await control('/_control/snapshots/rl/restore'));
    expect(await logprobs()).toEqual(saved);
  });
});

describe('every loss, the custom backward pass, Muon and full training', () => {
  test('importance sampling, PPO, CISPO, DRO and GRPO with a reference compute their loss; a custom gradient trains; Muon steps', async () => {
    const id = await session({ lora_enabled: false, optimizer_config: { muon: { scaling_strategy: 'MUON_SCALING_STRATEGY_ORIGINAL' } } });
    const text = encode('one two three four');
    const n = text.length - 1;
    const uniform = -Math.log(100_261);
    const policy = { advantages: { data: Array(n).fill(1) }, logprobs: { data: Array(n).fill(uniform) } };
    // On the untrained model every logprob is uniform, so each ratio is 1 and the losses are known in closed form.
    const loss = async (type: string, inputs: string, params: object = {}) =>
      (await run(id, 'forward-backward', { samples: [sampleOf(text, { [inputs]: policy })], loss: { type, ...params } })).loss;
    expect(await loss('LOSS_TYPE_IMPORTANCE_SAMPLING', 'importance_sampling_inputs')).toBeCloseTo(-n, 6);
    expect(await loss('LOSS_TYPE_PPO', 'ppo_inputs')).toBeCloseTo(-n, 6);
    expect(await loss('LOSS_TYPE_CISPO', 'cispo_inputs')).toBeCloseTo(-n * uniform, 4);
    expect(await loss('LOSS_TYPE_DRO', 'dro_inputs', { dro_params: { beta: 0.5 } })).toBeCloseTo(-n * uniform, 4);
    const grpo = await run(id, 'forward-backward', {
      samples: [sampleOf(text, { grpo_inputs: { ...policy, reference_logprobs: { data: Array(n).fill(uniform - 1) } } })],
      loss: { type: 'LOSS_TYPE_GRPO', grpo_params: { beta: 0.1, ratio_type: 'GRPO_LOSS_RATIO_TYPE_SEQUENCE' } },
    });
    // The surrogate's mean is -1; the KL estimate exp(-1) - (-1) - 1 per token, times beta.
    expect(grpo.loss).toBeCloseTo(-1 + 0.1 * Math.exp(-1), 6);
    expect(grpo.metrics.kl).toBeCloseTo(Math.exp(-1), 6);
    await run(id, 'custom-forward-backward', { samples: [sampleOf(text)], gradients: [{ data: Array(n).fill(-1) }] });
    expect(await run(id, 'optim-step', { muon_params: { learning_rate: 0.01, adam: { learning_rate: 0.02 } } })).toEqual({ step: 1 });
    const after = (await run(id, 'forward', { samples: [sampleOf(text)] })).logprobs[0].data as number[];
    for (const lp of after) expect(lp).toBeGreaterThan(uniform);
    // A full-training checkpoint has no adapter to download.
    const { checkpoint_id } = await run(id, 'training-checkpoint');
    expectError(await http().get(`/v1/rl/checkpoints/${checkpoint_id}/download`).query({ variant: 'CHECKPOINT_VARIANT_ADAPTER' }), 400, { param: 'variant' });
  });

  test('a loss that is not finite fails the operation and changes nothing', async () => {
    const id = await session();
    const text = encode('a b c');
    const res = ok(
      await http()
        .post(`${ops(id)}/forward-backward`)
        .send({
          samples: [sampleOf(text, { importance_sampling_inputs: { advantages: { data: [1e308, 1e308] }, logprobs: { data: [-1e5, -1e5] } } })],
          loss: { type: 'LOSS_TYPE_IMPORTANCE_SAMPLING' },
        }),
    );
    await t.advance(0);
    expect(ok(await http().get(`${ops(id)}/forward-backward/${res.id}`))).toMatchObject({
      status: 'TRAINING_OPERATION_STATUS_FAILED',
      error: { code: 'TRAINING_OPERATION_ERROR_CODE_NON_FINITE_LOSS' },
    });
    // The next operation runs on the state as it was.
    expect((await run(id, 'forward', { samples: [sampleOf(text)] })).logprobs[0].data[0]).toBeCloseTo(-Math.log(100_261), 6);
  });
});

describe('refusals name their field and change nothing', () => {
  test('bounds, loss inputs, optimizers and tokens', async () => {
    const id = await session();
    const fb = (body: object) =>
      http()
        .post(`${ops(id)}/forward-backward`)
        .send(body);
    const ce = { type: 'LOSS_TYPE_CROSS_ENTROPY' };
    expectError(await fb({ samples: [sampleOf([1, 2, 3])], loss: { type: 'LOSS_TYPE_UNSPECIFIED' } }), 400, { param: 'loss.type' });
    expectError(await fb({ samples: [sampleOf([1, 2, 3])], loss: { type: 'LOSS_TYPE_PPO' } }), 400, { param: 'samples.0.loss_inputs.ppo_inputs' });
    expectError(await fb({ samples: [sampleOf([1, 100256])], loss: ce }), 400, { param: 'samples.0.loss_inputs.target_tokens.data.0' });
    expectError(await fb({ samples: [{ model_input: chunks(['x7']), loss_inputs: { target_tokens: { data: [1] } } }], loss: ce }), 400, {
      param: 'samples.0.model_input.chunks.0.encoded_text.tokens.0',
    });
    expectError(await fb({ samples: [sampleOf([1, 2, 3], { weights: { data: [1] } })], loss: ce }), 400, { param: 'samples.0.loss_inputs.weights.data' });
    expectError(await fb({ samples: Array(65).fill(sampleOf([1, 2])), loss: ce }), 400, { param: 'samples' });
    expectError(await fb({ samples: [sampleOf(Array(2050).fill(5))], loss: ce }), 400, { param: 'samples.0.model_input' });
    expectError(await fb({ samples: [sampleOf([1, 2])], loss: { type: 'LOSS_TYPE_DRO' } }), 400, { param: 'loss.dro_params' });
    expectError(
      await fb({ samples: [sampleOf([1, 2])], loss: { type: 'LOSS_TYPE_PPO', ppo_params: { clip_low_threshold: 2, clip_high_threshold: 1 } } }),
      400,
      {
        param: 'loss.ppo_params.clip_low_threshold',
      },
    );
    expectError(
      await http()
        .post(`${ops(id)}/optim-step`)
        .send({ muon_params: {} }),
      400,
      { param: 'muon_params' },
    );
    expectError(
      await http()
        .post(`${ops(id)}/optim-step`)
        .send({ adam_params: { beta1: 1 } }),
      400,
      { param: 'adam_params.beta1' },
    );
    const sample = (body: object) =>
      http()
        .post(`${ops(id)}/sample`)
        .send({ model_inputs: [chunks([1])], ...body });
    expectError(await sample({ num_samples: 65 }), 400, { param: 'num_samples' });
    expectError(await sample({ sampling_params: { max_tokens: 2048 } }), 400, { param: 'model_inputs.0' });
    expectError(await sample({ num_samples: 64, sampling_params: { max_tokens: 512 } }), 400, { param: 'sampling_params.max_tokens' });
    expectError(await sample({ sampling_params: { top_p: 0 } }), 400, { param: 'sampling_params.top_p' });
    expectError(await sample({ sampling_params: { seed: '1.5' } }), 400, { param: 'sampling_params.seed' });
    expectError(await sample({ sampling_params: { stop: [''] } }), 400, { param: 'sampling_params.stop.0' });
    expectError(
      await http()
        .post(`${ops(id)}/custom-forward-backward`)
        .send({ samples: [sampleOf([1, 2])], gradients: [] }),
      400,
      { param: 'gradients' },
    );
    const r = ok(await http().post('/v1/rl/model-resources').send({ base_model: BASE }));
    expectError(await http().post('/v1/rl/model-resources').send({ base_model: 'no/such-model' }), 400, { code: 'model_not_supported', param: 'base_model' });
    expectError(
      await http()
        .post('/v1/rl/model-resources')
        .send({ base_model: BASE, optimizer_config: { adamw: {}, muon: {} } }),
      400,
      { param: 'optimizer_config' },
    );
    expectError(
      await http()
        .post('/v1/rl/model-resources')
        .send({ base_model: BASE, compute_config: { num_generator_replicas: 9 } }),
      400,
      {
        param: 'compute_config.num_generator_replicas',
      },
    );
    const start = (body: object) =>
      http()
        .post('/v1/rl/training-sessions')
        .send({ model_resources_id: r.id, ...body });
    expectError(await start({ lora_config: { rank: 65 } }), 400, { param: 'lora_config.rank' });
    expectError(await start({ lora_config: { train_unembed: false } }), 400, { param: 'lora_config.train_unembed' });
    expectError(await start({ resume_from_hf_checkpoint: 'org/repo' }), 400, { param: 'resume_from_hf_checkpoint' });
    // At most 256 operations wait per session (here its resources are not ready, so none runs).
    const waiting = ok(await http().post('/v1/rl/training-sessions').send({ model_resources_id: r.id })).id;
    const now = BigInt(t.clock.now());
    const { db } = t.services;
    await db.write((tx) =>
      tx.rlOperation.createMany({
        data: Array.from({ length: 256 }, (_, seq) => ({
          id: `op_queued_${seq}`,
          projectId: t.caller.identity.projectId,
          sessionId: waiting,
          seq,
          kind: 'weights_sync',
          status: 'TRAINING_OPERATION_STATUS_PENDING',
          input: '{}',
          createdAt: now,
          updatedAt: now,
        })),
      }),
    );
    expectError(await http().post(`${ops(waiting)}/training-checkpoint`), 409, { code: 'operation_queue_full', param: 'session_id' });
    await db.write(async (tx) => {
      await tx.rlOperation.deleteMany({ where: { sessionId: waiting } });
      await tx.rlSession.delete({ where: { id: waiting } });
    });
    // Nothing was submitted or started.
    expect(await t.services.db.prisma.rlOperation.count({ where: { sessionId: id } })).toBe(0);
    expect(await t.services.db.prisma.rlSession.count({ where: { modelResourcesId: r.id } })).toBe(0);
  });
});
