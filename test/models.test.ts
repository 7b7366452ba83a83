// The model catalogue and uploads of models and adapters: source validation, the adapter-only fields, the
// base-architecture rule, names, the upload job's state machine on the durable runner (including a restart and two
// servers sharing the database), the model list, and the official client.
import { readFileSync } from 'node:fs';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { newId } from '../server/core/ids.ts';
import { createLogger } from '../server/core/log.ts';
import { uploadJobMachine, uploadJobs } from '../server/modules/models/machine.ts';
import { architectureOf, parseSource } from '../server/modules/models/sources.ts';
import { planUpload } from '../server/modules/models/upload.ts';
import { startPlatform } from '../server/platform.ts';
import { transition } from '../server/runner/progress.ts';
import { H100, insertUpload, insertV1Endpoint, MODEL } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const QUEUED_MS = uploadJobMachine.timed!.Queued!.defaultMs;
const RUNNING_MS = uploadJobMachine.timed!.Running!.defaultMs;

import { usingPostgres } from './support/database.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const upload = (body: Record<string, unknown>, key = t.caller.key) => t.http.post('/v1/models').set('Authorization', `Bearer ${key}`).send(body);
const getJob = (jobId: string, key = t.caller.key) => t.http.get(`/v1/jobs/${jobId}`).set('Authorization', `Bearer ${key}`);
const listModels = async (key = t.caller.key, query: Record<string, string> = {}) => {
  const res = await t.http.get('/v1/models').query(query).set('Authorization', `Bearer ${key}`);
  expect(res.status).toBe(200);
  return res.body as Array<{
    id: string;
    type: string;
    kind: string;
    display_name?: string;
    context_length?: number;
    dimensions?: number;
    pricing?: Record<string, number>;
  }>;
};
const jobCount = async () => t.services.db.prisma.modelUploadJob.count();
const modelCount = async () => t.services.db.prisma.model.count();

let names = 0;
const fresh = (prefix = 'm') => `${prefix}-${++names}`;
/** An id of the platform's form `<prefix>-<uuid>`. */
const UUID_ID = (prefix: string) => new RegExp(`^${prefix}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`);
/** The one id form of a project's models (the requirements: model ids start `ml_`). */
const MODEL_ID = /^ml_[0-9a-z]{26}$/;

describe('GET /v1/models', () => {
  test('lists the seeded catalogue: chat, the embedding models, rerank, audio, video and base architectures', async () => {
    const models = await listModels();
    const byId = Object.fromEntries(models.map((m) => [m.id, m]));
    expect(byId['meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo']).toMatchObject({ object: 'model', type: 'chat', kind: 'chat', organization: 'Meta' });
    for (const id of ['BAAI/bge-base-en-v1.5', 'BAAI/bge-large-en-v1.5', 'intfloat/multilingual-e5-large-instruct', 'Alibaba-NLP/gte-modernbert-base']) {
      expect(byId[id]?.type, id).toBe('embedding');
    }
    expect(byId['Salesforce/Llama-Rank-v1']!.type).toBe('rerank');
    // Kinds the platform's seven types do not name: `type` is the nearest of them, `kind` says what it is.
    expect(byId['openai/whisper-large-v3']).toMatchObject({ type: 'language', kind: 'audio' });
    expect(models.filter((m) => m.kind === 'video').length).toBeGreaterThanOrEqual(2);
    for (const m of models.filter((x) => x.kind === 'video')) expect(m.type, m.id).toBe('image');
    expect(byId['meta-llama/Meta-Llama-3.1-8B-Instruct']).toMatchObject({
      type: 'chat',
      context_length: 131072,
      pricing: { base: 0, finetune: 0, hourly: 3.36, input: 0, output: 0 },
    });
  });

  test('dedicated=true: only models that dedicated hardware runs', async () => {
    const ids = (await listModels(t.caller.key, { dedicated: 'true' })).map((m) => m.id);
    expect(ids).toContain('meta-llama/Meta-Llama-3.1-8B-Instruct');
    expect(ids).toContain('deepseek-ai/DeepSeek-V3');
    expect(ids).not.toContain('BAAI/bge-base-en-v1.5');
    expect(ids).not.toContain('openai/whisper-large-v3');
    expect((await listModels(t.caller.key, { dedicated: 'false' })).length).toBeGreaterThan(ids.length);
  });

  test('dedicated must be a boolean', async () => {
    expectError(await t.http.get('/v1/models?dedicated=maybe').set('Authorization', `Bearer ${t.caller.key}`), 400, { param: 'dedicated' });
  });
});

/** Every model id an enum of the platform's contract names in a model field (`model`, `safety_model`, ...). */
function contractModelIds(node: unknown, underModelField = false, out = new Set<string>()): Set<string> {
  if (Array.isArray(node)) {
    for (const x of node) contractModelIds(x, underModelField, out);
    return out;
  }
  if (!node || typeof node !== 'object') return out;
  const n = node as Record<string, unknown>;
  // A parameter object: its schema is a model field when its name is.
  let under = underModelField;
  if (typeof n.in === 'string' && typeof n.name === 'string') under = /model/i.test(n.name);
  if (under && Array.isArray(n.enum)) for (const v of n.enum) if (typeof v === 'string' && /^[^\s/]+\/[^\s/]+$/.test(v)) out.add(v);
  for (const [k, v] of Object.entries(n)) {
    if (k === 'properties' && v && typeof v === 'object' && !Array.isArray(v)) {
      for (const [name, prop] of Object.entries(v)) contractModelIds(prop, /model/i.test(name), out);
    } else contractModelIds(v, under, out);
  }
  return out;
}

