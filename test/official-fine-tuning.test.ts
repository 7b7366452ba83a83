// The official together-ai client (0.52.0), unchanged but for baseURL, on fine-tuning: create, poll to completion,
// read its events, checkpoints and metrics, estimate a price, read limits, cancel a running job, delete.
import Together from 'together-ai';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
let t: TestPlatform;
let client: Together;
let trainingFile: string;
beforeAll(async () => {
  t = await startTestPlatform();
  client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
  const rows = Array.from({ length: 12 }, (_, i) => JSON.stringify({ prompt: `Q${i}: what is ${i} + ${i}?`, completion: ` ${2 * i}` }));
  const form = new FormData();
  form.append('purpose', 'fine-tune');
  form.append('file_name', 'sums.jsonl');
  form.append('file', new Blob([rows.join('\n')]), 'sums.jsonl');
  trainingFile = ((await client.post('/files/upload', { body: form })) as Together.FileResponse).id;
  await t.advance(0);
});
afterAll(() => t?.close());

test('create, poll until completed, events, checkpoints, metrics, estimate, limits, delete', async () => {
  const job = await client.fineTuning.create({
    model: BASE,
    training_file: trainingFile,
    n_epochs: 2,
    batch_size: 8,
    suffix: 'sums',
    lr_scheduler: { lr_scheduler_type: 'cosine', lr_scheduler_args: { min_lr_ratio: 0.1, num_cycles: 0.5 } },
  });
  expect(job.id).toMatch(/^ft-/);
  expect(job.status).toBe('pending');
  let status = job.status as string;
  for (let i = 0; i < 5 && status !== 'completed'; i++) {
    await t.advance(1000);
    status = (await client.fineTuning.retrieve(job.id)).status;
  }
  const done = await client.fineTuning.retrieve(job.id);
  expect(done).toMatchObject({ status: 'completed', model_output_name: expect.stringContaining('-sums-'), epochs_completed: 2 });
  expect(done.token_count).toBeGreaterThan(0);

  const events = await client.fineTuning.listEvents(job.id);
  expect(events.data.map((e) => e.type)).toContain('job_complete');
  const checkpoints = await client.fineTuning.listCheckpoints(job.id);
  expect(checkpoints.data[0]).toMatchObject({ checkpoint_type: 'Final', step: 4 });
  const metrics = await client.fineTuning.listMetrics(job.id);
  expect(metrics.metrics).toHaveLength(4);
  expect(metrics.metrics?.[3]?.['train/learning_rate']).toBeCloseTo(1e-6);

  const estimate = await client.fineTuning.estimatePrice({ training_file: trainingFile, model: BASE });
  expect(estimate).toMatchObject({ estimation_available: true, allowed_to_proceed: true });
  const limits = await client.fineTuning.modelLimits({ model_name: BASE });
  expect(limits.model_name).toBe(BASE);
  expect((await client.fineTuning.list()).data?.map((j) => j.id)).toContain(job.id);

  expect(await client.fineTuning.delete(job.id)).toEqual({ message: `Fine-tuning job ${job.id} deleted.` });
  await expect(client.fineTuning.retrieve(job.id)).rejects.toMatchObject({ status: 404 });
});

test('cancel a running job: cancel_requested, then cancelled', async () => {
  const job = await client.fineTuning.create({ model: BASE, training_file: trainingFile });
  await t.advance(0);
  expect((await client.fineTuning.retrieve(job.id)).status).toBe('running');
  expect((await client.fineTuning.cancel(job.id)).status).toBe('cancel_requested');
  await t.advance(0);
  expect((await client.fineTuning.retrieve(job.id)).status).toBe('cancelled');
});

test('the client calls the /v1 forms of cancel, estimate-price and metrics (the server also has them unprefixed)', async () => {
  const paths: string[] = [];
  const recording = new Together({
    apiKey: t.caller.key,
    baseURL: `${t.url}/v1`,
    maxRetries: 0,
    fetch: (url, init) => {
      paths.push(`${init?.method ?? 'GET'} ${new URL(String(url)).pathname}`);
      return fetch(url, init);
    },
  });
  const job = await recording.fineTuning.create({ model: BASE, training_file: trainingFile });
  await recording.fineTuning.estimatePrice({ training_file: trainingFile, model: BASE });
  await recording.fineTuning.listMetrics(job.id);
  await recording.fineTuning.cancel(job.id);
  expect(paths).toEqual([
    'POST /v1/fine-tunes',
    'POST /v1/fine-tunes/estimate-price',
    `GET /v1/fine-tunes/${job.id}/metrics`,
    `POST /v1/fine-tunes/${job.id}/cancel`,
  ]);
});
