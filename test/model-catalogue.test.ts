// The v2 model catalogue: models (the base-architecture rule at creation, names, visibility, the organization's
// list), remote uploads as a machine on the durable runner (restarts up to maxRestarts, events, a source that cannot
// be fetched ends FAILED), the revisions and files each succeeded upload adds, deployments pinning a revision (which
// cannot then be deleted), and the seed's migration step through the official client.
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createProject } from '../server/accounts.ts';
import { remoteUploadMachine } from '../server/modules/model-catalogue/machine.ts';
import { uploadJobMachine } from '../server/modules/models/machine.ts';
import { H100, MODEL, PROVISION_MS } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const QUEUE_MS = remoteUploadMachine.timed!.REMOTE_UPLOAD_STATUS_PENDING!.defaultMs;
const FETCH_MS = remoteUploadMachine.timed!.REMOTE_UPLOAD_STATUS_RUNNING!.defaultMs;
const RESTART_MS = remoteUploadMachine.timed!.REMOTE_UPLOAD_STATUS_ERROR!.defaultMs;
/** Runs v1 upload jobs to their end (each timed step drains on its own). */
const finishV1Uploads = async () => {
  await t.advance(uploadJobMachine.timed!.Queued!.defaultMs);
  await t.advance(uploadJobMachine.timed!.Running!.defaultMs);
};

let t: TestPlatform;
let projectId: string;
beforeAll(async () => {
  t = await startTestPlatform();
  projectId = t.caller.identity.projectId;
});
afterAll(() => t?.close());

let n = 0;
const uniq = (p: string) => `${p}-${++n}`;
const base = () => `/v2/projects/${projectId}`;
const createModel = (body: Record<string, unknown>) => t.caller.http.post(`${base()}/models`).send({ type: 'model', baseModelId: MODEL, ...body });
const newModel = async (over: Record<string, unknown> = {}) => {
  const res = await createModel({ name: uniq('llama-ft'), ...over });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};
const startUpload = (modelId: string, remoteUrl: string) => t.caller.http.post(`${base()}/models/uploads`).send({ modelId, remoteUrl });
const getUpload = async (id: string) => (await t.caller.http.get(`${base()}/models/uploads/${id}`)).body;
/** Uploads `remoteUrl` into the model and runs it to SUCCEEDED. */
const uploaded = async (modelId: string, remoteUrl = `acme/${uniq('Meta-Llama-3.1-8B-Instruct-ft')}`) => {
  const res = await startUpload(modelId, remoteUrl);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await t.advance(QUEUE_MS);
  await t.advance(FETCH_MS);
  return getUpload(res.body.id);
};

