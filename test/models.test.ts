// The model catalogue and uploads of models and adapters: source validation, the adapter-only fields, the
// base-architecture rule, names, the upload job's state machine on the durable runner (including a restart and two
// servers sharing the database), the model list, and the official client.
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startPlatform } from '../server/platform.ts';
import { moveJob, uploadJobMachine } from '../server/modules/models/machine.ts';
import { architectureOf, parseSource } from '../server/modules/models/sources.ts';
import { createLogger } from '../server/core/log.ts';
import { newId } from '../server/core/ids.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';
import { expectError } from './support/expect.ts';

const QUEUED_MS = uploadJobMachine.timed!.Queued!.defaultMs;
const RUNNING_MS = uploadJobMachine.timed!.Running!.defaultMs;
import { usingPostgres } from './support/database.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const upload = (body: Record<string, unknown>, key = t.caller.key) =>
  t.http.post('/v1/models').set('Authorization', `Bearer ${key}`).send(body);
const getJob = (jobId: string, key = t.caller.key) => t.http.get(`/v1/jobs/${jobId}`).set('Authorization', `Bearer ${key}`);
const listModels = async (key = t.caller.key, query: Record<string, string> = {}) => {
  const res = await t.http.get('/v1/models').query(query).set('Authorization', `Bearer ${key}`);
  expect(res.status).toBe(200);
  return res.body as Array<{ id: string; type: string; display_name?: string }>;
};
const jobCount = async () => t.services.db.prisma.modelUploadJob.count();
const modelCount = async () => t.services.db.prisma.model.count();

let names = 0;
const fresh = (prefix = 'm') => `${prefix}-${++names}`;

