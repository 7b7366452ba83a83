// Fine-tuning: the request's rules (400 naming the field), the nine-state machine on the runner (pending while the
// files are validated, queued, running, compressing, uploading, completed; cancel; error), the deterministic
// simulation whose tokens come from the real dataset, checkpoints, events, metrics, the fine-tuned model in the
// catalogue, early stopping exactly as 2.11 defines it (hand-computed curves), price estimates, models and limits.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { countTokens } from '../server/engines/tokens.ts';
import { curveHook } from '../server/modules/fine-tuning/machine.ts';
import { earlyStop, plan } from '../server/modules/fine-tuning/training.ts';
import { expectError } from './support/expect.ts';
import { uploadFile } from './support/files.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());
afterEach(() => {
  curveHook.override = undefined;
});

const chat = (i: number, extra = '') => ({
  messages: [
    { role: 'user', content: `Question number ${i}?${extra}` },
    { role: 'assistant', content: `Answer ${i}.` },
  ],
});
const sampleTokens = (i: number, extra = '') => countTokens(`Question number ${i}?${extra}\nAnswer ${i}.`);

async function uploadDataset(rows: unknown[], validate = true) {
  const id = await uploadFile(t.caller, 'fine-tune', rows);
  if (validate) await t.advance(0);
  return id;
}

let train: string;
let validation: string;
const TRAIN = Array.from({ length: 20 }, (_, i) => chat(i));
const VALID = Array.from({ length: 5 }, (_, i) => chat(100 + i, ' (held out)'));
beforeAll(async () => {
  train = await uploadDataset(TRAIN);
  validation = await uploadDataset(VALID);
});

const create = (body: object) => t.caller.http.post('/v1/fine-tunes').send({ model: BASE, training_file: train, ...body });
const get = (id: string) => t.caller.http.get(`/v1/fine-tunes/${id}`);
const estimate = (body: object) => t.caller.http.post('/v1/fine-tunes/estimate-price').send(body);