describe('models', () => {
  test('a created model is ml_..., empty (no revision, no parameters) and fine-tunes its base', async () => {
    const m = await newModel({ description: 'support bot' });
    expect(m).toEqual({
      id: expect.stringMatching(/^ml_[0-9a-z]{26}$/),
      projectId,
      organizationId: t.caller.identity.organizationId,
      name: expect.any(String),
      description: 'support bot',
      weights: { type: 'WEIGHTS_TYPE_DEFAULT', architecture: 'llama-3.1-8b', contextLength: '131072' },
      baseModelId: MODEL,
      baseModel: `models/${MODEL}`,
      visibility: 'VISIBILITY_PRIVATE',
    });
    expect((await t.caller.http.get(`${base()}/models/${m.id}`)).body).toEqual(m);
    expect((await t.caller.http.get(`${base()}/models/${m.id}/revisions`)).body).toEqual({ object: 'list', data: [], next_cursor: '' });
    expect((await t.caller.http.get(`${base()}/models/${m.id}/files`)).body).toEqual({ object: 'list', data: [], next_cursor: '', totalSizeBytes: '0' });
  });

  test('a model that is not a fine-tuned variant of a served base architecture is refused at creation, 400 naming the field', async () => {
    expectError(await createModel({ name: uniq('x'), baseModelId: 'acme/unknown-model' }), 400, { code: 'base_model_not_found', param: 'baseModelId' });
    // Of a known architecture but not run on dedicated hardware; of no architecture at all.
    expectError(await createModel({ name: uniq('x'), baseModelId: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference' }), 400, {
      code: 'unsupported_base_architecture',
      param: 'baseModelId',
    });
    expectError(await createModel({ name: uniq('x'), baseModelId: 'BAAI/bge-base-en-v1.5' }), 400, {
      code: 'unsupported_base_architecture',
      param: 'baseModelId',
    });
    expectError(await createModel({ name: uniq('x'), type: 'adapter' }), 400, { code: 'unsupported_model_type', param: 'type' });
    expectError(await createModel({ name: '  ' }), 400, { code: 'invalid_model_name', param: 'name' });
    // An alias and the resource name of a served base are accepted.
    expect((await createModel({ name: uniq('x'), baseModelId: `models/${MODEL}` })).status).toBe(200);
    expect(await t.services.db.prisma.model.count({ where: { visibility: { not: null }, baseModelId: { not: MODEL } } })).toBe(0);
  });

  test('names are unique among the project v1 and v2 models (409 model_name_taken, not retried)', async () => {
    const name = uniq('shared');
    expect((await t.caller.http.post('/v1/models').send({ model_name: name, model_source: 'acme/Meta-Llama-3.1-8B-x' })).status).toBe(200);
    const res = await createModel({ name });
    expectError(res, 409, { code: 'model_name_taken', param: 'name' });
    expect(res.headers['x-should-retry']).toBe('false');
    const m = await newModel();
    expectError(await t.caller.http.patch(`${base()}/models/${m.id}`).send({ name }), 409, { code: 'model_name_taken', param: 'name' });
  });

  test('update: name, description, visibility; updateMask limits it', async () => {
    const m = await newModel();
    const name = uniq('renamed');
    const res = await t.caller.http.patch(`${base()}/models/${m.id}`).send({ name, description: 'd', visibility: 'VISIBILITY_INTERNAL' });
    expect(res.body).toMatchObject({ id: m.id, name, description: 'd', visibility: 'VISIBILITY_INTERNAL' });
    const masked = await t.caller.http.patch(`${base()}/models/${m.id}`).query({ updateMask: 'description' }).send({ description: 'e', name: 'ignored' });
    expect(masked.body).toMatchObject({ name, description: 'e' });
    expectError(await t.caller.http.patch(`${base()}/models/${m.id}`).query({ updateMask: 'weights' }).send({}), 400, { code: 'invalid_update_mask' });
  });

  test('the v2 catalogue holds only its own models: a v1 upload, a catalogue id or another project answers 404', async () => {
    const v1 = await t.caller.http.post('/v1/models').send({ model_name: uniq('v1'), model_source: 'acme/Meta-Llama-3.1-8B-y' });
    await finishV1Uploads();
    expectError(await t.caller.http.get(`${base()}/models/${v1.body.data.model_id}`), 404, { code: 'not_found', param: 'modelId' });
    expectError(await startUpload(v1.body.data.model_id, 'acme/Meta-Llama-3.1-8B-z'), 404, { param: 'modelId' });
    const m = await newModel();
    expectError(await t.other.http.get(`/v2/projects/${projectId}/models/${m.id}`), 404, { param: 'projectId' });
    expectError(await t.other.http.get(`/v2/projects/${t.other.identity.projectId}/models/${m.id}`), 404, { param: 'modelId' });
  });

  test("lists page in id order; the organization's other projects see only its internal models", async () => {
    const sibling = await createProject(t.services.db, t.clock, { organizationId: t.caller.identity.organizationId, name: 'Sibling' });
    const peer = await t.newCaller(sibling.id);
    const mk = async (visibility?: string) => {
      const res = await peer.http.post(`/v2/projects/${sibling.id}/models`).send({ name: uniq('peer'), type: 'model', baseModelId: MODEL });
      if (visibility) await peer.http.patch(`/v2/projects/${sibling.id}/models/${res.body.id}`).send({ visibility });
      return res.body.id as string;
    };
    const internal = await mk('VISIBILITY_INTERNAL');
    const priv = await mk();
    const own = (await newModel()).id;
    const orgId = t.caller.identity.organizationId;

    const all = async (path: string, query: Record<string, string> = {}) => {
      const ids: string[] = [];
      let after = '';
      for (let i = 0; i < 100; i++) {
        const res = await t.caller.http.get(path).query({ ...query, limit: 2, ...(after && { after }) });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.data.length).toBeLessThanOrEqual(2);
        ids.push(...res.body.data.map((m: { id: string }) => m.id));
        after = res.body.next_cursor;
        if (!after) break;
      }
      return ids;
    };
    const projectList = await all(`${base()}/models`);
    expect(projectList).toContain(own);
    expect(projectList).not.toContain(internal);
    expect([...projectList].sort()).toEqual(projectList);
    const orgList = await all(`/v2/organizations/${orgId}/models`);
    expect(orgList).toEqual(expect.arrayContaining([own, internal]));
    expect(orgList).not.toContain(priv);
    expect(await all(`${base()}/models`, { organizationId: orgId })).toEqual(orgList);
    expect(await all(`${base()}/models`, { organizationId: orgId, visibility: 'VISIBILITY_INTERNAL' })).toContain(internal);
    expect(await all(`${base()}/models`, { organizationId: orgId, visibility: 'VISIBILITY_INTERNAL' })).not.toContain(own);
    expectError(await t.caller.http.get(`/v2/organizations/${t.other.identity.organizationId}/models`), 404, { param: 'organizationId' });
    expectError(await t.caller.http.get(`${base()}/models`).query({ organizationId: 'org_nope' }), 404, { param: 'organizationId' });
    // Only the owner reads it by id.
    expectError(await t.caller.http.get(`${base()}/models/${internal}`), 404, { param: 'modelId' });
  });
});