describe('GET /v1/models', () => {
  test('lists the seeded catalogue: chat, the four embedding models, rerank, audio, video and base architectures', async () => {
    const models = await listModels();
    const byId = Object.fromEntries(models.map((m) => [m.id, m]));
    expect(byId['meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo']).toMatchObject({ object: 'model', type: 'chat', organization: 'Meta' });
    for (const id of ['BAAI/bge-base-en-v1.5', 'BAAI/bge-large-en-v1.5', 'intfloat/multilingual-e5-large-instruct', 'Alibaba-NLP/gte-modernbert-base']) {
      expect(byId[id]?.type, id).toBe('embedding');
    }
    expect(byId['Salesforce/Llama-Rank-V1']!.type).toBe('rerank');
    expect(byId['openai/whisper-large-v3']!.type).toBe('audio');
    expect(models.filter((m) => m.type === 'video').length).toBeGreaterThanOrEqual(2);
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

describe('POST /v1/models: a full model from the hub', () => {
  test('answers the job, which goes Queued -> Running -> Complete on the runner; then the model is listed', async () => {
    const name = fresh('llama-support');
    const res = await upload({ model_name: name, model_source: 'acme/Meta-Llama-3.1-8B-Instruct-support', description: 'Support bot', hf_token: 'hf_secret_token' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: { job_id: expect.stringMatching(/^job_/), model_name: name, model_id: expect.stringMatching(/^ml_/), model_source: 'huggingface' },
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

  test('a full model must fine-tune a served base architecture', async () => {
    const before = [await jobCount(), await modelCount()];
    const res = await upload({ model_name: fresh(), model_source: 'acme/gpt-j-6b-support' });
    expectError(res, 400, { code: 'unsupported_base_architecture', param: 'model_source' });
    expect(res.body.error.message).toContain('llama-3.1-8b');
    expect([await jobCount(), await modelCount()]).toEqual(before);
  });

  test('architectureOf reads the last segment and prefers the longest match', () => {
    const arch = ['llama-3.1-8b', 'qwen2.5-7b', 'qwen2.5-72b'];
    expect(architectureOf(parseSource('unsloth/Qwen2.5-72B-Instruct') as any, arch)).toBe('qwen2.5-72b');
    expect(architectureOf(parseSource('s3://b-1/qwen2.5-7b/other') as any, arch)).toBeUndefined();
    expect(architectureOf(parseSource('gs://b-1/x/Meta_Llama_3.1_8B') as any, arch)).toBe('llama-3.1-8b');
  });

  test('base_model and lora_model apply to adapters only: a model upload naming either is refused', async () => {
    const before = [await jobCount(), await modelCount()];
    for (const field of ['base_model', 'lora_model']) {
      const res = await upload({ model_name: fresh(), model_source: 'acme/Qwen2.5-7B-ft', [field]: 'Qwen/Qwen2.5-7B-Instruct' });
      expectError(res, 400, { code: 'field_not_applicable', param: field });
      const explicit = await upload({ model_name: fresh(), model_source: 'acme/Qwen2.5-7B-ft', model_type: 'model', [field]: 'Qwen/Qwen2.5-7B-Instruct' });
      expectError(explicit, 400, { code: 'field_not_applicable', param: field });
    }
    expect([await jobCount(), await modelCount()]).toEqual(before);
  });

  test('model names are unique in the project (409), not across projects', async () => {
    const name = fresh('dup');
    expect((await upload({ model_name: name, model_source: 'acme/Qwen2.5-7B-a' })).status).toBe(200);
    const before = [await jobCount(), await modelCount()];
    expectError(await upload({ model_name: name, model_source: 'acme/Qwen2.5-7B-b' }), 409, { code: 'model_name_taken', param: 'model_name' });
    expect([await jobCount(), await modelCount()]).toEqual(before);
    expect((await upload({ model_name: name, model_source: 'acme/Qwen2.5-7B-b' }, t.other.key)).status).toBe(200);
  });

  test('model_name follows the contract', async () => {
    expectError(await upload({ model_name: 'has space', model_source: 'acme/Qwen2.5-7B-a' }), 400, { param: 'model_name' });
    expectError(await upload({ model_name: 'a:b', model_source: 'acme/Qwen2.5-7B-a' }), 400, { param: 'model_name' });
  });
});

describe('POST /v1/models: adapters', () => {
  test('an adapter on a serverless LoRA pool completes and is listed with its base type', async () => {
    const name = fresh('support-lora');
    const res = await upload({ model_name: name, model_source: 'acme/support-lora', model_type: 'adapter', base_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo' });
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
    expect(row).toMatchObject({ modelType: 'adapter', baseModelId: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo', loraModel: null, architecture: 'llama-3.1-8b', minGpuMemory: null });
  });

  test('an adapter on a dedicated pool names lora_model; both together must be one architecture', async () => {
    const dedicated = await upload({ model_name: fresh(), model_source: 's3://acme-models/lora/x', model_type: 'adapter', lora_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct' });
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
        data: { id: modelId, projectId: t.caller.identity.projectId, name: newId('sm', now), type: 'chat', status: status === 'Complete' ? 'ready' : 'pending', createdAt: 0n },
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
        const attempt = t.services.db.write((tx) => moveJob(tx, t.services, job, event, 'test'));
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
    await t.services.db.write((tx) => tx.modelUploadJob.update({ where: { id: jobId }, data: { args: JSON.stringify({ modelName: 'x', modelSource: 'no source' }) } }));
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
    await t.services.db.write((tx) => moveJob(tx, t.services, job, 'start', 'first'));
    await expect(t.services.db.write((tx) => moveJob(tx, t.services, job, 'start', 'again'))).rejects.toMatchObject({ status: 409 });
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
      const up = await first.http.post('/v1/models').set('Authorization', `Bearer ${first.caller.key}`).send({ model_name: 'restart', model_source: 'acme/Mistral-7B-Instruct-v0.3-ft' });
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
        const res = await one.http.post('/v1/models').set('Authorization', `Bearer ${one.caller.key}`).send({ model_name: `pair-${i}`, model_source: `acme/Qwen2.5-7B-${i}` });
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