describe('a job runs through its states on the runner, from the real dataset', () => {
  test('pending -> queued -> running -> compressing -> uploading -> completed: tokens, price, checkpoints, events, metrics, the model', async () => {
    const res = await create({
      batch_size: 8,
      n_epochs: 2,
      n_checkpoints: 2,
      n_evals: 2,
      validation_file: validation,
      suffix: 'demo',
      wandb_project_name: 'p',
      wandb_name: 'run',
      wandb_api_key: 'secret',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const job = res.body;
    expect(job.id).toMatch(/^ft-[0-9a-z]{26}$/);
    expect(job).toMatchObject({
      status: 'pending',
      model: BASE,
      training_file: train,
      validation_file: validation,
      n_epochs: 2,
      n_checkpoints: 2,
      n_evals: 2,
      batch_size: 8,
      learning_rate: 1e-5,
      lr_scheduler: { lr_scheduler_type: 'linear', lr_scheduler_args: { min_lr_ratio: 0 } },
      training_type: { type: 'Lora', lora_r: 8, lora_alpha: 16, lora_dropout: 0, lora_trainable_modules: 'all-linear' },
      training_method: { method: 'sft', train_on_inputs: 'auto' },
      packing: true,
      max_seq_length: 131072,
      suffix: 'demo',
      wandb_project_name: 'p',
      wandb_name: 'run',
      random_seed: null,
      user_id: t.caller.identity.apiKeyId,
    });
    expect(JSON.stringify(job)).not.toContain('secret');
    expect(job.model_output_name).toBe(`${t.caller.identity.projectSlug}/Meta-Llama-3.1-8B-Instruct-Reference-demo-${job.id.slice(-6)}`);
    expect(job.events.map((e: { type: string }) => e.type)).toEqual(['job_pending']);

    await t.advance(0);
    expect((await get(job.id)).body.status).toBe('running');
    await t.advance(1000);
    const done = (await get(job.id)).body;
    expect(done.status).toBe('completed');
    // 20 samples, batches of 8: 3 steps per epoch, 6 steps; every sample twice; the validation set at 2 evaluations.
    const trainTokens = TRAIN.reduce((n, _, i) => n + sampleTokens(i), 0);
    const evalTokens = VALID.reduce((n, _, i) => n + sampleTokens(100 + i, ' (held out)'), 0);
    expect(done.token_count).toBe(2 * trainTokens + 2 * evalTokens);
    expect(done.total_price).toBe(Math.ceil((done.token_count * 0.48) / 1e4));
    expect(done).toMatchObject({
      epochs_completed: 2,
      trainingfile_numlines: 20,
      eval_steps: 3,
      model_output_path: job.model_output_name,
      progress: { estimate_available: true, seconds_remaining: 0 },
    });
    expect(done.events.map((e: { type: string }) => e.type)).toEqual([
      'job_pending',
      'training_data_download_complete',
      'validation_data_download_complete',
      'job_start',
      'model_download_complete',
      'training_start',
      'epoch_complete',
      'epoch_complete',
      'checkpoint_save',
      'training_complete',
      'model_compressing',
      'model_compression_complete',
      'model_uploading',
      'model_upload_complete',
      'job_complete',
    ]);
    expect((await t.caller.http.get(`/v1/fine-tunes/${job.id}/events`)).body.data).toEqual(done.events);

    const checkpoints = (await t.caller.http.get(`/v1/fine-tunes/${job.id}/checkpoints`)).body.data;
    expect(checkpoints.map((c: any) => [c.step, c.checkpoint_type, c.checkpoint, c.path])).toEqual([
      [6, 'Final', 'adapter', `${job.id}:6`],
      [3, 'Intermediate', 'adapter', `${job.id}:3`],
    ]);

    const metrics = (await t.caller.http.get(`/v1/fine-tunes/${job.id}/metrics`)).body.metrics;
    expect(metrics.map((m: any) => m['train/global_step'])).toEqual([1, 2, 3, 4, 5, 6]);
    expect(metrics.map((m: any) => m['train/tokens'])).toEqual(
      [0, 1, 2, 0, 1, 2].map((b) => TRAIN.slice(b * 8, b * 8 + 8).reduce((n, _, i) => n + sampleTokens(b * 8 + i), 0)),
    );
    expect(metrics.filter((m: any) => 'eval/loss' in m).map((m: any) => m['train/global_step'])).toEqual([3, 6]);
    expect(metrics[0]['train/loss']).toBeGreaterThan(metrics[5]['train/loss']);
    // Linear decay to 0, no warm-up.
    expect(metrics[0]['train/learning_rate']).toBeCloseTo(1e-5 * (1 - 1 / 6));
    expect(metrics[5]['train/learning_rate']).toBe(0);
    expect(
      (await t.caller.http.get(`/v1/fine-tunes/${job.id}/metrics`).query({ global_step_from: 2, global_step_to: 4 })).body.metrics.map(
        (m: any) => m['train/global_step'],
      ),
    ).toEqual([2, 3, 4]);
    expect((await t.caller.http.get(`/v1/fine-tunes/${job.id}/metrics`).query({ resolution: 2 })).body.metrics.map((m: any) => m['train/global_step'])).toEqual(
      [1, 3, 6],
    );
    expectError(await t.caller.http.get(`/v1/fine-tunes/${job.id}/metrics`).query({ resolution: 0 }), 400, { param: 'resolution' });

    const model = await t.services.db.prisma.model.findFirst({ where: { projectId: t.caller.identity.projectId, name: job.model_output_name } });
    expect(model).toMatchObject({ modelType: 'adapter', baseModelId: BASE, status: 'ready', sourceKind: 'fine-tune', source: job.id });
    expect(model!.id).toMatch(/^ml_[0-9a-z]{26}$/);
    expect((await t.caller.http.get('/v1/fine-tunes')).body.data.map((j: { id: string }) => j.id)).toContain(job.id);
  });

  test('the simulation is deterministic, and its curves depend on the dataset', async () => {
    const run = async (file: string) => {
      const res = await create({ training_file: file, batch_size: 8, random_seed: 7 });
      await t.advance(0);
      await t.advance(1000);
      return (await t.caller.http.get(`/v1/fine-tunes/${res.body.id}/metrics`)).body.metrics.map((m: any) => m['train/loss']);
    };
    const a = await run(train);
    expect(await run(train)).toEqual(a);
    const longer = await uploadDataset(
      Array.from({ length: 20 }, (_, i) => chat(i, ' with a much longer question that has many more tokens in it than the others')),
    );
    const b = await run(longer);
    expect(b).toHaveLength(a.length);
    expect(b[0]).toBeGreaterThan(a[0]);
  });

  test('the learning rate sets how fast the loss falls, above the default as below it: each rate its own curve', async () => {
    const run = async (learning_rate: number) => {
      const res = await create({ batch_size: 8, n_epochs: 2, random_seed: 7, learning_rate, warmup_ratio: 0 });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      await t.advance(0);
      await t.advance(1000);
      return (await t.caller.http.get(`/v1/fine-tunes/${res.body.id}/metrics`)).body.metrics.map((m: any) => m['train/loss']) as number[];
    };
    const rates = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2];
    const curves = [];
    for (const rate of rates) curves.push(await run(rate));
    // The same noise (same data and seed) on every curve: at each step, a higher rate is strictly lower.
    for (let i = 1; i < rates.length; i++) {
      for (let step = 0; step < curves[i]!.length; step++) expect(curves[i]![step], `${rates[i]} at step ${step + 1}`).toBeLessThan(curves[i - 1]![step]!);
    }
  });

  test('eval_steps is the planned interval between evaluations, also when early stopping halted the run', async () => {
    // 20 samples, batches of 8: 3 steps per epoch; 10 epochs: 30 steps; 6 evaluations, every 5 steps.
    expect(plan(20, 8, 10, 6, 1).evalSteps).toEqual([5, 10, 15, 20, 25, 30]);
    const run = async (early: boolean) => {
      curveHook.override = (_job, p) => ({ train: Array(p.totalSteps).fill(1), eval: [3.0, 2.0, 2.1, 2.0, 0.5, 0.4] });
      const job = (await create({ batch_size: 8, n_epochs: 10, n_evals: 6, validation_file: validation, early_stopping_enabled: early })).body;
      await t.advance(0);
      await t.advance(1000);
      return (await get(job.id)).body;
    };
    expect(await run(false)).toMatchObject({ status: 'completed', eval_steps: 5 });
    // Halted at the fourth evaluation (step 20): the evaluations still ran every 5 steps.
    const halted = await run(true);
    expect(halted).toMatchObject({ status: 'completed', early_stopped: true, early_stopping_best_step: 20, eval_steps: 5 });
  });

  test('full training of a model that allows it: the output is a model, not an adapter', async () => {
    const res = await create({ training_type: { type: 'Full' }, batch_size: 8 });
    expect(res.body.training_type).toEqual({ type: 'Full' });
    await t.advance(0);
    await t.advance(1000);
    const done = (await get(res.body.id)).body;
    expect(done.total_price).toBe(Math.ceil((done.token_count * 0.54) / 1e4));
    const model = await t.services.db.prisma.model.findFirst({ where: { name: done.model_output_name } });
    expect(model).toMatchObject({ modelType: 'model', baseModelId: null });
  });

  test('a job waits in pending while its file is validated; an invalid file, or a dataset of the wrong kind for the method, ends it in error', async () => {
    const unvalidated = await uploadDataset(TRAIN, false);
    const waiting = (await create({ training_file: unvalidated })).body;
    expect(waiting.status).toBe('pending');
    await t.advance(0);
    expect((await get(waiting.id)).body.status).toBe('running');

    const dpo = (await create({ training_method: { method: 'dpo' } })).body;
    expect(dpo.training_method).toMatchObject({ method: 'dpo', dpo_beta: 0.1 });
    await t.advance(0);
    const failed = (await get(dpo.id)).body;
    expect(failed.status).toBe('error');
    expect(failed.error).toMatch(/DPO needs a preference dataset/);
    expect(failed.events.at(-1)).toMatchObject({ type: 'job_error', level: 'error' });
    const instructions = await uploadDataset([{ prompt: 'Say hi. ', completion: 'Hi.' }]);
    const dpoOnInstructions = (await create({ training_file: instructions, training_method: { method: 'dpo' } })).body;
    await t.advance(0);
    expect((await get(dpoOnInstructions.id)).body.error).toMatch(/is an INSTRUCTION dataset; DPO needs a preference dataset/);

    const bad = await uploadDataset([{ nope: 1 }], false);
    const doomed = (await create({ training_file: bad })).body;
    await t.advance(0);
    expect((await get(doomed.id)).body).toMatchObject({ status: 'error', error: expect.stringMatching(/INVALID_FORMAT/) });
    expectError(await create({ training_file: bad }), 400, { code: 'file_invalid', param: 'training_file' });
  });
});

describe("the requirements' unprefixed paths", () => {
  const TWINS = [
    ['post', '/fine-tunes/{id}/cancel', '/v1/fine-tunes/{id}/cancel'],
    ['post', '/fine-tunes/estimate-price', '/v1/fine-tunes/estimate-price'],
    ['get', '/fine-tunes/{id}/metrics', '/v1/fine-tunes/{id}/metrics'],
  ] as const;

  test('the contract documents each as its /v1 form: same parameters, body and responses, an operation of its own', async () => {
    const spec = (await t.http.get('/openapi.json')).body;
    for (const [method, bare, v1] of TWINS) {
      const [a, b] = [spec.paths[bare]?.[method], spec.paths[v1][method]];
      expect(a, `${method.toUpperCase()} ${bare}`).toBeDefined();
      expect(a.operationId).not.toBe(b.operationId);
      for (const part of ['parameters', 'requestBody', 'responses', 'security']) expect(a[part], `${bare} ${part}`).toEqual(b[part]);
    }
  });

  test('POST /fine-tunes/estimate-price, GET /fine-tunes/{id}/metrics and POST /fine-tunes/{id}/cancel answer as their /v1 forms', async () => {
    const body = { training_file: train, validation_file: validation, model: BASE, n_epochs: 2, n_evals: 1 };
    const bare = await t.caller.http.post('/fine-tunes/estimate-price').send(body);
    expect(bare.status, JSON.stringify(bare.body)).toBe(200);
    expect(bare.body).toEqual((await estimate(body)).body);
    expectError(await t.caller.http.post('/fine-tunes/estimate-price').send({ training_file: 'file-nope' }), 404, { param: 'training_file' });

    const done = (await create({ batch_size: 8 })).body;
    await t.advance(0);
    await t.advance(1000);
    const metrics = await t.caller.http.get(`/fine-tunes/${done.id}/metrics`).query({ global_step_from: 2 });
    expect(metrics.status).toBe(200);
    expect(metrics.body.metrics.length).toBeGreaterThan(0);
    expect(metrics.body).toEqual((await t.caller.http.get(`/v1/fine-tunes/${done.id}/metrics`).query({ global_step_from: 2 })).body);
    expectError(await t.caller.http.get('/fine-tunes/ft-nope/metrics'), 404, { param: 'id' });

    const running = (await create({})).body;
    await t.advance(0);
    const cancelled = await t.caller.http.post(`/fine-tunes/${running.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id: running.id, status: 'cancel_requested' });
    await t.advance(1000);
    expectError(await t.caller.http.post(`/fine-tunes/${running.id}/cancel`), 409, { code: 'invalid_state_transition', param: null });
    expectError(await t.caller.http.post('/fine-tunes/ft-nope/cancel'), 404, { param: 'id' });

    // Keyed like every operation; other unprefixed paths are not routes.
    expectError(await t.http.post('/fine-tunes/estimate-price').send(body), 401, { code: 'missing_api_key' });
    expectError(await t.caller.http.get(`/fine-tunes/${done.id}`), 404, { code: 'not_found' });
  });
});

describe('the owner', () => {
  test("owner_address: the owning project's address (0x and 40 hex digits), the same on every answer and every job of the project, another for another project", async () => {
    const job = (await create({})).body;
    expect(job.owner_address).toMatch(/^0x[0-9a-f]{40}$/);
    expect((await get(job.id)).body.owner_address).toBe(job.owner_address);
    const listed = (await t.caller.http.get('/v1/fine-tunes')).body.data.find((j: { id: string }) => j.id === job.id);
    expect(listed.owner_address).toBe(job.owner_address);
    expect((await create({})).body.owner_address).toBe(job.owner_address);
    const other = await t.newCaller();
    const file = await uploadFile(other, 'fine-tune', TRAIN);
    await t.advance(0);
    const theirs = await other.http.post('/v1/fine-tunes').send({ model: BASE, training_file: file });
    expect(theirs.status, JSON.stringify(theirs.body)).toBe(200);
    expect(theirs.body.owner_address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(theirs.body.owner_address).not.toBe(job.owner_address);
  });
});

describe('durability and the files a job reads', () => {
  test('a job survives a restart of the server mid-run, and finishes the same', async () => {
    const job = (await create({ batch_size: 8, random_seed: 3 })).body;
    await t.advance(0);
    expect((await get(job.id)).body.status).toBe('running');
    await t.restart();
    await t.advance(1000);
    const done = (await get(job.id)).body;
    expect(done.status).toBe('completed');
    expect(done.events.filter((e: { type: string }) => e.type === 'training_complete')).toHaveLength(1);
  });

  test('a file a job has yet to read cannot be deleted (409 file_in_use); once the job has finished, it can', async () => {
    const file = await uploadDataset(TRAIN);
    const job = (await create({ training_file: file })).body;
    expectError(await t.caller.http.delete(`/v1/files/${file}`), 409, { code: 'file_in_use', param: 'id' });
    await t.caller.http.post(`/v1/fine-tunes/${job.id}/cancel`);
    expect((await t.caller.http.delete(`/v1/files/${file}`)).body).toEqual({ id: file, deleted: true });
  });
});

describe('cancel and delete', () => {
  test('running -> cancel_requested -> cancelled; pending -> cancelled at once; a finished job cannot be cancelled (409, param null)', async () => {
    const job = (await create({})).body;
    await t.advance(0);
    expect((await get(job.id)).body.status).toBe('running');
    const cancelled = await t.caller.http.post(`/v1/fine-tunes/${job.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id: job.id, status: 'cancel_requested' });
    await t.advance(1000);
    const after = (await get(job.id)).body;
    expect(after.status).toBe('cancelled');
    expect(after.token_count).toBeUndefined();
    expect(after.events.slice(-2).map((e: { type: string }) => e.type)).toEqual(['cancel_requested', 'job_stopped']);
    const refused = await t.caller.http.post(`/v1/fine-tunes/${job.id}/cancel`);
    expectError(refused, 409, { code: 'invalid_state_transition', type: 'invalid_request_error', param: null });
    expect(refused.headers['x-should-retry']).toBe('false');
    expect((await get(job.id)).body.status).toBe('cancelled');

    const pending = (await create({})).body;
    expect((await t.caller.http.post(`/v1/fine-tunes/${pending.id}/cancel`)).body.status).toBe('cancelled');
    await t.advance(1000);
    expect((await get(pending.id)).body.status).toBe('cancelled');
  });

  test('delete answers {message}; the job, its events and checkpoints are gone; a running job is simply stopped', async () => {
    const job = (await create({})).body;
    await t.advance(0);
    const res = await t.caller.http.delete(`/v1/fine-tunes/${job.id}`);
    expect(res.body).toEqual({ message: `Fine-tuning job ${job.id} deleted.` });
    await t.advance(1000);
    expectError(await get(job.id), 404, { param: 'id' });
    expectError(await t.caller.http.get(`/v1/fine-tunes/${job.id}/events`), 404, { param: 'id' });
    expectError(await t.caller.http.get(`/v1/fine-tunes/${job.id}/checkpoints`), 404, { param: 'id' });
    expectError(await t.caller.http.get(`/v1/fine-tunes/${job.id}/metrics`), 404, { param: 'id' });
    expectError(await t.caller.http.post(`/v1/fine-tunes/${job.id}/cancel`), 404, { param: 'id' });
    expectError(await t.caller.http.delete(`/v1/fine-tunes/${job.id}`), 404, { param: 'id' });
    expect(await t.services.db.prisma.fineTuneEvent.count({ where: { jobId: job.id } })).toBe(0);
  });
});

describe('the request rules: 400 (or 404) naming the field, nothing created', () => {
  test.each([
    [{ model: 'openai/gpt-oss-120b', training_type: { type: 'Lora', lora_r: 128, lora_alpha: 16 } }, 'training_type.lora_r'],
    [{ model: 'deepseek-ai/DeepSeek-V3', training_type: { type: 'Full' } }, 'training_type.type'],
    [{ batch_size: 4 }, 'batch_size'],
    [{ batch_size: 64 }, 'batch_size'],
    [{ n_epochs: 0 }, 'n_epochs'],
    [{ n_epochs: 21 }, 'n_epochs'],
    [{ n_checkpoints: 11 }, 'n_checkpoints'],
    [{ n_evals: 2 }, 'validation_file'],
    [{ learning_rate: 1 }, 'learning_rate'],
    [{ warmup_ratio: 1.5 }, 'warmup_ratio'],
    [{ max_seq_length: 10 }, 'max_seq_length'],
    [{ lr_scheduler: { lr_scheduler_type: 'cosine', lr_scheduler_args: { min_lr_ratio: 2, num_cycles: 0.5 } } }, 'lr_scheduler.lr_scheduler_args.min_lr_ratio'],
    [{ training_type: { type: 'Lora', lora_r: 8, lora_alpha: 16, lora_trainable_modules: 'q_proj,lm_head' } }, 'training_type.lora_trainable_modules'],
    [{ suffix: 'has space' }, 'suffix'],
    [{ model: 'BAAI/bge-large-en-v1.5' }, 'model'],
  ])('%j: 400 naming %s', async (body, param) => {
    const before = await t.services.db.prisma.fineTune.count();
    const res = await create(body);
    expectError(res, res.status === 404 ? 404 : 400, { param });
    expect(await t.services.db.prisma.fineTune.count()).toBe(before);
  });

  test('unknown model or file: 404 naming it; a file of another purpose: 400', async () => {
    expectError(await create({ model: 'nobody/nothing' }), 404, { code: 'model_not_found', param: 'model' });
    expectError(await create({ training_file: 'file-nope' }), 404, { code: 'file_not_found', param: 'training_file' });
    expectError(await create({ validation_file: 'file-nope' }), 404, { code: 'file_not_found', param: 'validation_file' });
    expectError(await create({ from_checkpoint: 'ft-nope:3' }), 404, { param: 'from_checkpoint' });
    const evalFile = (
      await t.caller.http.post('/v1/files/upload').field('purpose', 'eval').field('file_name', 'e.jsonl').attach('file', Buffer.from('{"text":"x"}'), 'e.jsonl')
    ).body.id;
    expectError(await create({ training_file: evalFile }), 400, { code: 'wrong_purpose', param: 'training_file' });
  });
});

describe('early stopping, exactly as 2.11 defines it', () => {
  test('enabling it needs a validation file and n_evals >= patience + warmup_evals + 1 (400 naming the field)', async () => {
    expectError(await create({ early_stopping_enabled: true, n_evals: 5 }), 400, { param: 'validation_file' });
    // Defaults: patience 2, warm-up 1: at least 4 evaluations.
    expectError(await create({ early_stopping_enabled: true, validation_file: validation, n_evals: 3 }), 400, {
      code: 'early_stopping_needs_evals',
      param: 'n_evals',
    });
    expectError(
      await create({ early_stopping_enabled: true, validation_file: validation, n_evals: 6, early_stopping_patience: 3, early_stopping_warmup_evals: 3 }),
      400,
      { param: 'n_evals' },
    );
    expectError(await create({ early_stopping_enabled: true, validation_file: validation, n_evals: 6, early_stopping_patience: 0 }), 400, {
      param: 'early_stopping_patience',
    });
    expectError(await create({ early_stopping_enabled: true, validation_file: validation, n_evals: 6, early_stopping_min_delta: -1 }), 400, {
      param: 'early_stopping_min_delta',
    });
    const ok = await create({ early_stopping_enabled: true, validation_file: validation, n_evals: 4 });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ early_stopping_enabled: true, early_stopping_patience: 2, early_stopping_min_delta: 0, early_stopping_warmup_evals: 1 });
  });

  // Hand-computed: evaluations at steps 10, 20, ..., each rule applied by hand in the comments.
  const at = (losses: number[]) => losses.map((loss, i) => ({ step: (i + 1) * 10, loss }));
  test.each([
    {
      name: 'warm-up ignored, reference set, an improvement, then patience runs out',
      // 3.0 warm-up (ignored); 2.0 reference; 1.5 < 2.0 improves (best 1.5 @30); 1.6, 1.7: two without improvement -> halt @50.
      evals: at([3.0, 2.0, 1.5, 1.6, 1.7, 1.0]),
      rule: { patience: 2, minDelta: 0, warmupEvals: 1 },
      want: { stopped: true, endStep: 50, bestStep: 30, bestMetric: 1.5 },
    },
    {
      name: 'no evaluation improves: best metric null, best step the halt step',
      // 3.0 warm-up; 2.0 reference; 2.1 and 2.0 (not below 2.0) -> halt @40 with nothing improved.
      evals: at([3.0, 2.0, 2.1, 2.0, 0.5]),
      rule: { patience: 2, minDelta: 0, warmupEvals: 1 },
      want: { stopped: true, endStep: 40, bestStep: 40, bestMetric: null },
    },
    {
      name: 'min_delta: an improvement must beat the best by more than it',
      // no warm-up; 2.0 reference; 1.95 is not below 2.0 - 0.1 (1); 1.85 below 1.9 improves (best 1.85 @30, count reset);
      // 1.80 not below 1.75 (1); 1.76 not below 1.75 (2) -> halt @50.
      evals: at([2.0, 1.95, 1.85, 1.8, 1.76]),
      rule: { patience: 2, minDelta: 0.1, warmupEvals: 0 },
      want: { stopped: true, endStep: 50, bestStep: 30, bestMetric: 1.85 },
    },
    {
      name: 'patience never runs out: training goes to the last step, the best is reported',
      // 2.0 warm-up; 1.9 reference; 1.8 improves; 1.85 (1); 1.7 improves (best 1.7 @50).
      evals: at([2.0, 1.9, 1.8, 1.85, 1.7]),
      rule: { patience: 2, minDelta: 0, warmupEvals: 1 },
      want: { stopped: false, endStep: 60, bestStep: 50, bestMetric: 1.7 },
    },
    {
      name: 'warm-up evaluations never halt training, however bad',
      // 1.0, 5.0, 6.0 warm-up; 7.0 reference; 6.0 improves (best 6.0 @50); end.
      evals: at([1.0, 5.0, 6.0, 7.0, 6.0]),
      rule: { patience: 1, minDelta: 0, warmupEvals: 3 },
      want: { stopped: false, endStep: 60, bestStep: 50, bestMetric: 6.0 },
    },
  ])('$name', ({ evals, rule, want }) => {
    expect(earlyStop(evals, rule, 60)).toEqual(want);
  });

  test('a job halted early still ends completed, with early_stopped, the best step and metric; it trains only up to the halt', async () => {
    // 20 samples, batches of 8: 3 steps per epoch; 4 epochs: 12 steps; 6 evaluations at steps 2, 4, 6, 8, 10, 12.
    expect(plan(20, 8, 4, 6, 1).evalSteps).toEqual([2, 4, 6, 8, 10, 12]);
    curveHook.override = (_job, p) => ({ train: Array.from({ length: p.totalSteps }, (_, i) => 3 - i * 0.1), eval: [3.0, 2.0, 1.5, 1.6, 1.7, 1.0] });
    const job = (await create({ batch_size: 8, n_epochs: 4, n_evals: 6, n_checkpoints: 4, validation_file: validation, early_stopping_enabled: true })).body;
    await t.advance(0);
    await t.advance(1000);
    const done = (await get(job.id)).body;
    // warm-up 2.0@2... as in the first hand-computed case: reference 2.0 @4, best 1.5 @6, halt @10.
    expect(done).toMatchObject({ status: 'completed', early_stopped: true, early_stopping_best_step: 6, early_stopping_best_metric: 1.5 });
    const metrics = (await t.caller.http.get(`/v1/fine-tunes/${job.id}/metrics`)).body.metrics;
    expect(metrics).toHaveLength(10);
    const steps = (n: number) => Array.from({ length: n }, (_, i) => i % 3);
    const batchTokens = (b: number) => TRAIN.slice(b * 8, b * 8 + 8).reduce((n, _, i) => n + sampleTokens(b * 8 + i), 0);
    const evalTokens = VALID.reduce((n, _, i) => n + sampleTokens(100 + i, ' (held out)'), 0);
    expect(done.token_count).toBe(steps(10).reduce((n, b) => n + batchTokens(b), 0) + 5 * evalTokens);
    const stopped = done.events.find((e: { type: string }) => e.type === 'early_stopped');
    expect(stopped).toMatchObject({ step: 10, early_stopping_best_step: 6, early_stopping_best_metric_value: 1.5 });
    // Checkpoints every 3 steps before the halt, and the final model at the best step.
    const checkpoints = (await t.caller.http.get(`/v1/fine-tunes/${job.id}/checkpoints`)).body.data.map((c: any) => [c.step, c.checkpoint_type]);
    expect(checkpoints).toEqual([
      [9, 'Intermediate'],
      [6, 'Final'],
      [6, 'Intermediate'],
      [3, 'Intermediate'],
    ]);
  });

  test('a job where no evaluation improved: best metric null, best step the halt step', async () => {
    curveHook.override = (_job, p) => ({ train: Array(p.totalSteps).fill(1), eval: [3.0, 2.0, 2.1, 2.0, 0.5, 0.4] });
    const job = (await create({ batch_size: 8, n_epochs: 4, n_evals: 6, validation_file: validation, early_stopping_enabled: true })).body;
    await t.advance(0);
    await t.advance(1000);
    expect((await get(job.id)).body).toMatchObject({ status: 'completed', early_stopped: true, early_stopping_best_step: 8, early_stopping_best_metric: null });
  });
});

