// A base model routed upstream (ENGINES, capability `rl`): another instance of this server holds the session's
// model. The session, its operations, its checkpoint and the checkpoint's chat model all go there, and the answers
// (and `x-rl-engine`) say where.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { encode } from '../server/engines/tokens.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const BASE = 'Qwen/Qwen2.5-7B-Instruct';
let upstream: TestPlatform;
let t: TestPlatform;
beforeAll(async () => {
  // The upstream runs its own operations (its runner on), as a deployed server would.
  upstream = await startTestPlatform({ runner: { enabled: true, pollMs: 10 } });
  const route = { models: ['Qwen/*'], capabilities: ['rl' as const], engine: 'upstream' as const, url: `${upstream.url}/v1`, apiKey: upstream.caller.key };
  t = await startTestPlatform({ config: { engines: { routes: [route] } } });
});
afterAll(async () => {
  await t?.close();
  await upstream?.close();
});

const ok = (res: { status: number; body: any }) => {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

test('the session, its operations, a checkpoint and its chat model live upstream', { timeout: 120_000 }, async () => {
  const http = t.caller.http;
  const r = ok(await http.post('/v1/rl/model-resources').send({ base_model: BASE }));
  const created = await http.post('/v1/rl/training-sessions').send({ model_resources_id: r.id, lora_config: { seed: 1 } });
  expect(created.headers['x-rl-engine']).toBe(`upstream ${upstream.url}/v1`);
  const id = ok(created).id;
  await t.advance(0);
  expect(ok(await http.get(`/v1/rl/training-sessions/${id}`)).status).toBe('TRAINING_SESSION_STATUS_RUNNING');
  // Its model resources and session were made there.
  const [remote] = ok(await upstream.caller.http.get('/v1/rl/training-sessions')).data;
  expect(remote).toMatchObject({ base_model: BASE, lora_config: { seed: '1' } });

  const ops = `/v1/rl/training-sessions/${id}/operations`;
  const run = async (kind: string, body?: object) => {
    const op = ok(await http.post(`${ops}/${kind}`).send(body));
    await t.advance(0);
    const done = ok(await http.get(`${ops}/${kind}/${op.id}`));
    expect(done.status, JSON.stringify(done)).toBe('TRAINING_OPERATION_STATUS_COMPLETED');
    return done.output;
  };
  const text = [...encode('user: hi\nassistant: hello there'), 100257];
  const sample = { model_input: { chunks: [{ encoded_text: { tokens: text.slice(0, -1) } }] }, loss_inputs: { target_tokens: { data: text.slice(1) } } };
  const fb = await run('forward-backward', { samples: [sample], loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' } });
  expect(fb.loss).toBeCloseTo((text.length - 1) * Math.log(100_261), 3);
  for (let i = 0; i < 11; i++) {
    await run('optim-step', { adam_params: { learning_rate: 0.02 } });
    await run('forward-backward', { samples: [sample], loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' } });
  }
  expect(await run('optim-step', { adam_params: { learning_rate: 0.02 } })).toEqual({ step: 12 });
  expect(ok(await upstream.caller.http.get(`/v1/rl/training-sessions/${remote.id}`)).step).toBe(12);
  expect(await run('weights-sync', { weight_sync_type: 'WEIGHT_SYNC_TYPE_SYNCHRONOUS' })).toEqual({ weights_version: 12 });
  const sampled = await run('sample', {
    model_inputs: [{ chunks: [{ encoded_text: { tokens: encode('user: hi\nassistant:') } }] }],
    sampling_params: { max_tokens: 3, temperature: 0 },
  });
  expect(sampled.results[0].sequences[0].tokens).toEqual([...encode(' hello there'), 100257]);
  expect(sampled.results[0].policy_segments).toEqual([{ version: 12, start_token: 0 }]);

  // The inference checkpoint is a model of this project, whose chat is answered upstream by the trained weights.
  const { model_name } = await run('inference-checkpoint');
  const chat = ok(
    await http.post('/v1/chat/completions').send({ model: model_name, messages: [{ role: 'user', content: 'hi' }], temperature: 0, max_tokens: 3 }),
  );
  expect(chat.choices[0].message.content).toBe(' hello there');
  expect(chat.system_fingerprint).toBe('local-rl-engine-1');
  expect(chat.model).toBe(model_name);
  const { checkpoint_id } = await run('training-checkpoint');
  const files = ok(await http.get(`/v1/rl/checkpoints/${checkpoint_id}/download`).query({ variant: 'CHECKPOINT_VARIANT_ADAPTER' }));
  // The files are the upstream's, at its own signed URLs.
  expect(files.data[0].url.startsWith(`${upstream.url}/v1/rl/checkpoints/`)).toBe(true);
  expect((await fetch(files.data[0].url)).status).toBe(200);
});