describe('remote uploads', () => {
  test('PENDING -> RUNNING -> SUCCEEDED on the runner: a revision with the checkpoint files, the model ready with its parameters', async () => {
    const m = await newModel();
    const res = await startUpload(m.id, 'unsloth/Llama-3.1-8B-Instruct-support');
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^mu_/),
      projectId,
      modelId: m.id,
      remoteUrl: 'unsloth/Llama-3.1-8B-Instruct-support',
      status: 'REMOTE_UPLOAD_STATUS_PENDING',
      restartCount: 0,
      maxRestarts: 3,
    });
    const id = res.body.id;
    await t.advance(QUEUE_MS - 1);
    expect((await getUpload(id)).status).toBe('REMOTE_UPLOAD_STATUS_PENDING');
    await t.advance(1);
    expect((await getUpload(id)).status).toBe('REMOTE_UPLOAD_STATUS_RUNNING');
    await t.advance(FETCH_MS);
    const done = await getUpload(id);
    expect(done.status).toBe('REMOTE_UPLOAD_STATUS_SUCCEEDED');

    const revisions = (await t.caller.http.get(`${base()}/models/${m.id}/revisions`)).body.data;
    expect(revisions).toEqual([
      {
        revisionId: expect.stringMatching(/^rev_/),
        createdAt: expect.any(String),
        validationStatus: 'REVISION_VALIDATION_STATUS_SUCCESS',
        lastValidatedAt: expect.any(String),
        validationErrors: [],
      },
    ]);
    expect(done.statusMessage).toContain(revisions[0].revisionId);
    const files = (await t.caller.http.get(`${base()}/models/${m.id}/files`)).body;
    expect(files.revisionId).toBe(revisions[0].revisionId);
    const names = files.data.map((f: { path: string }) => f.path);
    expect(names).toEqual([
      'config.json',
      'generation_config.json',
      'model-00001-of-00004.safetensors',
      'model-00002-of-00004.safetensors',
      'model-00003-of-00004.safetensors',
      'model-00004-of-00004.safetensors',
      'model.safetensors.index.json',
      'special_tokens_map.json',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    const shards = files.data.filter((f: { path: string }) => f.path.endsWith('.safetensors'));
    const weights = shards.reduce((s: number, f: { sizeBytes: string }) => s + Number(f.sizeBytes), 0);
    const got = (await t.caller.http.get(`${base()}/models/${m.id}`)).body;
    expect(got.weights.parameters).toEqual({ total: '8030261248', byDtype: [{ dtype: 'BF16', count: '8030261248' }] });
    expect(weights).toBe(2 * 8030261248);
    expect(Number(files.totalSizeBytes)).toBe(files.data.reduce((s: number, f: { sizeBytes: string }) => s + Number(f.sizeBytes), 0));

    const events = (await t.caller.http.get(`${base()}/models/uploads/${id}/events`)).body;
    expect(events.data.map((e: { type: string }) => e.type)).toEqual(['upload.created', 'upload.started', 'upload.succeeded']);
    expect(events.next_cursor).toBe('');

    // A second upload adds a second revision; files of the first stay readable by id.
    await uploaded(m.id);
    const two = (await t.caller.http.get(`${base()}/models/${m.id}/revisions`)).body.data;
    expect(two).toHaveLength(2);
    expect((await t.caller.http.get(`${base()}/models/${m.id}/files`)).body.revisionId).toBe(two[1].revisionId);
    expect((await t.caller.http.get(`${base()}/models/${m.id}/files`).query({ revisionId: two[0].revisionId })).body.revisionId).toBe(two[0].revisionId);
    expect((await t.caller.http.get(`${base()}/models/${m.id}/revisions/${two[0].revisionId}`)).body).toEqual(two[0]);
    expectError(await t.caller.http.get(`${base()}/models/${m.id}/revisions/rev_nope`), 404, { param: 'revisionId' });
    expectError(await t.caller.http.get(`${base()}/models/${m.id}/files`).query({ revisionId: 'rev_nope' }), 404, { param: 'revisionId' });
  });

  test('a source that cannot be fetched restarts up to maxRestarts, then ends FAILED with statusMessage; the model gets no revision', async () => {
    const m = await newModel();
    const id = (await startUpload(m.id, 'acme/does-not-exist-llama-3.1-8b')).body.id;
    await t.advance(QUEUE_MS);
    const seen: [string, number][] = [];
    for (let attempt = 0; attempt <= 3; attempt++) {
      await t.advance(FETCH_MS);
      const u = await getUpload(id);
      seen.push([u.status, u.restartCount]);
      if (u.status === 'REMOTE_UPLOAD_STATUS_ERROR') {
        expect(u.statusMessage).toContain('Repository not found: acme/does-not-exist-llama-3.1-8b.');
        await t.advance(RESTART_MS);
      }
    }
    expect(seen).toEqual([
      ['REMOTE_UPLOAD_STATUS_ERROR', 0],
      ['REMOTE_UPLOAD_STATUS_ERROR', 1],
      ['REMOTE_UPLOAD_STATUS_ERROR', 2],
      ['REMOTE_UPLOAD_STATUS_FAILED', 3],
    ]);
    const failed = await getUpload(id);
    expect(failed.statusMessage).toMatch(/^Repository not found: acme\/does-not-exist-llama-3\.1-8b\. Gave up after 3 restarts\.$/);
    const events = (await t.caller.http.get(`${base()}/models/uploads/${id}/events`)).body.data;
    expect(events.map((e: { type: string; level: string }) => `${e.type}:${e.level}`)).toEqual([
      'upload.created:LEVEL_INFO',
      'upload.started:LEVEL_INFO',
      ...Array(3).fill(['upload.errored:LEVEL_WARN', 'upload.restarted:LEVEL_INFO']).flat(),
      'upload.failed:LEVEL_ERROR',
    ]);
    // Pages of events.
    const page = (await t.caller.http.get(`${base()}/models/uploads/${id}/events`).query({ limit: 3 })).body;
    expect(page.data).toEqual(events.slice(0, 3));
    expect((await t.caller.http.get(`${base()}/models/uploads/${id}/events`).query({ limit: 3, after: page.next_cursor })).body.data).toEqual(
      events.slice(3, 6),
    );
    expect((await t.caller.http.get(`${base()}/models/${m.id}/revisions`)).body.data).toEqual([]);
    expect((await t.caller.http.get(`${base()}/models/uploads`).query({ limit: 100 })).body.data.map((u: { id: string }) => u.id)).toContain(id);
  });

  test('an upload that is not a fine-tuned variant of the model base architecture is refused at creation, 400 naming remoteUrl (v1 accepts it)', async () => {
    const m = await newModel();
    expectError(await startUpload(m.id, 'acme/my-model'), 400, { code: 'unsupported_base_architecture', param: 'remoteUrl' });
    expectError(await startUpload(m.id, 'Qwen/Qwen2.5-7B-Instruct-ft'), 400, { code: 'base_model_mismatch', param: 'remoteUrl' });
    expectError(await startUpload(m.id, 'ftp://x/y'), 400, { code: 'invalid_model_source', param: 'remoteUrl' });
    expectError(await startUpload('ml_nope', 'acme/Meta-Llama-3.1-8B-x'), 404, { param: 'modelId' });
    expect(await t.services.db.prisma.remoteUpload.count({ where: { modelId: m.id } })).toBe(0);
    // The same source through v1 completes (only a deploy refuses it there).
    const v1 = await t.caller.http.post('/v1/models').send({ model_name: uniq('v1-any'), model_source: 'acme/my-model' });
    await finishV1Uploads();
    expect((await t.caller.http.get(`/v1/jobs/${v1.body.data.job_id}`)).body.status).toBe('Complete');
  });

  test('an upload survives a restart of the server', async () => {
    const p = await startTestPlatform();
    try {
      const pid = p.caller.identity.projectId;
      const m = (await p.caller.http.post(`/v2/projects/${pid}/models`).send({ name: 'survivor', type: 'model', baseModelId: MODEL })).body;
      const u = (await p.caller.http.post(`/v2/projects/${pid}/models/uploads`).send({ modelId: m.id, remoteUrl: 'acme/Llama-3.1-8B-survivor' })).body;
      await p.advance(QUEUE_MS);
      await p.restart();
      await p.advance(FETCH_MS);
      expect((await p.caller.http.get(`/v2/projects/${pid}/models/uploads/${u.id}`)).body.status).toBe('REMOTE_UPLOAD_STATUS_SUCCEEDED');
      expect(await p.services.db.prisma.modelRevision.count({ where: { modelId: m.id } })).toBe(1);
    } finally {
      await p.close();
    }
  });
});