describe('estimate-price, supported models, limits', () => {
  test("the platform's answer shape, from the files' tokens; unavailable while a file is not validated", async () => {
    const trainTokens = TRAIN.reduce((n, _, i) => n + sampleTokens(i), 0);
    const evalTokens = VALID.reduce((n, _, i) => n + sampleTokens(100 + i, ' (held out)'), 0);
    const res = await t.caller.http
      .post('/v1/fine-tunes/estimate-price')
      .send({ training_file: train, validation_file: validation, model: BASE, n_epochs: 3, n_evals: 2 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      estimation_available: true,
      estimated_train_token_count: 3 * trainTokens,
      estimated_eval_token_count: 2 * evalTokens,
      allowed_to_proceed: true,
    });
    expect(res.body.estimated_total_price).toBeCloseTo(((3 * trainTokens + 2 * evalTokens) / 1e6) * 0.48, 6);
    expect(res.body.user_limit).toBeLessThanOrEqual(100);
    const dpoFull = (
      await t.caller.http
        .post('/v1/fine-tunes/estimate-price')
        .send({ training_file: train, model: BASE, training_type: { type: 'Full' }, training_method: { method: 'dpo' } })
    ).body;
    expect(dpoFull.estimated_total_price).toBeCloseTo((trainTokens / 1e6) * 0.54 * 2.5, 6);
    const pending = await uploadDataset(TRAIN, false);
    expect((await t.caller.http.post('/v1/fine-tunes/estimate-price').send({ training_file: pending })).body).toEqual({
      estimation_available: false,
      unavailable_reason: 'train_file_not_validated',
    });
    await t.advance(0);
    const bad = await uploadDataset([{ nope: 1 }]);
    expect((await t.caller.http.post('/v1/fine-tunes/estimate-price').send({ training_file: train, validation_file: bad })).body).toEqual({
      estimation_available: false,
      unavailable_reason: 'eval_file_invalid',
    });
    expectError(await t.caller.http.post('/v1/fine-tunes/estimate-price').send({ training_file: 'file-nope' }), 404, { param: 'training_file' });
    expectError(await t.caller.http.post('/v1/fine-tunes/estimate-price').send({ training_file: train, n_epochs: 0 }), 400, { param: 'n_epochs' });
  });

  test('takes every parameter of job creation, checked by the same rules (400 naming the field, nothing created)', async () => {
    const schemas = (await t.http.get('/openapi.json')).body.components.schemas;
    const creation = Object.keys(schemas.CreateFineTuneBody.properties).sort();
    expect(Object.keys(schemas.EstimateFineTunePriceBody.properties).sort()).toEqual(creation);
    expect(schemas.EstimateFineTunePriceBody.required).toEqual(['training_file']);
    const done = (await create({ batch_size: 8 })).body;
    await t.advance(0);
    await t.advance(1000);
    const everything = {
      model: BASE,
      training_file: train,
      validation_file: validation,
      packing: false,
      max_seq_length: 512,
      n_epochs: 2,
      n_checkpoints: 2,
      n_evals: 2,
      batch_size: 8,
      gradient_accumulation_steps: 1,
      learning_rate: 1e-4,
      lr_scheduler: { lr_scheduler_type: 'cosine', lr_scheduler_args: { min_lr_ratio: 0.1, num_cycles: 0.5 } },
      warmup_ratio: 0.1,
      max_grad_norm: 1,
      weight_decay: 0.01,
      random_seed: 5,
      early_stopping_enabled: false,
      early_stopping_patience: 2,
      early_stopping_min_delta: 0,
      early_stopping_warmup_evals: 1,
      suffix: 'estimated',
      wandb_api_key: 'wandb-key',
      wandb_base_url: 'https://wandb.example',
      wandb_project_name: 'p',
      wandb_name: 'n',
      wandb_entity: 'e',
      train_on_inputs: 'auto',
      training_method: { method: 'sft', train_on_inputs: 'auto' },
      training_type: { type: 'Lora', lora_r: 8, lora_alpha: 16, lora_dropout: 0, lora_trainable_modules: 'all-linear' },
      multimodal_params: { train_vision: false },
      from_checkpoint: done.id,
      from_hf_model: 'acme/base',
      hf_model_revision: 'main',
      hf_api_token: 'hf_token',
      hf_output_repo_name: 'acme/out',
    };
    expect(Object.keys(everything).sort()).toEqual(creation);
    const res = await estimate(everything);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.estimation_available).toBe(true);
    const before = await t.services.db.prisma.fineTune.count();
    for (const [body, param] of [
      [{ batch_size: 4 }, 'batch_size'],
      [{ max_seq_length: 10 }, 'max_seq_length'],
      [{ learning_rate: 1 }, 'learning_rate'],
      [{ suffix: 'has space' }, 'suffix'],
      [{ n_evals: 2 }, 'validation_file'],
      [{ early_stopping_enabled: true, validation_file: validation, n_evals: 3 }, 'n_evals'],
      [{ training_type: { type: 'Lora', lora_r: 128, lora_alpha: 16 } }, 'training_type.lora_r'],
    ] as const) {
      expectError(await estimate({ training_file: train, ...body }), 400, { param });
    }
    expectError(await estimate({ training_file: train, from_checkpoint: 'ft-nope:3' }), 404, { param: 'from_checkpoint' });
    expect(await t.services.db.prisma.fineTune.count()).toBe(before);
  });

  test('max_seq_length, packing, n_epochs and n_evals change the estimate as they change the job; a job run to its end costs its estimate', async () => {
    // Samples of 150 to 1,050 tokens: max_seq_length 512 cuts the longer ones; batches of 8 (2 steps an epoch) mix lengths, so
    // without packing each batch is padded to its longest sample.
    const texts = Array.from({ length: 10 }, (_, i) => `${'word '.repeat(150 + 100 * i)}end`);
    const long = await uploadDataset(texts.map((text) => ({ text })));
    const tokens = texts.map((text) => countTokens(text));
    const evalTokens = VALID.reduce((n, _, i) => n + sampleTokens(100 + i, ' (held out)'), 0);
    const batches = [tokens.slice(0, 8), tokens.slice(8)];
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const base = { training_file: long, model: BASE, batch_size: 8 };
    const count = async (body: object) => {
      const res = await estimate({ ...base, ...body });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return [res.body.estimated_train_token_count, res.body.estimated_eval_token_count];
    };
    expect(await count({})).toEqual([sum(tokens), 0]);
    expect(await count({ n_epochs: 3 })).toEqual([3 * sum(tokens), 0]);
    expect(await count({ max_seq_length: 512 })).toEqual([sum(tokens.map((n) => Math.min(n, 512))), 0]);
    expect(await count({ packing: false })).toEqual([sum(batches.map((b) => b.length * Math.max(...b))), 0]);
    expect(await count({ packing: false, max_seq_length: 512 })).toEqual([sum(batches.map((b) => b.length * Math.min(512, Math.max(...b)))), 0]);
    expect(await count({ validation_file: validation, n_evals: 2 })).toEqual([sum(tokens), 2 * evalTokens]);
    expect(await count({ validation_file: validation, n_evals: 1 })).toEqual([sum(tokens), evalTokens]);

    const params = { ...base, packing: false, max_seq_length: 512, n_epochs: 2, n_evals: 2, validation_file: validation };
    const quoted = (await estimate(params)).body;
    const job = (await t.caller.http.post('/v1/fine-tunes').send(params)).body;
    await t.advance(0);
    await t.advance(1000);
    const ran = (await get(job.id)).body;
    expect(ran.status).toBe('completed');
    expect(ran.token_count).toBe(quoted.estimated_train_token_count + quoted.estimated_eval_token_count);
    expect(ran.total_price / 100).toBeGreaterThanOrEqual(quoted.estimated_total_price);
    expect(ran.total_price / 100 - quoted.estimated_total_price).toBeLessThan(0.01);
  });

  test('supported models and their limits; a model that cannot be fine-tuned: 404 naming model_name', async () => {
    const supported = (await t.caller.http.get('/v1/fine-tunes/models/supported')).body;
    expect(supported.models).toContain(BASE);
    expect(supported.models).not.toContain('BAAI/bge-large-en-v1.5');
    expect(supported.detailed_models).toContainEqual({ name: BASE, parent_model: 'llama-3.1-8b' });
    const limits = (await t.caller.http.get('/v1/fine-tunes/models/limits').query({ model_name: BASE })).body;
    expect(limits).toMatchObject({
      model_name: BASE,
      supports_full_training: true,
      max_num_checkpoints: 10,
      lora_training: { max_batch_size: 32, min_batch_size: 8, max_rank: 64 },
    });
    expect((await t.caller.http.get('/v1/fine-tunes/models/limits').query({ model_name: 'deepseek-ai/DeepSeek-V3' })).body).toMatchObject({
      supports_full_training: false,
    });
    expectError(await t.caller.http.get('/v1/fine-tunes/models/limits').query({ model_name: 'BAAI/bge-large-en-v1.5' }), 404, { param: 'model_name' });
  });
});
