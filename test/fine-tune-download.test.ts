// GET /v1/finetune/download: a real tar (ustar) archive of what the local engine computed for a checkpoint (no
// weights, and a README saying so), parsed here independently of the server's writer and checked member by member
// against the job, its checkpoints and its metrics; which checkpoint and which type, and every refusal; HEAD; GNU
// tar reads it; and the official together-ai client's fineTuning.content.
import { spawnSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { fixtures } from '../server/modules/fine-tuning/fixtures.ts';
import { curveHook } from '../server/modules/fine-tuning/machine.ts';
import { expectError } from './support/expect.ts';
import { binaryBody, uploadFile } from './support/files.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';
import { byName, untar } from './support/tar.ts';

const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
let t: TestPlatform;
let train: string;
let validation: string;

const chat = (i: number, extra = '') => ({
  messages: [
    { role: 'user', content: `Question number ${i}?${extra}` },
    { role: 'assistant', content: `Answer ${i}.` },
  ],
});

const upload = (rows: unknown[]) => uploadFile(t.caller, 'fine-tune', rows);

/** Creates a job and lets the runner take it as far as `until` (default: completed). */
async function job(body: object, until = 'completed') {
  const res = await t.caller.http.post('/v1/fine-tunes').send({ model: BASE, training_file: train, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const id = res.body.id as string;
  await t.advance(0);
  for (let i = 0; i < 5 && (await t.caller.http.get(`/v1/fine-tunes/${id}`)).body.status !== until; i++) await t.advance(1000);
  expect((await t.caller.http.get(`/v1/fine-tunes/${id}`)).body.status).toBe(until);
  return id;
}

const download = (query: Record<string, unknown>) => t.caller.http.get('/v1/finetune/download').query(query).buffer(true).parse(binaryBody);

const jsonl = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

beforeAll(async () => {
  t = await startTestPlatform();
  train = await upload(Array.from({ length: 20 }, (_, i) => chat(i)));
  validation = await upload(Array.from({ length: 5 }, (_, i) => chat(100 + i, ' (held out)')));
  await t.advance(0);
});
afterAll(() => t?.close());

describe('a LoRA job: 20 samples, batches of 8, 2 epochs (6 steps), checkpoints at 2, 4 and 6, evaluations at 3 and 6', () => {
  let id: string;
  let metrics: Record<string, number>[];
  let details: any;
  beforeAll(async () => {
    id = await job({ batch_size: 8, n_epochs: 2, n_checkpoints: 3, n_evals: 2, validation_file: validation, learning_rate: 2e-5, suffix: 'dl' });
    metrics = (await t.caller.http.get(`/v1/fine-tunes/${id}/metrics`)).body.metrics;
    details = (await t.caller.http.get(`/v1/fine-tunes/${id}`)).body;
    expect(metrics).toHaveLength(6);
    const steps = (await t.caller.http.get(`/v1/fine-tunes/${id}/checkpoints`)).body.data.map((c: any) => [c.step, c.checkpoint_type]);
    expect(steps).toEqual([
      [6, 'Final'],
      [4, 'Intermediate'],
      [2, 'Intermediate'],
    ]);
  });

  test('the final model by default: merged, a tar of README, training args, the checkpoint and every metric', async () => {
    const res = await download({ ft_id: id });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/octet-stream');
    expect(res.headers['content-disposition']).toBe(`attachment; filename=${id}-final-merged.tar`);
    expect(Number(res.headers['content-length'])).toBe(res.body.length);
    const members = untar(res.body);
    expect(members.map((m) => m.name)).toEqual(['README.txt', 'training_args.json', 'checkpoint.json', 'metrics.jsonl']);
    for (const m of members) expect(m.mode).toBe(0o644);
    const files = byName(members);
    expect(files['README.txt']).toContain('NO MODEL WEIGHTS ARE IN THIS ARCHIVE');
    expect(files['README.txt']).toContain(`${BASE} with the LoRA adapter merged in`);
    expect(files['README.txt']).not.toMatch(/https?:\/\//);

    const args = JSON.parse(files['training_args.json']!);
    for (const k of [
      'model',
      'training_file',
      'validation_file',
      'n_epochs',
      'n_checkpoints',
      'n_evals',
      'batch_size',
      'max_seq_length',
      'packing',
      'learning_rate',
      'lr_scheduler',
      'warmup_ratio',
      'max_grad_norm',
      'weight_decay',
      'random_seed',
      'training_type',
      'training_method',
      'train_on_inputs',
      'early_stopping_enabled',
      'suffix',
    ]) {
      expect(args[k], k).toEqual(details[k]);
    }
    expect(args).toMatchObject({ n_epochs: 2, batch_size: 8, learning_rate: 2e-5, training_type: { type: 'Lora', lora_r: 8, lora_alpha: 16 } });
    expect(JSON.stringify(args)).not.toContain('wandb_api_key');

    const final = metrics[5]!;
    expect(JSON.parse(files['checkpoint.json']!)).toEqual({
      job_id: id,
      step: 6,
      checkpoint_type: 'Final',
      checkpoint: 'merged',
      kind: 'adapter',
      path: `${id}:6`,
      created_at: expect.any(String),
      base_model: BASE,
      model_output_name: details.model_output_name,
      train_loss: final['train/loss'],
      learning_rate: final['train/learning_rate'],
      epoch: 2,
      eval_loss: final['eval/loss'],
      eval_step: 6,
      engine: 'local',
      weights: false,
    });
    expect(jsonl(files['metrics.jsonl']!)).toEqual(metrics);
    expect(members[0]!.mtime).toBe(Math.floor(Date.parse(JSON.parse(files['checkpoint.json']!).created_at) / 1000));
  });

  test('checkpoint_step 0 is the final model too; the same job downloads the same bytes', async () => {
    const a = await download({ ft_id: id });
    const b = await download({ ft_id: id, checkpoint_step: 0 });
    expect(b.status).toBe(200);
    expect(b.headers['content-disposition']).toBe(`attachment; filename=${id}-final-merged.tar`);
    expect(b.body.equals(a.body)).toBe(true);
  });

  test('an intermediate checkpoint as the adapter: the metrics up to its step, no evaluation made yet', async () => {
    const res = await download({ ft_id: id, checkpoint_step: 2, checkpoint: 'adapter' });
    expect(res.status).toBe(200);
    expect(res.headers['content-disposition']).toBe(`attachment; filename=${id}-2-adapter.tar`);
    const files = byName(untar(res.body));
    expect(files['README.txt']).toContain('intermediate checkpoint at step 2');
    expect(files['README.txt']).toContain("the LoRA adapter's weights");
    expect(JSON.parse(files['checkpoint.json']!)).toMatchObject({
      step: 2,
      checkpoint_type: 'Intermediate',
      checkpoint: 'adapter',
      kind: 'adapter',
      path: `${id}:2`,
      train_loss: metrics[1]!['train/loss'],
      eval_loss: null,
      eval_step: null,
      weights: false,
    });
    expect(jsonl(files['metrics.jsonl']!)).toEqual(metrics.slice(0, 2));
  });

  test('checkpoint 4: the last evaluation before it (step 3) gives its eval_loss; model_output_path of LoRA is the adapter', async () => {
    const res = await download({ ft_id: id, checkpoint_step: 4, checkpoint: 'model_output_path' });
    expect(res.headers['content-disposition']).toBe(`attachment; filename=${id}-4-model_output_path.tar`);
    const files = byName(untar(res.body));
    expect(metrics[2]!['eval/loss']).toBeDefined();
    expect(JSON.parse(files['checkpoint.json']!)).toMatchObject({
      step: 4,
      checkpoint_type: 'Intermediate',
      checkpoint: 'model_output_path',
      train_loss: metrics[3]!['train/loss'],
      eval_loss: metrics[2]!['eval/loss'],
      eval_step: 3,
    });
    expect(files['README.txt']).toContain("the LoRA adapter's weights");
    expect(jsonl(files['metrics.jsonl']!)).toEqual(metrics.slice(0, 4));
  });

  test('the final step named by checkpoint_step: the final model, named by its step', async () => {
    const res = await download({ ft_id: id, checkpoint_step: 6 });
    expect(res.headers['content-disposition']).toBe(`attachment; filename=${id}-6-merged.tar`);
    expect(JSON.parse(byName(untar(res.body))['checkpoint.json']!)).toMatchObject({ step: 6, checkpoint_type: 'Final' });
  });

  test('a step that is no checkpoint: 404 naming checkpoint_step; a negative one: 400', async () => {
    expectError(await download({ ft_id: id, checkpoint_step: 5 }), 404, { code: 'checkpoint_not_found', param: 'checkpoint_step', type: 'not_found_error' });
    expectError(await download({ ft_id: id, checkpoint_step: 7 }), 404, { code: 'checkpoint_not_found', param: 'checkpoint_step' });
    expectError(await download({ ft_id: id, checkpoint_step: -1 }), 400, { param: 'checkpoint_step' });
    expectError(await download({ ft_id: id, checkpoint_step: 'two' }), 400, { param: 'checkpoint_step' });
    expectError(await download({ ft_id: id, checkpoint: 'weights' }), 400, { param: 'checkpoint' });
  });

  test('HEAD: the same status and headers, no body', async () => {
    const get = await download({ ft_id: id, checkpoint_step: 2 });
    const head = await t.caller.http.head('/v1/finetune/download').query({ ft_id: id, checkpoint_step: 2 });
    expect(head.status).toBe(200);
    for (const h of ['content-type', 'content-length', 'content-disposition']) expect(head.headers[h], h).toBe(get.headers[h]);
    // Counted on the socket: not one byte of body follows the headers.
    const bytes = await new Promise<number>((resolve, reject) => {
      const url = new URL(`/v1/finetune/download?ft_id=${id}&checkpoint_step=2`, t.url);
      const req = httpRequest(url, { method: 'HEAD', headers: { Authorization: `Bearer ${t.caller.key}` } }, (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => (n += c.length));
        res.on('end', () => resolve(n));
      });
      req.on('error', reject);
      req.end();
    });
    expect(bytes).toBe(0);
    expect(t.logs.join('\n')).not.toContain('stream failed');
    expectError(await t.caller.http.get('/v1/finetune/download').query({ ft_id: 'ft-absent' }), 404, { param: 'ft_id' });
    expect((await t.caller.http.head('/v1/finetune/download').query({ ft_id: 'ft-absent' })).status).toBe(404);
  });

  test('GNU tar lists and extracts it', async () => {
    const res = await download({ ft_id: id });
    const list = spawnSync('tar', ['-tvf', '-'], { input: res.body });
    expect(list.status, String(list.stderr)).toBe(0);
    expect(String(list.stdout)).toMatch(/README\.txt[\s\S]*training_args\.json[\s\S]*checkpoint\.json[\s\S]*metrics\.jsonl/);
    const out = spawnSync('tar', ['-xOf', '-', 'metrics.jsonl'], { input: res.body });
    expect(out.status, String(out.stderr)).toBe(0);
    expect(jsonl(String(out.stdout))).toEqual(metrics);
  });

  test('the official client: fineTuning.content answers the archive; a refusal is its typed error', async () => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const response = await client.fineTuning.content({ ft_id: id });
    expect(response.headers.get('content-disposition')).toBe(`attachment; filename=${id}-final-merged.tar`);
    const files = byName(untar(Buffer.from(await response.arrayBuffer())));
    expect(jsonl(files['metrics.jsonl']!)).toEqual(metrics);
    const step = await client.fineTuning.content({ ft_id: id, checkpoint_step: 4, checkpoint: 'adapter' });
    expect(JSON.parse(byName(untar(Buffer.from(await step.arrayBuffer())))['checkpoint.json']!)).toMatchObject({ step: 4, checkpoint: 'adapter' });
    await expect(client.fineTuning.content({ ft_id: 'ft-absent' })).rejects.toMatchObject({
      status: 404,
      error: { error: { param: 'ft_id', type: 'not_found_error' } },
    });
    await expect(client.fineTuning.content({ ft_id: id, checkpoint_step: 5 })).rejects.toBeInstanceOf(Together.NotFoundError);
  });
});

describe('a full-training job', () => {
  let id: string;
  beforeAll(async () => {
    id = await job({ training_type: { type: 'Full' }, batch_size: 8 });
  });

  test('default model_output_path: the fully trained model; merged also; adapter is 400 naming checkpoint', async () => {
    const res = await download({ ft_id: id });
    expect(res.status).toBe(200);
    expect(res.headers['content-disposition']).toBe(`attachment; filename=${id}-final-model_output_path.tar`);
    const files = byName(untar(res.body));
    expect(files['README.txt']).toContain('the weights of the fully trained model');
    expect(JSON.parse(files['checkpoint.json']!)).toMatchObject({
      step: 3,
      checkpoint_type: 'Final',
      checkpoint: 'model_output_path',
      kind: 'model',
      eval_loss: null,
    });
    expect(JSON.parse(files['training_args.json']!).training_type).toEqual({ type: 'Full' });
    const merged = await download({ ft_id: id, checkpoint: 'merged' });
    expect(merged.headers['content-disposition']).toBe(`attachment; filename=${id}-final-merged.tar`);
    expectError(await download({ ft_id: id, checkpoint: 'adapter' }), 400, { param: 'checkpoint' });
    expectError(await download({ ft_id: id, checkpoint_step: 3, checkpoint: 'adapter' }), 400, { param: 'checkpoint' });
  });
});

describe('early stopping: the final model is the best step, which an intermediate checkpoint shares', () => {
  test('12 steps planned, evaluations every 2, checkpoints every 2; best at 6, halted at 10', async () => {
    curveHook.override = (_job, p) => ({ train: Array.from({ length: p.totalSteps }, (_, i) => 3 - i * 0.1), eval: [3.0, 2.0, 1.5, 1.6, 1.7, 1.0] });
    let id: string;
    try {
      id = await job({ batch_size: 8, n_epochs: 4, n_evals: 6, n_checkpoints: 6, validation_file: validation, early_stopping_enabled: true });
    } finally {
      curveHook.override = undefined;
    }
    const checkpoints = (await t.caller.http.get(`/v1/fine-tunes/${id}/checkpoints`)).body.data.map((c: any) => [c.step, c.checkpoint_type]);
    expect(checkpoints).toEqual([
      [8, 'Intermediate'],
      [6, 'Final'],
      [6, 'Intermediate'],
      [4, 'Intermediate'],
      [2, 'Intermediate'],
    ]);
    const metrics = (await t.caller.http.get(`/v1/fine-tunes/${id}/metrics`)).body.metrics;
    expect(metrics).toHaveLength(10);

    const final = byName(untar((await download({ ft_id: id })).body));
    expect(JSON.parse(final['checkpoint.json']!)).toMatchObject({
      step: 6,
      checkpoint_type: 'Final',
      eval_loss: 1.5,
      eval_step: 6,
      train_loss: metrics[5]['train/loss'],
    });
    expect(jsonl(final['metrics.jsonl']!)).toEqual(metrics.slice(0, 6));
    const six = await download({ ft_id: id, checkpoint_step: 6 });
    expect(JSON.parse(byName(untar(six.body))['checkpoint.json']!)).toMatchObject({ step: 6, checkpoint_type: 'Final' });
    // A checkpoint saved after the best step (before the halt) is still there to download.
    const eight = byName(untar((await download({ ft_id: id, checkpoint_step: 8 })).body));
    expect(JSON.parse(eight['checkpoint.json']!)).toMatchObject({ step: 8, checkpoint_type: 'Intermediate', eval_loss: 1.6, eval_step: 8 });
    expect(jsonl(eight['metrics.jsonl']!)).toEqual(metrics.slice(0, 8));
    expectError(await download({ ft_id: id, checkpoint_step: 10 }), 404, { param: 'checkpoint_step' });
  });
});

describe('refusals', () => {
  test('a job not completed: no final model (400 naming ft_id); no checkpoint yet (404 naming checkpoint_step)', async () => {
    const running = await job({ batch_size: 8 }, 'running');
    expectError(await download({ ft_id: running }), 400, { code: 'fine_tune_not_completed', param: 'ft_id' });
    expectError(await download({ ft_id: running, checkpoint_step: 3 }), 404, { code: 'checkpoint_not_found', param: 'checkpoint_step' });
    expect((await t.caller.http.post(`/v1/fine-tunes/${running}/cancel`)).status).toBe(200);
    await t.advance(0);
    expectError(await download({ ft_id: running }), 400, { code: 'fine_tune_not_completed', param: 'ft_id' });
  });

  test('no ft_id: 400 naming it; an unknown one: 404 naming it', async () => {
    expectError(await t.caller.http.get('/v1/finetune/download'), 400, { param: 'ft_id' });
    expectError(await download({ ft_id: 'ft-00000000000000000000000000' }), 404, { param: 'ft_id', type: 'not_found_error' });
  });

  test("another project's job: the 404 of an absent one; its owner downloads it (the module's auth-matrix fixture)", async () => {
    const req = await fixtures.crossProject.downloadFineTune!(t.fixtureKit(t.other));
    const stranger = await download(req.query!);
    expectError(stranger, 404, { param: 'ft_id', type: 'not_found_error' });
    expect(stranger.body.error.message).toBe(`No fine-tuning job with id '${req.query!.ft_id}' was found.`);
    const owner = await t.other.http.get('/v1/finetune/download').query(req.query!).buffer(true).parse(binaryBody);
    expect(owner.status).toBe(200);
    expect(untar(owner.body).map((m) => m.name)).toEqual(['README.txt', 'training_args.json', 'checkpoint.json', 'metrics.jsonl']);
  });
});