describe('deployments of catalogue models', () => {
  const deploy = (body: Record<string, unknown>) =>
    t.caller.http.post(`${base()}/deploy`).send({ endpointName: uniq('ep'), config: H100, minReplicas: 1, maxReplicas: 1, ...body });

  test('a model deploys once an upload succeeded, pinning its newest revision or the one named; a revision in use cannot be deleted', async () => {
    const m = await newModel();
    expectError(await deploy({ model: m.id }), 400, { code: 'model_not_ready', param: 'model' });
    await uploaded(m.id);
    await uploaded(m.id);
    const [first, second] = (await t.caller.http.get(`${base()}/models/${m.id}/revisions`)).body.data.map((r: { revisionId: string }) => r.revisionId);

    const newest = await deploy({ model: `projects/${projectId}/models/${m.id}` });
    expect(newest.status, JSON.stringify(newest.body)).toBe(202);
    expect(newest.body.deployment).toMatchObject({ modelId: m.id, modelRevisionId: second, model: `projects/${projectId}/models/${m.id}` });
    const pinned = await t.caller.http
      .post(`${base()}/endpoints/${newest.body.endpoint.id}/deployments`)
      .send({ name: 'old', model: `${m.id}`, modelRevisionId: first, config: H100, autoscaling: { minReplicas: 1, maxReplicas: 1 } });
    expect(pinned.status, JSON.stringify(pinned.body)).toBe(200);
    expect(pinned.body.modelRevisionId).toBe(first);
    expectError(await deploy({ model: `projects/${projectId}/models/${m.id}/revisions/rev_nope` }), 400, { code: 'model_revision_not_found', param: 'model' });

    const refused = await t.caller.http.delete(`${base()}/models/${m.id}`);
    expectError(refused, 409, { code: 'model_in_use', param: 'modelId' });
    expect(refused.body.error.message).toContain(newest.body.deployment.id);
    expect(refused.headers['x-should-retry']).toBe('false');
    await t.caller.http.delete(`${base()}/endpoints/${newest.body.endpoint.id}`);
    expect((await t.caller.http.delete(`${base()}/models/${m.id}`)).body).toEqual({});
    expectError(await t.caller.http.get(`${base()}/models/${m.id}`), 404, { param: 'modelId' });
    expect(await t.services.db.prisma.modelRevision.count({ where: { modelId: m.id } })).toBe(0);
  });

  test('a model cannot be deleted while an upload into it is under way', async () => {
    const m = await newModel();
    const u = (await startUpload(m.id, 'acme/Llama-3.1-8B-busy')).body;
    expectError(await t.caller.http.delete(`${base()}/models/${m.id}`), 409, { code: 'upload_in_progress', param: 'modelId' });
    await t.advance(QUEUE_MS);
    await t.advance(FETCH_MS);
    expect((await getUpload(u.id)).status).toBe('REMOTE_UPLOAD_STATUS_SUCCEEDED');
    expect((await t.caller.http.delete(`${base()}/models/${m.id}`)).status).toBe(200);
    expect(await t.services.db.prisma.remoteUpload.count({ where: { modelId: m.id } })).toBe(0);
  });
});

