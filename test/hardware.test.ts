// GET /v1/hardware (availability only when `model` is given): the seeded configurations, the model filter by GPU
// memory, availability from capacity minus running replicas, and the model lookup's errors; also through the
// official client.
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { availabilityOf, canRun, fits, release, reserve } from '../server/modules/hardware/capacity.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const ALL = [
  '1x_nvidia_a100_80gb_pcie',
  '1x_nvidia_h100_80gb_sxm',
  '1x_nvidia_l40s_48gb_pcie',
  '2x_nvidia_a100_80gb_sxm',
  '2x_nvidia_h100_80gb_sxm',
  '4x_nvidia_h100_80gb_sxm',
  '8x_nvidia_h100_80gb_sxm',
  '8x_nvidia_h200_141gb_sxm',
];

const list = async (model?: string) => {
  const { data, response } = await t.api.GET('/v1/hardware', { params: { query: model === undefined ? {} : { model } } });
  expect(response.status).toBe(200);
  return data!;
};
const statusOf = async (model: string, id: string) => (await list(model)).data.find((h) => h.id === id)?.availability?.status;

/** Queued -> Running, then Running -> Complete | Failed (the default step durations). */
const finishUploads = async () => {
  await t.advance(2_000);
  await t.advance(10_000);
};

const onReplicas = async (hardwareId: string, replicas: number, ownerId: string) =>
  t.services.db.write((tx) => reserve(tx, t.clock, { projectId: t.other.identity.projectId, hardwareId, replicas, ownerKind: 'deployment', ownerId }));
const stop = (ownerId: string) => t.services.db.write((tx) => release(tx, t.clock, 'deployment', ownerId));