describe('the catalogue: the models the platform names', () => {
  test("every model id an enum of the platform's contract names (image, speech, rerank, completions, safety, audio, embeddings) answers in GET /v1/models", async () => {
    const contract = JSON.parse(readFileSync(new URL('../spec/reference/platform-contract.json', import.meta.url), 'utf8'));
    const ids = [...contractModelIds(contract)];
    // The contract's enums name 17 models today (three image, four speech, one rerank, four completions with the
    // safety model, one transcription, four embeddings).
    expect(ids.length).toBeGreaterThanOrEqual(17);
    expect(ids).toEqual(
      expect.arrayContaining(['Salesforce/Llama-Rank-v1', 'Meta-Llama/Llama-Guard-7b', 'hexgrad/Kokoro-82M', 'black-forest-labs/FLUX.1-schnell']),
    );
    const listed = new Set((await listModels()).map((m) => m.id));
    expect(ids.filter((id) => !listed.has(id))).toEqual([]);
  });

  test('the models of the contract and of the SDK documentation are served with their type, context length, dimensions and pricing', async () => {
    const byId = Object.fromEntries((await listModels()).map((m) => [m.id, m]));
    const price = (input: number, output: number) => ({ base: 0, finetune: 0, hourly: 0, input, output });
    const expected: Record<string, object> = {
      'togethercomputer/m2-bert-80M-8k-retrieval': { type: 'embedding', context_length: 8192, dimensions: 768, pricing: price(0.008, 0) },
      'WhereIsAI/UAE-Large-V1': { type: 'embedding', context_length: 512, dimensions: 1024, pricing: price(0.016, 0) },
      'BAAI/bge-large-en-v1.5': { type: 'embedding', dimensions: 1024 },
      'BAAI/bge-base-en-v1.5': { type: 'embedding', dimensions: 768 },
      'Salesforce/Llama-Rank-v1': { type: 'rerank', context_length: 8192, pricing: price(0.1, 0) },
      'mistralai/Mixtral-8x7B-Instruct-v0.1': { type: 'chat', context_length: 32768, pricing: price(0.6, 0.6) },
      'mistralai/Mixtral-8x7B-v0.1': { type: 'language', context_length: 32768, pricing: price(0.6, 0.6) },
      'mistralai/Mistral-7B-v0.1': { type: 'language', context_length: 8192, pricing: price(0.2, 0.2) },
      'meta-llama/Llama-2-70b-hf': { type: 'language', context_length: 4096, pricing: price(0.9, 0.9) },
      'meta-llama/Llama-2-7b-hf': { type: 'language', context_length: 4096, pricing: price(0.2, 0.2) },
      'Meta-Llama/Llama-Guard-7b': { type: 'moderation', kind: 'moderation', context_length: 4096, pricing: price(0.2, 0.2) },
      'deepseek-ai/DeepSeek-R1': { type: 'chat', context_length: 163840, pricing: price(3, 7) },
      'Qwen/Qwen3.5-9B': { type: 'chat' },
      'openai/gpt-oss-120b': { type: 'chat', context_length: 131072, pricing: price(0.15, 0.6) },
      'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference': { type: 'chat', context_length: 131072 },
      'black-forest-labs/FLUX.1-schnell': { type: 'image', kind: 'image' },
      'cartesia/sonic': { type: 'language', kind: 'audio' },
    };
    for (const [id, facts] of Object.entries(expected)) expect(byId[id], id).toMatchObject({ object: 'model', ...facts });
    // Unknown facts are left out rather than invented; prices not per token (per megapixel, per character) too.
    expect(byId['Qwen/Qwen3.5-9B']).not.toHaveProperty('context_length');
    for (const id of ['Qwen/Qwen3.5-9B', 'black-forest-labs/FLUX.1.1-pro', 'hexgrad/Kokoro-82M']) expect(byId[id], id).not.toHaveProperty('pricing');
    for (const m of Object.values(byId)) if (m.kind !== 'embedding') expect(m, m.id).not.toHaveProperty('dimensions');
  });

  test('they are accepted wherever their type is: hardware, serverless chat, adapter bases', async () => {
    const hardware = async (model: string) => {
      const res = await t.http.get('/v1/hardware').query({ model }).set('Authorization', `Bearer ${t.caller.key}`);
      expect(res.status, `${model}: ${JSON.stringify(res.body)}`).toBe(200);
      return res.body.data.map((h: { id: string }) => h.id);
    };
    expect(await hardware('deepseek-ai/DeepSeek-R1')).toEqual(['8x_nvidia_h200_141gb_sxm']);
    expect(await hardware('openai/gpt-oss-120b')).toContain('1x_nvidia_h100_80gb_sxm');
    expect(await hardware('meta-llama/Llama-2-70b-hf')).not.toContain('1x_nvidia_h100_80gb_sxm');
    expect((await listModels(t.caller.key, { dedicated: 'true' })).map((m) => m.id)).toEqual(
      expect.arrayContaining(['deepseek-ai/DeepSeek-R1', 'mistralai/Mixtral-8x7B-Instruct-v0.1']),
    );
    for (const model of [
      'openai/gpt-oss-120b',
      'Qwen/Qwen3.5-9B',
      'deepseek-ai/DeepSeek-R1',
      'mistralai/Mixtral-8x7B-Instruct-v0.1',
      'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference',
    ]) {
      const res = await t.http
        .post('/v1/chat/completions')
        .set('Authorization', `Bearer ${t.caller.key}`)
        .send({ model, messages: [{ role: 'user', content: 'hi' }] });
      expect(res.status, `${model}: ${JSON.stringify(res.body)}`).toBe(200);
    }
    const adapter = await upload({
      model_name: fresh('ref-lora'),
      model_source: 'acme/support-lora',
      model_type: 'adapter',
      base_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference',
    });
    expect(adapter.status, JSON.stringify(adapter.body)).toBe(200);
    const row = await t.services.db.prisma.model.findUniqueOrThrow({ where: { id: adapter.body.data.model_id } });
    expect(row).toMatchObject({ baseModelId: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference', architecture: 'llama-3.1-8b' });
  });

  test('Salesforce/Llama-Rank-V1, the earlier spelling, is an alias: it answers as Salesforce/Llama-Rank-v1 and is not listed twice', async () => {
    const ids = (await listModels()).map((m) => m.id);
    expect(ids.filter((id) => id.toLowerCase() === 'salesforce/llama-rank-v1')).toEqual(['Salesforce/Llama-Rank-v1']);
    const answers = [];
    for (const model of ['Salesforce/Llama-Rank-v1', 'Salesforce/Llama-Rank-V1']) {
      const res = await t.http.get('/v1/hardware').query({ model }).set('Authorization', `Bearer ${t.caller.key}`);
      answers.push([res.status, res.body.error?.code]);
    }
    // A rerank model runs serverless only: both spellings say so (the alias is not an unknown model).
    expect(answers).toEqual([
      [400, 'model_not_available'],
      [400, 'model_not_available'],
    ]);
    const projectId = t.caller.identity.projectId;
    for (const model of ['Salesforce/Llama-Rank-V1', `models/Salesforce/Llama-Rank-V1`]) {
      const res = await t.http
        .post(`/v2/projects/${projectId}/deploy`)
        .set('Authorization', `Bearer ${t.caller.key}`)
        .send({ endpointName: fresh('rank'), model, config: 'cr_llama_3_1_8b_h100', minReplicas: 1, maxReplicas: 1 });
      expectError(res, 400, { code: 'model_not_deployable', param: 'model' });
    }
  });
});

describe('POST /v1/models: a full model from the hub', () => {
  test('answers the job, which goes Queued -> Running -> Complete on the runner; then the model is listed', async () => {
    const name = fresh('llama-support');
    const res = await upload({
      model_name: name,
      model_source: 'acme/Meta-Llama-3.1-8B-Instruct-support',
      description: 'Support bot',
      hf_token: 'hf_secret_token',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: { job_id: expect.stringMatching(UUID_ID('job')), model_name: name, model_id: expect.stringMatching(MODEL_ID), model_source: 'huggingface' },
      message: expect.any(String),
    });
    const { job_id: jobId, model_id: modelId } = res.body.data;

    const queued = (await getJob(jobId)).body;
    expect(queued).toEqual({
      type: 'model_upload',
      job_id: jobId,
      status: 'Queued',
      status_updates: [{ status: 'Queued', message: expect.any(String), timestamp: expect.any(String) }],
      args: { description: 'Support bot', modelName: name, modelSource: 'acme/Meta-Llama-3.1-8B-Instruct-support' },
      created_at: new Date(t.clock.now()).toISOString(),
      updated_at: new Date(t.clock.now()).toISOString(),
    });
    expect(JSON.stringify(queued)).not.toContain('hf_secret_token');
    expect(t.logs.join('')).not.toContain('hf_secret_token');
    expect((await listModels()).map((m) => m.id)).not.toContain(modelId);

    await t.advance(1_999);
    expect((await getJob(jobId)).body.status).toBe('Queued');
    await t.advance(1);
    const running = (await getJob(jobId)).body;
    expect(running.status).toBe('Running');
    expect(running.status_updates.map((u: any) => u.status)).toEqual(['Queued', 'Running']);
    expect((await listModels()).map((m) => m.id)).not.toContain(modelId);

    await t.advance(RUNNING_MS);
    const done = (await getJob(jobId)).body;
    expect(done.status).toBe('Complete');
    expect(done.status_updates.map((u: any) => u.status)).toEqual(['Queued', 'Running', 'Complete']);
    expect(done.updated_at).toBe(new Date(t.clock.now()).toISOString());

    const listed = (await listModels()).find((m) => m.id === modelId);
    expect(listed).toEqual({
      id: modelId,
      object: 'model',
      created: expect.any(Number),
      type: 'chat',
      kind: 'chat',
      display_name: name,
      organization: 'Default Organization',
      context_length: 131072,
    });
    expect((await listModels(t.caller.key, { dedicated: 'true' })).map((m) => m.id)).toContain(modelId);
    // The upload is the project's own.
    expect((await listModels(t.other.key)).map((m) => m.id)).not.toContain(modelId);
    expectError(await getJob(jobId, t.other.key), 404, { code: 'not_found', param: 'jobId' });
    // The model row carries what the base architecture needs on dedicated hardware.
    const row = await t.services.db.prisma.model.findUniqueOrThrow({ where: { id: modelId } });
    expect(row).toMatchObject({ architecture: 'llama-3.1-8b', baseModelId: 'meta-llama/Meta-Llama-3.1-8B-Instruct', minGpuMemory: 24, status: 'ready' });
    expect(JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain('hf_secret_token');
  });

  test('a source that cannot be resolved fails the job deterministically; the model is never listed and the name is free again', async () => {
    const name = fresh('ghost');
    const res = await upload({ model_name: name, model_source: 'acme/llama-3.1-8b-does-not-exist' });
    expect(res.status).toBe(200);
    const { job_id: jobId, model_id: modelId } = res.body.data;
    await t.advance(QUEUED_MS);
    await t.advance(RUNNING_MS);
    const job = (await getJob(jobId)).body;
    expect(job.status).toBe('Failed');
    expect(job.status_updates.map((u: any) => u.status)).toEqual(['Queued', 'Running', 'Failed']);
    expect(job.status_updates[2].message).toMatch(/Repository not found/);
    expect((await listModels()).map((m) => m.id)).not.toContain(modelId);
    expect(await t.services.db.prisma.model.findUnique({ where: { id: modelId } })).toBeNull();
    // More runner time changes nothing.
    await t.advance(60_000);
    expect((await getJob(jobId)).body.status).toBe('Failed');
    expect((await upload({ model_name: name, model_source: 'acme/llama-3.1-8b-exists' })).status).toBe(200);
  });

  test('object-storage sources fail as "Object not found"', async () => {
    const res = await upload({ model_name: fresh(), model_source: 's3://acme-models/does-not-exist/qwen2.5-7b-ft' });
    await t.advance(QUEUED_MS);
    await t.advance(RUNNING_MS);
    const job = (await getJob(res.body.data.job_id)).body;
    expect(job.status).toBe('Failed');
    expect(job.status_updates.at(-1).message).toMatch(/Object not found/);
  });

  test.each([
    ['acme/Qwen2.5-7B-Instruct-ft', 'huggingface'],
    ['https://huggingface.co/acme/Qwen2.5-7B-Instruct-ft', 'huggingface'],
    ['s3://acme-models/weights/qwen2.5-7b-ft', 's3'],
    ['https://acme-models.s3.us-east-1.amazonaws.com/weights/qwen2.5-7b-ft.tar.gz', 's3'],
    ['gs://acme-models/weights/qwen2.5_7b_ft', 'gcs'],
    ['https://files.example.org/exports/Qwen2.5-7B-ft.tar.gz?sig=abc', 'url'],
  ])('source %s is of kind %s', async (model_source, kind) => {
    const res = await upload({ model_name: fresh(), model_source });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.model_source).toBe(kind);
  });

  test.each([
    'not a repo',
    'acme',
    'acme/models/qwen2.5-7b',
    'acme/-qwen2.5-7b',
    'acme--x/qwen2.5-7b',
    'http://example.org/qwen2.5-7b',
    'ftp://example.org/qwen2.5-7b',
    's3://Bad_Bucket/qwen2.5-7b',
    's3://acme-models',
    'https://example.org/',
    'https://huggingface.co/acme',
    'https://user:pw@example.org/qwen2.5-7b',
  ])('source %j is refused with 400 invalid_model_source and nothing is stored', async (model_source) => {
    const before = [await jobCount(), await modelCount()];
    expectError(await upload({ model_name: fresh(), model_source }), 400, { code: 'invalid_model_source', param: 'model_source' });
    expect([await jobCount(), await modelCount()]).toEqual(before);
  });

  test('hf_token applies to hub sources only', async () => {
    expectError(await upload({ model_name: fresh(), model_source: 's3://acme-models/qwen2.5-7b', hf_token: 'hf_x' }), 400, {
      code: 'field_not_applicable',
      param: 'hf_token',
    });
  });

  test('a v1 upload of any hub repository is accepted: one that names no served architecture completes, is listed, and nothing here runs it', async () => {
    const name = fresh('acc');
    const res = await upload({ model_name: name, model_source: 'acc-org/acc-model' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const { job_id: jobId, model_id: modelId } = res.body.data;
    await t.advance(QUEUED_MS);
    await t.advance(RUNNING_MS);
    expect((await getJob(jobId)).body.status).toBe('Complete');
    // Listed as a model of language (nothing more is known offline), without a context length or a price.
    const listed = (await listModels()).find((m) => m.id === modelId);
    expect(listed).toEqual({
      id: modelId,
      object: 'model',
      created: expect.any(Number),
      type: 'language',
      kind: 'language',
      display_name: name,
      organization: 'Default Organization',
    });
    const row = await t.services.db.prisma.model.findUniqueOrThrow({ where: { id: modelId } });
    expect(row).toMatchObject({ architecture: null, baseModelId: null, minGpuMemory: null, status: 'ready' });
    // Not deployable: not in the dedicated list, no hardware runs it, and v2 deploys only served base architectures.
    expect((await listModels(t.caller.key, { dedicated: 'true' })).map((m) => m.id)).not.toContain(modelId);
    const hw = await t.http.get('/v1/hardware').query({ model: modelId }).set('Authorization', `Bearer ${t.caller.key}`);
    expectError(hw, 400, { code: 'model_not_available', param: 'model' });
    expect(hw.body.error.message).toMatch(/base architecture/);
    const projectId = t.caller.identity.projectId;
    const deploy = await t.http
      .post(`/v2/projects/${projectId}/deploy`)
      .set('Authorization', `Bearer ${t.caller.key}`)
      .send({ endpointName: fresh('acc-ep'), model: modelId, config: 'cr_llama_3_1_8b_h100', minReplicas: 1, maxReplicas: 1 });
    expectError(deploy, 400, { code: 'unsupported_architecture', param: 'model' });
    // Object storage and other addresses are accepted too, whatever they are named.
    for (const model_source of ['s3://acc-bucket/exports/acc-model', 'gs://acc-bucket/acc-model', 'https://files.example.org/acc-model.tar.gz']) {
      expect((await upload({ model_name: fresh('acc'), model_source })).status, model_source).toBe(200);
    }
  });

  test('the base-architecture rule is kept for v2 model creation (requireServedArchitecture), not applied to v1 uploads', async () => {
    const body = { model_name: 'x', model_source: 'acme/gpt-j-6b-support' };
    await expect(planUpload(t.services.db.prisma, body, { requireServedArchitecture: true })).rejects.toMatchObject({
      status: 400,
      code: 'unsupported_base_architecture',
      param: 'model_source',
      message: expect.stringContaining('llama-3.1-8b'),
    });
    expect(await planUpload(t.services.db.prisma, body, { requireServedArchitecture: false })).toMatchObject({
      architecture: null,
      type: 'language',
      minGpuMemory: null,
    });
    const served = await planUpload(t.services.db.prisma, { ...body, model_source: 'acme/Qwen2.5-7B-Instruct-ft' }, { requireServedArchitecture: true });
    expect(served).toMatchObject({ architecture: 'qwen2.5-7b', baseModelId: 'Qwen/Qwen2.5-7B-Instruct', minGpuMemory: 24 });
    // Of two served models of one architecture, the one it is named after is the base (V3, not R1).
    const deepseek = await planUpload(t.services.db.prisma, { ...body, model_source: 'acme/DeepSeek-V3-ft' }, { requireServedArchitecture: true });
    expect(deepseek).toMatchObject({ architecture: 'deepseek-v3', baseModelId: 'deepseek-ai/DeepSeek-V3', contextLength: 131072 });
  });

  test('architectureOf reads the last segment and prefers the longest match', () => {
    const arch = ['llama-3.1-8b', 'qwen2.5-7b', 'qwen2.5-72b'];
    expect(architectureOf(parseSource('unsloth/Qwen2.5-72B-Instruct') as any, arch)).toBe('qwen2.5-72b');
    expect(architectureOf(parseSource('s3://b-1/qwen2.5-7b/other') as any, arch)).toBeUndefined();
    expect(architectureOf(parseSource('gs://b-1/x/Meta_Llama_3.1_8B') as any, arch)).toBe('llama-3.1-8b');
  });

  test('base_model and lora_model are unused for a full model: accepted and ignored', async () => {
    for (const extra of [
      { base_model: 'Qwen/Qwen2.5-7B-Instruct' },
      { lora_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct' },
      { base_model: 'acme/not-a-model', lora_model: 'acme/nothing' },
    ]) {
      for (const model_type of [undefined, 'model']) {
        const res = await upload({ model_name: fresh(), model_source: 'acme/Qwen2.5-7B-ft', ...(model_type ? { model_type } : {}), ...extra });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        const row = await t.services.db.prisma.model.findUniqueOrThrow({ where: { id: res.body.data.model_id } });
        // What the source names decides the model; the adapter-only fields are not stored.
        expect(row).toMatchObject({ modelType: 'model', architecture: 'qwen2.5-7b', baseModelId: 'Qwen/Qwen2.5-7B-Instruct', loraModel: null });
      }
    }
  });

  test('model names are unique in the project (409), not across projects', async () => {
    const name = fresh('dup');
    expect((await upload({ model_name: name, model_source: 'acme/Qwen2.5-7B-a' })).status).toBe(200);
    const before = [await jobCount(), await modelCount()];
    expectError(await upload({ model_name: name, model_source: 'acme/Qwen2.5-7B-b' }), 409, { code: 'model_name_taken', param: 'model_name' });
    expect([await jobCount(), await modelCount()]).toEqual(before);
    expect((await upload({ model_name: name, model_source: 'acme/Qwen2.5-7B-b' }, t.other.key)).status).toBe(200);
  });

  test('model_name is any string of 1 to 256 characters but a blank one: `/`, `:` and spaces allowed', async () => {
    // At the bound, of 4-byte characters: the unique index holds the name's hash, whatever the name's size.
    const long = '\u{1F600}'.repeat(256);
    for (const model_name of ['acme/my-model', 'username/my-adapter-abc123', 'has space', 'a:b', long]) {
      const res = await upload({ model_name, model_source: 'acme/Qwen2.5-7B-a' });
      expect(res.status, model_name.slice(0, 40)).toBe(200);
      expect(res.body.data.model_name).toBe(model_name);
    }
    expectError(await upload({ model_name: long, model_source: 'acme/Qwen2.5-7B-b' }), 409, { code: 'model_name_taken', param: 'model_name' });
    const before = [await jobCount(), await modelCount()];
    for (const model_name of ['', '   '])
      expectError(await upload({ model_name, model_source: 'acme/Qwen2.5-7B-a' }), 400, { code: 'invalid_model_name', param: 'model_name' });
    expectError(await upload({ model_name: `${long}x`, model_source: 'acme/Qwen2.5-7B-a' }), 400, { code: 'maxLength', param: 'model_name' });
    expect([await jobCount(), await modelCount()]).toEqual(before);
  });
});

describe('POST /v1/models: adapters', () => {
  test('an adapter on a serverless LoRA pool completes and is listed with its base type', async () => {
    const name = fresh('support-lora');
    const res = await upload({
      model_name: name,
      model_source: 'acme/support-lora',
      model_type: 'adapter',
      base_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo',
    });
    expect(res.status).toBe(200);
    expect((await getJob(res.body.data.job_id)).body.type).toBe('adapter_upload');
    await t.advance(QUEUED_MS);
    await t.advance(RUNNING_MS);
    expect((await getJob(res.body.data.job_id)).body.status).toBe('Complete');
    const listed = (await listModels()).find((m) => m.id === res.body.data.model_id);
    expect(listed).toMatchObject({ type: 'chat', display_name: name });
    // An adapter is not deployable on its own.
    expect((await listModels(t.caller.key, { dedicated: 'true' })).map((m) => m.id)).not.toContain(res.body.data.model_id);
    const row = await t.services.db.prisma.model.findUniqueOrThrow({ where: { id: res.body.data.model_id } });
    expect(row).toMatchObject({
      modelType: 'adapter',
      baseModelId: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo',
      loraModel: null,
      architecture: 'llama-3.1-8b',
      minGpuMemory: null,
    });
  });

  test('an adapter on a dedicated pool names lora_model; both together must be one architecture', async () => {
    const dedicated = await upload({
      model_name: fresh(),
      model_source: 's3://acme-models/lora/x',
      model_type: 'adapter',
      lora_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct',
    });
    expect(dedicated.status).toBe(200);
    const row = await t.services.db.prisma.model.findUniqueOrThrow({ where: { id: dedicated.body.data.model_id } });
    expect(row).toMatchObject({ baseModelId: 'meta-llama/Meta-Llama-3.1-8B-Instruct', loraModel: 'meta-llama/Meta-Llama-3.1-8B-Instruct' });

    const both = await upload({
      model_name: fresh(),
      model_source: 'acme/lora-both',
      model_type: 'adapter',
      base_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo',
      lora_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct',
    });
    expect(both.status).toBe(200);
    const mismatch = await upload({
      model_name: fresh(),
      model_source: 'acme/lora-both',
      model_type: 'adapter',
      base_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo',
      lora_model: 'Qwen/Qwen2.5-7B-Instruct',
    });
    expectError(mismatch, 400, { code: 'base_model_mismatch', param: 'lora_model' });
  });

  test('an adapter must name a served base', async () => {
    const before = [await jobCount(), await modelCount()];
    const adapter = (extra: Record<string, string>) => upload({ model_name: fresh(), model_source: 'acme/lora', model_type: 'adapter', ...extra });
    expectError(await adapter({}), 400, { code: 'base_model_required', param: 'base_model' });
    for (const base_model of ['acme/unknown', 'BAAI/bge-base-en-v1.5', 'deepseek-ai/DeepSeek-V3', 'Qwen/Qwen2.5-7B-Instruct']) {
      // Unknown, not a chat model, serverless without LoRA, not serverless.
      expectError(await adapter({ base_model }), 400, { code: 'base_model_not_served', param: 'base_model' });
    }
    for (const lora_model of ['acme/unknown', 'BAAI/bge-base-en-v1.5']) {
      expectError(await adapter({ lora_model }), 400, { code: 'base_model_not_served', param: 'lora_model' });
    }
    // Another project's upload is not a served base either.
    const other = await upload({ model_name: fresh(), model_source: 'acme/Qwen2.5-7B-x' }, t.other.key);
    await t.advance(QUEUED_MS);
    await t.advance(RUNNING_MS);
    expectError(await adapter({ lora_model: other.body.data.model_id }), 400, { code: 'base_model_not_served', param: 'lora_model' });
    expect([await jobCount(), await modelCount()]).toEqual(before.map((n) => n + 1));
  });
});

describe('identifiers', () => {
  test("models have one id form, `ml_...` (the requirements'), read wherever an id is; jobs made before the `job-<uuid>` format keep their `job_...` ids", async () => {
    const projectId = t.caller.identity.projectId;
    const auth = { Authorization: `Bearer ${t.caller.key}` };
    const now = t.clock.now();
    const [model, adapter, job] = [newId('ml', now), newId('ml', now), newId('job', now)];
    await t.services.db.write(async (tx) => {
      const row = {
        projectId,
        type: 'chat',
        architecture: 'llama-3.1-8b',
        baseModelId: MODEL,
        source: 'acme/x',
        sourceKind: 'huggingface',
        status: 'ready',
        createdAt: BigInt(now),
      };
      await tx.model.create({ data: { ...row, id: model, name: fresh('old-model'), modelType: 'model', minGpuMemory: 24 } });
      await tx.model.create({ data: { ...row, id: adapter, name: fresh('old-adapter'), modelType: 'adapter' } });
      const update = JSON.stringify([{ status: 'Complete', message: 'done', timestamp: new Date(now).toISOString() }]);
      await tx.modelUploadJob.create({
        data: {
          id: job,
          projectId,
          modelId: model,
          type: 'model_upload',
          status: 'Complete',
          statusUpdates: update,
          args: JSON.stringify({ modelName: 'x', modelSource: 'acme/x' }),
          createdAt: BigInt(now),
          updatedAt: BigInt(now),
        },
      });
    });
    expect((await getJob(job)).body).toMatchObject({ job_id: job, status: 'Complete' });
    expect((await listModels()).map((m) => m.id)).toContain(model);
    const hw = await t.http.get('/v1/hardware').query({ model }).set(auth);
    expect(hw.status).toBe(200);

    // v2: deployed by id or resource name, and named back as the project's model; a new upload has the same form.
    const fresher = await insertUpload(t, projectId);
    expect(fresher.id).toMatch(MODEL_ID);
    // The form the platform's examples show is not a model id here: nothing answers to it.
    expectError(await t.http.get('/v1/hardware').query({ model: 'model-3e0a7c9d-5b2f-4c61-9d8e-7f1a2b3c4d5e' }).set(auth), 404, { param: 'model' });
    const e = await t.http
      .post(`/v2/projects/${projectId}/endpoints`)
      .set(auth)
      .send({ name: fresh('ids') });
    for (const [ref, id] of [
      [model, model],
      [`projects/${projectId}/models/${model}`, model],
      [fresher.id, fresher.id],
    ]) {
      const d = await t.http
        .post(`/v2/projects/${projectId}/endpoints/${e.body.id}/deployments`)
        .set(auth)
        .send({ name: fresh('d'), model: ref, config: H100, autoscaling: { minReplicas: 0, maxReplicas: 1 } });
      expect(d.status, JSON.stringify(d.body)).toBe(200);
      expect(d.body).toMatchObject({ modelId: id, model: `projects/${projectId}/models/${id}` });
    }

    // v1 adapters: bound by the old id, named by the adapter's name.
    const ep = await insertV1Endpoint(t, projectId);
    const name = `default/${ep.name}`;
    const bound = await t.http
      .post(`/v1/endpoints/${ep.id}/adapters`)
      .set(auth)
      .send({ model_id: `${name}:${adapter}` });
    expect(bound.status, JSON.stringify(bound.body)).toBe(200);
    expect(bound.body.model_id).toMatch(new RegExp(`^${name}:old-adapter-`));
  });
});

describe('GET /v1/jobs', () => {
  test("lists the project's upload jobs, newest first, and no other project's", async () => {
    const c = await t.newCaller();
    const a = await upload({ model_name: 'first', model_source: 'acme/Qwen2.5-7B-1' }, c.key);
    t.clock.advance(1000);
    const b = await upload({ model_name: 'second', model_source: 'acme/Qwen2.5-7B-2' }, c.key);
    const res = await t.http.get('/v1/jobs').set('Authorization', `Bearer ${c.key}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((j: any) => j.job_id)).toEqual([b.body.data.job_id, a.body.data.job_id]);
    const mine = await t.http.get('/v1/jobs').set('Authorization', `Bearer ${t.caller.key}`);
    expect(mine.body.data.map((j: any) => j.job_id)).not.toContain(a.body.data.job_id);
  });

  test('an absent job answers 404', async () => {
    expectError(await getJob('job_nope'), 404, { code: 'not_found', param: 'jobId' });
  });
});

describe('the upload job state machine', () => {
  /** A job row in `status` with its pending model, written directly. */
  const jobIn = async (status: string) => {
    const now = t.clock.now();
    const modelId = newId('ml', now);
    return t.services.db.write(async (tx) => {
      await tx.model.create({
        data: {
          id: modelId,
          projectId: t.caller.identity.projectId,
          name: newId('sm', now),
          type: 'chat',
          status: status === 'Complete' ? 'ready' : 'pending',
          createdAt: 0n,
        },
      });
      return tx.modelUploadJob.create({
        data: {
          id: newId('job', now),
          projectId: t.caller.identity.projectId,
          modelId,
          type: 'model_upload',
          status,
          args: JSON.stringify({ modelName: 'x', modelSource: 'acme/x' }),
          createdAt: BigInt(now),
          updatedAt: BigInt(now),
        },
      });
    });
  };

  for (const from of uploadJobMachine.states) {
    for (const event of uploadJobMachine.events) {
      const allowed = uploadJobMachine.can(from, event);
      const to = allowed ? uploadJobMachine.next(from, event) : undefined;
      test(`${from} --${event}--> ${to ?? 'refused'}`, async () => {
        const job = await jobIn(from);
        const attempt = t.services.db.write((tx) => transition(tx, t.services, uploadJobs, job, event, { note: 'test' }));
        if (!allowed) {
          await expect(attempt).rejects.toMatchObject({ status: 409, code: 'invalid_state_transition', param: null });
          expect((await t.services.db.prisma.modelUploadJob.findUniqueOrThrow({ where: { id: job.id } })).status).toBe(from);
          return;
        }
        const moved = await attempt;
        expect(moved.status).toBe(to);
        expect(JSON.parse(moved.statusUpdates).at(-1)).toMatchObject({ status: to, message: 'test' });
        const model = await t.services.db.prisma.model.findUnique({ where: { id: job.modelId } });
        if (to === 'Complete') expect(model?.status).toBe('ready');
        if (to === 'Failed') expect(model).toBeNull();
        if (to === 'Running') expect(model?.status).toBe('pending');
      });
    }
  }

  test('a job the runner cannot carry out is retried, then given up as Failed with its model removed', async () => {
    const res = await upload({ model_name: fresh('broken'), model_source: 'acme/Qwen2.5-7B-broken' });
    const { job_id: jobId, model_id: modelId } = res.body.data;
    // Corrupt what the job reads, as only a server fault could.
    await t.services.db.write((tx) =>
      tx.modelUploadJob.update({ where: { id: jobId }, data: { args: JSON.stringify({ modelName: 'x', modelSource: 'no source' }) } }),
    );
    await t.advance(QUEUED_MS);
    expect((await getJob(jobId)).body.status).toBe('Queued');
    for (let i = 0; i < t.services.config.runner.maxFailures; i++) await t.advance(60_000);
    const job = (await getJob(jobId)).body;
    expect(job.status).toBe('Failed');
    expect(job.status_updates.map((u: any) => u.status)).toEqual(['Queued', 'Failed']);
    expect(job.status_updates[1].message).not.toMatch(/unreadable/);
    expect(await t.services.db.prisma.model.findUnique({ where: { id: modelId } })).toBeNull();
  });

  test('a stale job (moved meanwhile) is refused', async () => {
    const job = await jobIn('Queued');
    await t.services.db.write((tx) => transition(tx, t.services, uploadJobs, job, 'start', { note: 'first' }));
    await expect(t.services.db.write((tx) => transition(tx, t.services, uploadJobs, job, 'start', { note: 'again' }))).rejects.toMatchObject({ status: 409 });
  });
});

describe('the official together-ai client', () => {
  test('uploads, polls the job and lists models', async () => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const name = fresh('sdk');
    const res = await client.models.upload({ model_name: name, model_source: 'unsloth/Qwen2.5-72B-Instruct', description: 'via the SDK' });
    expect(res.data.model_name).toBe(name);
    expect(res.data.model_source).toBe('huggingface');
    expect((await client.models.uploads.status(res.data.job_id)).status).toBe('Queued');
    await t.advance(QUEUED_MS);
    await t.advance(RUNNING_MS);
    const status = await client.models.uploads.status(res.data.job_id);
    expect(status.status).toBe('Complete');
    expect(status.args).toEqual({ description: 'via the SDK', modelName: name, modelSource: 'unsloth/Qwen2.5-72B-Instruct' });
    const models = await client.models.list();
    expect(models.find((m) => m.id === res.data.model_id)).toMatchObject({ display_name: name, type: 'chat' });
    const dedicated = await client.models.list({ dedicated: true });
    expect(dedicated.some((m) => m.id === 'BAAI/bge-base-en-v1.5')).toBe(false);
    // A taken name is final: the client (which retries 409 by default) is told not to retry.
    const retrying = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1` });
    const seen = () => t.logs.filter((l) => l.includes('"operationId":"uploadModel"') && l.includes('"status":409')).length;
    const before = seen();
    await expect(retrying.models.upload({ model_name: name, model_source: 'unsloth/Qwen2.5-72B-Instruct' })).rejects.toMatchObject({
      status: 409,
      error: { error: { code: 'model_name_taken', param: 'model_name' } },
    });
    expect(seen() - before).toBe(1);
    await expect(client.models.uploads.status('job_absent')).rejects.toMatchObject({ status: 404 });
  });
});

describe('durability', () => {
  test('an upload survives a restart: a new server on the same database finishes the job', async () => {
    const first = await startTestPlatform();
    try {
      const up = await first.http
        .post('/v1/models')
        .set('Authorization', `Bearer ${first.caller.key}`)
        .send({ model_name: 'restart', model_source: 'acme/Mistral-7B-Instruct-v0.3-ft' });
      const jobId = up.body.data.job_id;
      await first.advance(2_000);
      expect((await first.http.get(`/v1/jobs/${jobId}`).set('Authorization', `Bearer ${first.caller.key}`)).body.status).toBe('Running');
      await first.platform.close();

      const second = await startPlatform(first.services.config, { clock: first.clock, log: createLogger('silent') });
      try {
        expect(second.firstKey).toBeNull();
        first.clock.advance(10_000);
        await second.services.runner.drain();
        const job = await second.services.db.prisma.modelUploadJob.findUniqueOrThrow({ where: { id: jobId } });
        expect(job.status).toBe('Complete');
        expect(JSON.parse(job.statusUpdates).map((u: any) => u.status)).toEqual(['Queued', 'Running', 'Complete']);
      } finally {
        await second.close();
      }
    } finally {
      await first.close();
    }
  });

  test('two servers sharing the database advance each job exactly once', async () => {
    const one = await startTestPlatform();
    const two = await startPlatform(one.services.config, { clock: one.clock, log: createLogger('silent') });
    try {
      const jobIds: string[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await one.http
          .post('/v1/models')
          .set('Authorization', `Bearer ${one.caller.key}`)
          .send({ model_name: `pair-${i}`, model_source: `acme/Qwen2.5-7B-${i}` });
        jobIds.push(res.body.data.job_id);
      }
      for (const step of [2_000, 10_000]) {
        one.clock.advance(step);
        // PostgreSQL: both claim at once (SKIP LOCKED). SQLite's synchronous driver cannot hold two writers in one
        // process, so there the servers take turns; each item still runs once.
        if (usingPostgres) await Promise.all([one.services.runner.drain(), two.services.runner.drain()]);
        else for (const runner of [two.services.runner, one.services.runner]) await runner.drain();
      }
      for (const id of jobIds) {
        const job = await two.services.db.prisma.modelUploadJob.findUniqueOrThrow({ where: { id } });
        expect(JSON.parse(job.statusUpdates).map((u: any) => u.status)).toEqual(['Queued', 'Running', 'Complete']);
      }
    } finally {
      await two.close();
      await one.close();
    }
  });
});