describe('the official together-ai client (client.beta.models, baseURL .../v2)', () => {
  test('create, retrieve, update, list, listOrgScoped, remoteUploads, listRevisions, listFiles, delete', async () => {
    const v2 = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, projectID: projectId, maxRetries: 0 });
    const created = await v2.beta.models.create({ name: uniq('sdk'), type: 'model', baseModelId: MODEL, description: 'via sdk' });
    expect(created.id).toMatch(/^ml_/);
    expect((await v2.beta.models.retrieve(created.id)).name).toBe(created.name);
    const updated = await v2.beta.models.update(created.id, { visibility: 'VISIBILITY_INTERNAL', updateMask: 'visibility' });
    expect(updated.visibility).toBe('VISIBILITY_INTERNAL');
    const listed: string[] = [];
    for await (const m of v2.beta.models.list({ limit: 2 })) listed.push(m.id);
    expect(listed).toContain(created.id);
    const org: string[] = [];
    for await (const m of v2.beta.models.listOrgScoped(t.caller.identity.organizationId, { limit: 2 })) org.push(m.id);
    expect(org).toContain(created.id);

    const up = await v2.beta.models.remoteUploads.create({ modelId: created.id, remoteUrl: 'acme/Meta-Llama-3.1-8B-sdk', token: 'hf_secret' });
    expect(up.status).toBe('REMOTE_UPLOAD_STATUS_PENDING');
    await t.advance(QUEUE_MS);
    await t.advance(FETCH_MS);
    expect((await v2.beta.models.remoteUploads.retrieve(up.id)).status).toBe('REMOTE_UPLOAD_STATUS_SUCCEEDED');
    const uploads: string[] = [];
    for await (const u of v2.beta.models.remoteUploads.list({ limit: 1 })) uploads.push(u.id);
    expect(uploads).toContain(up.id);
    expect((await v2.beta.models.remoteUploads.events(up.id)).data.map((e) => e.type)).toEqual(['upload.created', 'upload.started', 'upload.succeeded']);
    const row = await t.services.db.prisma.remoteUpload.findUnique({ where: { id: up.id } });
    expect(JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain('hf_secret');
    const revisions = await v2.beta.models.listRevisions(created.id);
    expect(revisions.data).toHaveLength(1);
    const files = await v2.beta.models.listFiles(created.id, { revisionId: revisions.data![0]!.revisionId });
    expect(files.data.length).toBeGreaterThan(5);
    expect(await v2.beta.models.delete(created.id)).toEqual({});
    const err: any = await v2.beta.models.retrieve(created.id).catch((e) => e);
    expect(err.status).toBe(404);
  });

  test("the seed's migration: v1 upload -> v2 upload of the same source -> deploy -> chat on <project_slug>/<endpoint_name>", async () => {
    const v1 = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const v2 = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, projectID: projectId, maxRetries: 0 });
    const source = 'acme/Meta-Llama-3.1-8B-Instruct-support';
    const job = await v1.models.upload({ model_name: uniq('support-v1'), model_source: source });
    await finishV1Uploads();
    expect((await v1.models.uploads.status(job.data.job_id)).status).toBe('Complete');

    const model = await v2.beta.models.create({ name: uniq('support'), type: 'model', baseModelId: MODEL });
    const upload = await v2.beta.models.remoteUploads.create({ modelId: model.id, remoteUrl: source });
    await t.advance(QUEUE_MS);
    await t.advance(FETCH_MS);
    expect((await v2.beta.models.remoteUploads.retrieve(upload.id)).status).toBe('REMOTE_UPLOAD_STATUS_SUCCEEDED');

    const endpointName = uniq('support-ep');
    const deployed = await t.caller.http.post(`${base()}/deploy`).send({ endpointName, model: model.id, config: H100, minReplicas: 1, maxReplicas: 1 });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(202);
    const [revision] = (await v2.beta.models.listRevisions(model.id)).data!;
    expect(deployed.body.deployment.modelRevisionId).toBe(revision!.revisionId);
    await t.advance(PROVISION_MS);
    const chat = await v1.chat.completions.create({
      model: `${t.caller.identity.projectSlug}/${endpointName}`,
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(chat.choices[0]!.message!.content!.length).toBeGreaterThan(0);
  });
});