describe('GET /v1/hardware', () => {
  test('without model: every seeded configuration, with price and specs, and no availability', async () => {
    const body = await list();
    expect(body.object).toBe('list');
    expect(body.data.map((h) => h.id)).toEqual(ALL);
    const h100 = body.data.find((h) => h.id === '2x_nvidia_h100_80gb_sxm')!;
    expect(h100).toEqual({
      object: 'hardware',
      id: '2x_nvidia_h100_80gb_sxm',
      pricing: { cents_per_minute: 11.2 },
      specs: { gpu_type: 'h100-80gb', gpu_link: 'sxm', gpu_memory: 80, gpu_count: 2 },
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    for (const h of body.data) expect(h).not.toHaveProperty('availability');
  });

  test('with model: only configurations whose total GPU memory covers the model, each with availability', async () => {
    // 24 GB: every configuration.
    const small = await list('meta-llama/Meta-Llama-3.1-8B-Instruct');
    expect(small.data.map((h) => h.id)).toEqual(ALL);
    for (const h of small.data) expect(h.availability).toEqual({ status: 'available' });
    // 160 GB: two 80 GB GPUs or more.
    const large = await list('meta-llama/Llama-3.3-70B-Instruct-Turbo');
    expect(large.data.map((h) => h.id)).toEqual([
      '2x_nvidia_a100_80gb_sxm',
      '2x_nvidia_h100_80gb_sxm',
      '4x_nvidia_h100_80gb_sxm',
      '8x_nvidia_h100_80gb_sxm',
      '8x_nvidia_h200_141gb_sxm',
    ]);
    // 1128 GB: only eight H200s.
    expect((await list('deepseek-ai/DeepSeek-V3')).data.map((h) => h.id)).toEqual(['8x_nvidia_h200_141gb_sxm']);
  });

  test('availability follows running replicas of every project: available, unavailable, available again', async () => {
    const model = 'Qwen/Qwen2.5-7B-Instruct';
    expect(await statusOf(model, '1x_nvidia_l40s_48gb_pcie')).toBe('available');
    await onReplicas('1x_nvidia_l40s_48gb_pcie', 1, 'dep_l40s');
    expect(await statusOf(model, '1x_nvidia_l40s_48gb_pcie')).toBe('unavailable');
    expect(await statusOf(model, '1x_nvidia_h100_80gb_sxm')).toBe('available');
    await stop('dep_l40s');
    expect(await statusOf(model, '1x_nvidia_l40s_48gb_pcie')).toBe('available');
  });

  test('some GPUs free but fewer than one replica needs: insufficient', async () => {
    const model = 'deepseek-ai/DeepSeek-V3';
    await onReplicas('8x_nvidia_h200_141gb_sxm', 1, 'dep_h200');
    expect(await statusOf(model, '8x_nvidia_h200_141gb_sxm')).toBe('insufficient');
    await stop('dep_h200');
    expect(await statusOf(model, '8x_nvidia_h200_141gb_sxm')).toBe('available');
  });

  test('a completed upload is looked up by its ml_ id and needs what its base architecture needs', async () => {
    const { data } = await t.api.POST('/v1/models', { body: { model_name: 'hw-qwen72', model_source: 'acme/qwen2.5-72b-support' } });
    await finishUploads();
    const body = await list(data!.data.model_id);
    expect(body.data.map((h) => h.id)).toEqual((await list('Qwen/Qwen2.5-72B-Instruct')).data.map((h) => h.id));
    // Another project does not see it.
    const res = await t.http.get('/v1/hardware').query({ model: data!.data.model_id }).set('Authorization', `Bearer ${t.other.key}`);
    expectError(res, 404, { code: 'model_not_found', param: 'model' });
  });

  test('an unknown model answers 404 model_not_found', async () => {
    const res = await t.http.get('/v1/hardware').query({ model: 'acme/no-such-model' }).set('Authorization', `Bearer ${t.caller.key}`);
    expectError(res, 404, { code: 'model_not_found', param: 'model', type: 'not_found_error' });
  });

  test('a model that does not run on dedicated hardware answers 400 model_not_available', async () => {
    for (const model of ['BAAI/bge-base-en-v1.5', 'openai/whisper-large-v3', 'Salesforce/Llama-Rank-V1']) {
      const res = await t.http.get('/v1/hardware').query({ model }).set('Authorization', `Bearer ${t.caller.key}`);
      expectError(res, 400, { code: 'model_not_available', param: 'model' });
    }
    const { data } = await t.api.POST('/v1/models', {
      body: { model_name: 'hw-adapter', model_source: 'acme/support-lora', model_type: 'adapter', base_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo' },
    });
    await finishUploads();
    const res = await t.http.get('/v1/hardware').query({ model: data!.data.model_id }).set('Authorization', `Bearer ${t.caller.key}`);
    expectError(res, 400, { code: 'model_not_available', param: 'model' });
    expect(res.body.error.message).toMatch(/adapter/);
  });

  test('an empty model is no filter (the platform sets no minimum length): every configuration, without availability', async () => {
    const res = await t.http.get('/v1/hardware?model=').set('Authorization', `Bearer ${t.caller.key}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((h: any) => h.id)).toEqual(ALL);
    expect(res.body.data.every((h: any) => h.availability === undefined)).toBe(true);
  });

  test('a model id of any length is looked up, not refused by a length limit (the platform sets none)', async () => {
    const res = await t.http
      .get('/v1/hardware')
      .query({ model: `acme/${'x'.repeat(300)}` })
      .set('Authorization', `Bearer ${t.caller.key}`);
    expectError(res, 404, { code: 'model_not_found', param: 'model' });
  });

  test('the official client lists hardware, with and without a model', async () => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const all = await client.endpoints.listHardware();
    expect(all.data.map((h) => h.id)).toEqual(ALL);
    const forModel = await client.endpoints.listHardware({ model: 'deepseek-ai/DeepSeek-V3' });
    expect(forModel.data).toHaveLength(1);
    expect(forModel.data[0]!.availability?.status).toBe('available');
    await expect(client.endpoints.listHardware({ model: 'acme/none' })).rejects.toMatchObject({ status: 404 });
  });
});

describe('capacity helpers', () => {
  test('availabilityOf: a replica fits, some GPUs free, none free', () => {
    const h = { capacityGpus: 12, gpuCount: 8 };
    expect(availabilityOf(h, 0)).toBe('available');
    expect(availabilityOf(h, 4)).toBe('available');
    expect(availabilityOf(h, 8)).toBe('insufficient');
    expect(availabilityOf(h, 11)).toBe('insufficient');
    expect(availabilityOf(h, 12)).toBe('unavailable');
  });

  test('canRun: total memory covers the model; a model without a need is not deployable', () => {
    expect(canRun({ gpuMemory: 80, gpuCount: 2 }, { minGpuMemory: 160 })).toBe(true);
    expect(canRun({ gpuMemory: 80, gpuCount: 1 }, { minGpuMemory: 160 })).toBe(false);
    expect(canRun({ gpuMemory: 80, gpuCount: 8 }, { minGpuMemory: null })).toBe(false);
  });

  test('fits: counts the open reservations of the configuration', async () => {
    expect(await fits(t.services.db.prisma, '1x_nvidia_l40s_48gb_pcie', 1)).toBe(true);
    expect(await fits(t.services.db.prisma, '1x_nvidia_l40s_48gb_pcie', 2)).toBe(false);
    expect(await fits(t.services.db.prisma, 'no-such-hardware', 1)).toBe(false);
  });
});
