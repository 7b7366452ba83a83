// The v2 reads that describe what the platform has rather than what a project made: the endpoints shared with an
// organization, the public (serverless) endpoints, placement profiles, inference instance types and the models
// deployable on dedicated hardware. Each is checked against what the rest of the server does with the same things:
// the catalogue serves the public endpoints, deployments accept the placement profile and every supported model's
// profiles, and instance types report the hardware's prices and the capacity running replicas hold.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createProject } from '../server/accounts.ts';
import { H100, L40S, MODEL, PROVISION_MS } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { type Caller, startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

let n = 0;
const ok = async (res: { status: number; body: any }) => {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};
/** Every item of a v2 list, paged `limit` at a time through `next_cursor`. */
async function all(c: Caller, path: string, query: Record<string, unknown> = {}, limit = 2) {
  const items: any[] = [];
  let after = '';
  for (let pages = 0; pages < 100; pages++) {
    const body = await ok(await c.http.get(path).query({ ...query, limit, ...(after ? { after } : {}) }));
    expect(body.object).toBe('list');
    expect(body.data.length).toBeLessThanOrEqual(limit);
    items.push(...body.data);
    after = body.next_cursor;
    if (after === '') return items;
  }
  throw new Error('the list never ended');
}
const endpoint = async (c: Caller, visibility: string) => {
  t.clock.advance(1000);
  return ok(await c.http.post(`/v2/projects/${c.identity.projectId}/endpoints`).send({ name: `shared-${++n}`, visibility }));
};

describe('GET /v2/public/inference-instance-types', () => {
  test("the hardware catalogue's configurations with their specs and prices, and the headroom running replicas leave", async () => {
    const v1 = (await ok(await t.caller.http.get('/v1/hardware'))).data;
    const types = await ok(await t.caller.http.get('/v2/public/inference-instance-types'));
    expect(types.next_cursor).toBe('');
    expect(types.data.map((x: any) => x.id)).toEqual(v1.map((h: any) => h.id));
    const { prisma } = t.services.db;
    const seeded = await prisma.hardware.findMany();
    // The seeded v1 endpoints' running replicas hold GPUs already.
    const held = await prisma.hardwareReservation.groupBy({ by: ['hardwareId'], where: { endedAt: null }, _sum: { gpus: true } });
    expect(held.length).toBeGreaterThan(0);
    for (const h of v1) {
      const x = types.data.find((y: any) => y.id === h.id);
      const row = seeded.find((r) => r.id === h.id)!;
      const inUse = held.find((r) => r.hardwareId === h.id)?._sum.gpus ?? 0;
      expect(x).toMatchObject({ gpuType: h.specs.gpu_type, gpuCount: h.specs.gpu_count, gpuMemoryGib: h.specs.gpu_memory });
      expect(x.priceCentsPerHour).toBe(Math.round(h.pricing.cents_per_minute * 60));
      expect(x.regions).toEqual([{ name: 'local', headroom: { value: Math.floor((row.capacityGpus - inUse) / row.gpuCount), relation: 'RELATION_EQ' } }]);
      expect(x.name.length).toBeGreaterThan(0);
      expect(x.description.length).toBeGreaterThan(0);
    }
    expect(types.data.find((x: any) => x.id === '2x_nvidia_a100_80gb_sxm')).toMatchObject({ name: '2x NVIDIA A100 80GB SXM', priceCentsPerHour: 512 });

    // A replica on the one-replica L40S pool takes its headroom to 0; the single read says the same.
    const get = async () => ok(await t.caller.http.get('/v2/public/inference-instance-types/1x_nvidia_l40s_48gb_pcie'));
    expect((await get()).regions[0].headroom.value).toBe(1);
    const c = await t.newCaller();
    const base = `/v2/projects/${c.identity.projectId}`;
    const e = await ok(await c.http.post(`${base}/endpoints`).send({ name: 'on-l40s' }));
    const d = await ok(await c.http.post(`${base}/endpoints/${e.id}/deployments`).send({ name: 'primary', model: MODEL, config: L40S, autoscaling: {} }));
    await t.advance(PROVISION_MS);
    expect((await ok(await c.http.get(`${base}/endpoints/${e.id}/deployments/${d.id}`))).hardware).toBe('1x_nvidia_l40s_48gb_pcie');
    expect((await get()).regions[0].headroom).toEqual({ value: 0, relation: 'RELATION_EQ' });
    expect(
      (await ok(await t.other.http.get('/v2/public/inference-instance-types'))).data.find((x: any) => x.id === '1x_nvidia_l40s_48gb_pcie').regions[0].headroom
        .value,
    ).toBe(0);
    await ok(await c.http.delete(`${base}/endpoints/${e.id}`));
    expect((await get()).regions[0].headroom.value).toBe(1);
    expectError(await t.caller.http.get('/v2/public/inference-instance-types/1x_nvidia_b200_192gb_sxm'), 404, { param: 'instanceTypeId', code: 'not_found' });
  });
});

describe('GET /v2/organizations/{organizationId}/endpoints', () => {
  test("the organization's shared (VISIBILITY_INTERNAL) endpoints of all its projects, each as its project lists it; another organization's id is 404", async () => {
    const org = t.caller.identity.organizationId;
    const sibling = await t.newCaller((await createProject(t.services.db, t.clock, { organizationId: org, name: `Sibling ${++n}` })).id);
    const mineShared = await endpoint(t.caller, 'VISIBILITY_INTERNAL');
    const minePrivate = await endpoint(t.caller, 'VISIBILITY_PRIVATE');
    const siblingShared = await endpoint(sibling, 'VISIBILITY_INTERNAL');
    await endpoint(sibling, 'VISIBILITY_PRIVATE');
    const strangerShared = await endpoint(t.other, 'VISIBILITY_INTERNAL');
    // A deployment shows on the shared endpoint exactly as the project's own read shows it.
    await ok(
      await t.caller.http
        .post(`/v2/projects/${t.caller.identity.projectId}/endpoints/${mineShared.id}/deployments`)
        .send({ name: 'primary', model: MODEL, config: H100, autoscaling: { minReplicas: 0, maxReplicas: 0 } }),
    );
    const own = await ok(await t.caller.http.get(`/v2/projects/${t.caller.identity.projectId}/endpoints/${mineShared.id}`));

    const path = `/v2/organizations/${org}/endpoints`;
    const seen = await all(t.caller, path);
    expect(seen.map((e) => e.id)).toEqual([mineShared.id, siblingShared.id]);
    expect(seen[0]).toEqual(own);
    expect(seen[1]).toMatchObject({ projectId: sibling.identity.projectId, name: `${sibling.identity.projectSlug}/${siblingShared.name.split('/')[1]}` });
    expect(seen.map((e) => e.id)).not.toContain(minePrivate.id);
    // Every project of the organization sees the same list; another organization sees its own.
    expect((await all(sibling, path)).map((e) => e.id)).toEqual([mineShared.id, siblingShared.id]);
    expect((await all(t.other, `/v2/organizations/${t.other.identity.organizationId}/endpoints`)).map((e) => e.id)).toEqual([strangerShared.id]);
    expectError(await t.caller.http.get(`/v2/organizations/${t.other.identity.organizationId}/endpoints`), 404, { param: 'organizationId', code: 'not_found' });
    expectError(await t.caller.http.get('/v2/organizations/org_nope/endpoints'), 404, { param: 'organizationId' });

    // The list's filter and order, over the qualified names and the projects.
    const ids = async (query: Record<string, string>) => (await ok(await t.caller.http.get(path).query(query))).data.map((e: any) => e.id);
    expect(await ids({ filter: `project_id="${sibling.identity.projectId}"` })).toEqual([siblingShared.id]);
    expect(await ids({ filter: `projectId!="${sibling.identity.projectId}"` })).toEqual([mineShared.id]);
    expect(await ids({ filter: `name="${siblingShared.name}"` })).toEqual([siblingShared.id]);
    expect(await ids({ filter: `name="*/${mineShared.name.split('/')[1]}"` })).toEqual([mineShared.id]);
    expect(await ids({ orderBy: 'created_at desc' })).toEqual([siblingShared.id, mineShared.id]);
    expectError(await t.caller.http.get(path).query({ filter: 'visibility=x' }), 400, { code: 'invalid_filter', param: 'filter' });

    // Made private, an endpoint leaves the organization's list.
    await ok(await t.caller.http.patch(`/v2/projects/${t.caller.identity.projectId}/endpoints/${mineShared.id}`).send({ visibility: 'VISIBILITY_PRIVATE' }));
    expect((await all(sibling, path)).map((e) => e.id)).toEqual([siblingShared.id]);
  });
});

describe('GET /v2/public/endpoints', () => {
  test('one public endpoint per serverless catalogue model, named as serverless inference names it, the same for every caller', async () => {
    const serverless = (await t.services.db.prisma.model.findMany({ where: { projectId: null, serverless: true } })).map((m) => m.id).sort();
    const listed = await all(t.caller, '/v2/public/endpoints', {}, 7);
    expect(listed.map((e) => e.id)).toEqual(serverless);
    for (const e of listed) {
      expect(e).toEqual({ id: e.name, projectId: '', name: e.name, visibility: 'VISIBILITY_PUBLIC', createdAt: e.createdAt, updatedAt: e.updatedAt });
    }
    // Not a deployable-only model (served on dedicated endpoints only).
    expect(listed.map((e) => e.id)).not.toContain(MODEL);
    expect((await all(t.other, '/v2/public/endpoints', {}, 100)).map((e) => e.id)).toEqual(serverless);
    // A public endpoint's name is a model serverless inference serves.
    const chat = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
    expect(listed.map((e) => e.name)).toContain(chat);
    await ok(await t.caller.http.post('/v1/chat/completions').send({ model: chat, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }));

    const names = async (query: Record<string, string>) =>
      (await ok(await t.caller.http.get('/v2/public/endpoints').query(query))).data.map((e: any) => e.name);
    expect(await names({ filter: 'name:Rerank' })).toEqual(['mixedbread-ai/Mxbai-Rerank-Large-V2']);
    expect(await names({ filter: 'name:Llama-Rank OR name:Rerank', orderBy: 'name desc' })).toEqual([
      'mixedbread-ai/Mxbai-Rerank-Large-V2',
      'Salesforce/Llama-Rank-v1',
    ]);
    expectError(await t.caller.http.get('/v2/public/endpoints').query({ orderBy: 'model' }), 400, { code: 'invalid_order_by', param: 'orderBy' });
  });
});

describe('placement profiles', () => {
  test('one built-in profile, pp_local, in every project; a deployment placed by it runs in local', async () => {
    const c = await t.newCaller();
    const base = `/v2/projects/${c.identity.projectId}`;
    const profile = { id: 'pp_local', projectId: c.identity.projectId, organizationId: c.identity.organizationId, name: 'local', preferredRegions: ['local'] };
    expect(await ok(await c.http.get(`${base}/placement-profiles`))).toEqual({ object: 'list', data: [profile], next_cursor: '' });
    expect(await ok(await c.http.get(`${base}/placement-profiles/pp_local`))).toEqual(profile);
    expectError(await c.http.get(`${base}/placement-profiles/pp_elsewhere`), 404, { param: 'profileId', code: 'not_found' });
    expectError(await c.http.get(`${base}/placement-profiles`).query({ limit: -1 }), 400, { code: 'invalid_limit', param: 'limit' });
    expect((await ok(await c.http.get(`${base}/placement-profiles`).query({ after: 'pp_local' }))).data).toEqual([]);

    const e = await ok(await c.http.post(`${base}/endpoints`).send({ name: 'placed' }));
    const d = await ok(
      await c.http
        .post(`${base}/endpoints/${e.id}/deployments`)
        .send({ name: 'primary', model: MODEL, config: H100, autoscaling: {}, placement: { profile: 'pp_local' } }),
    );
    expect(d.placement).toEqual({ profile: 'pp_local' });
    await t.advance(PROVISION_MS);
    expect((await ok(await c.http.get(`${base}/endpoints/${e.id}/deployments/${d.id}`))).status.state).toBe('DEPLOYMENT_STATE_READY');
    expectError(
      await c.http
        .post(`${base}/endpoints/${e.id}/deployments`)
        .send({ name: 'elsewhere', model: MODEL, config: H100, autoscaling: {}, placement: { profile: 'pp_elsewhere' } }),
      400,
      { code: 'placement_profile_not_found', param: 'placement.profile' },
    );
  });
});

describe('GET /v2/supported-models', () => {
  const DEPLOYABLE = [
    'Qwen/Qwen2.5-72B-Instruct',
    'Qwen/Qwen2.5-72B-Instruct-Turbo',
    'Qwen/Qwen2.5-7B-Instruct',
    'deepseek-ai/DeepSeek-R1',
    'deepseek-ai/DeepSeek-V3',
    'meta-llama/Llama-3.3-70B-Instruct',
    'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    'meta-llama/Meta-Llama-3.1-8B-Instruct',
    'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo',
    'mistralai/Mistral-7B-Instruct-v0.3',
    'mistralai/Mistral-7B-v0.1',
  ];

  test('the catalogue models a deployment accepts and some hardware holds, each profile deployable as given', async () => {
    const models = await all(t.caller, '/v2/supported-models', {}, 4);
    expect(models.map((m) => m.id)).toEqual(DEPLOYABLE);
    const llama = models.find((m) => m.id === MODEL);
    expect(llama).toMatchObject({
      name: MODEL,
      displayName: 'Meta Llama 3.1 8B Instruct (base)',
      publisher: 'Meta',
      architecture: 'llama-3.1-8b',
      familyId: 'llama-3.1-8b',
      contextLength: '131072',
      displayType: 'chat',
      status: 'SUPPORTED_MODEL_STATUS_SUPPORTED',
      products: ['PRODUCT_DEDICATED', 'PRODUCT_FINE_TUNING'],
      capabilities: ['CAPABILITY_CHAT'],
      inputModalities: ['MODALITY_TEXT'],
      outputModalities: ['MODALITY_TEXT'],
      baseModelId: MODEL,
      baseModel: `models/${MODEL}`,
    });
    expect(llama).not.toHaveProperty('serverlessEndpoint');
    // Its B200 config matches no hardware here: no profile. The Turbo's config serves its architecture: a profile.
    expect(llama.deploymentProfiles.map((p: any) => [p.profileId, p.gpuType, p.gpuCount, p.quantization, p.parallelism])).toEqual([
      ['cr_llama_3_1_8b_a100', 'a100-80gb', 1, 'bf16', 'TP1'],
      ['cr_llama_3_1_8b_h100', 'h100-80gb', 1, 'fp8', 'TP1'],
      ['cr_llama_3_1_8b_l40s', 'l40s-48gb', 1, 'fp8', 'TP1'],
      ['cr_llama_3_1_8b_turbo_h100', 'h100-80gb', 1, 'fp8', 'TP1'],
    ]);
    // Certified with the Turbo, deployed as this model.
    const turboConfig = llama.deploymentProfiles[3];
    expect(turboConfig.certifiedModelRevisionId).not.toBe(llama.deploymentProfiles[1].certifiedModelRevisionId);
    expect(turboConfig.model).toBe(llama.deploymentProfiles[1].model);
    expect(llama.deploymentProfiles[1]).toEqual({
      profileId: H100,
      certifiedConfigRevisionId: H100,
      certifiedModelRevisionId: expect.stringMatching(/^rev_[0-9a-f]{16}$/),
      config: H100,
      model: `models/${MODEL}/revisions/${llama.deploymentProfiles[1].certifiedModelRevisionId}`,
      modelName: MODEL,
      gpuType: 'h100-80gb',
      gpuCount: 1,
      quantization: 'fp8',
      parallelism: 'TP1',
      performanceBenchmarks: { maxContextLength: '131072' },
    });
    const turbo = models.find((m) => m.id === 'meta-llama/Llama-3.3-70B-Instruct-Turbo');
    expect(turbo).toMatchObject({
      serverlessEndpoint: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
      products: ['PRODUCT_SERVERLESS', 'PRODUCT_DEDICATED', 'PRODUCT_FINE_TUNING'],
    });
    // Configs of its architecture serve it too, on two and four H100s.
    expect(turbo.deploymentProfiles.map((p: any) => [p.profileId, p.gpuCount, p.parallelism])).toEqual([
      ['cr_llama_3_3_70b_h100x2', 2, 'TP2'],
      ['cr_llama_3_3_70b_h100x4', 4, 'TP4'],
      ['cr_llama_3_3_70b_turbo_h100x2', 2, 'TP2'],
    ]);

    // Every profile of every model passes the deploy path's checks as given (validateOnly: capacity is not the
    // question), and one deploys for real onto the hardware its profile names.
    const c = await t.newCaller();
    const base = `/v2/projects/${c.identity.projectId}`;
    const e = await ok(await c.http.post(`${base}/endpoints`).send({ name: 'profiles' }));
    for (const m of models) {
      expect(m.deploymentProfiles.length, m.id).toBeGreaterThan(0);
      for (const p of m.deploymentProfiles) {
        const body = { name: `v-${++n}`, model: p.model, config: p.config, autoscaling: {} };
        await ok(await c.http.post(`${base}/endpoints/${e.id}/deployments`).query({ validateOnly: true }).send(body));
      }
    }
    const p = turbo.deploymentProfiles[0];
    const d = await ok(await c.http.post(`${base}/endpoints/${e.id}/deployments`).send({ name: 'real', model: p.model, config: p.config, autoscaling: {} }));
    await t.advance(PROVISION_MS);
    const ready = await ok(await c.http.get(`${base}/endpoints/${e.id}/deployments/${d.id}`));
    expect(ready.status.state).toBe('DEPLOYMENT_STATE_READY');
    const hardware = (await ok(await t.caller.http.get(`/v2/public/inference-instance-types/${ready.hardware}`))) as any;
    expect([hardware.gpuType, hardware.gpuCount]).toEqual([p.gpuType, p.gpuCount]);
    await ok(await c.http.delete(`${base}/endpoints/${e.id}`));

    // A catalogue model with a GPU size but no config is not listed, and the deploy path refuses it too.
    const mixtral = 'mistralai/Mixtral-8x7B-Instruct-v0.1';
    expect(models.map((m) => m.id)).not.toContain(mixtral);
    const e2 = await ok(await c.http.post(`${base}/endpoints`).send({ name: 'mixtral' }));
    expectError(await c.http.post(`${base}/endpoints/${e2.id}/deployments`).send({ name: 'x', model: mixtral, config: H100, autoscaling: {} }), 400, {
      code: 'config_model_mismatch',
    });
  });

  test('one model by id; models outside the list are 404', async () => {
    const one = await ok(await t.caller.http.get(`/v2/supported-models/${encodeURIComponent(MODEL)}`));
    expect(one.id).toBe(MODEL);
    expect((await ok(await t.caller.http.get('/v2/supported-models').query({ search: '3.1-8B-Instruct', limit: 1 }))).data[0]).toEqual(one);
    for (const id of ['mistralai/Mixtral-8x7B-Instruct-v0.1', 'BAAI/bge-base-en-v1.5', 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference', 'no/such-model']) {
      expectError(await t.caller.http.get(`/v2/supported-models/${encodeURIComponent(id)}`), 404, { param: 'modelId', code: 'not_found' });
    }
  });

  test('filters: product, modality, search', async () => {
    const ids = async (query: Record<string, string>) => (await all(t.caller, '/v2/supported-models', query, 100)).map((m) => m.id);
    expect(await ids({ product: 'PRODUCT_DEDICATED' })).toEqual(DEPLOYABLE);
    expect(await ids({ product: 'PRODUCT_SERVERLESS' })).toEqual([
      'Qwen/Qwen2.5-72B-Instruct-Turbo',
      'deepseek-ai/DeepSeek-R1',
      'deepseek-ai/DeepSeek-V3',
      'meta-llama/Llama-3.3-70B-Instruct-Turbo',
      'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo',
      'mistralai/Mistral-7B-v0.1',
    ]);
    expect(await ids({ product: 'PRODUCT_FINE_TUNING' })).toEqual(DEPLOYABLE);
    expect(await ids({ modality: 'MODALITY_TEXT' })).toEqual(DEPLOYABLE);
    expect(await ids({ modality: 'MODALITY_IMAGE' })).toEqual([]);
    expect(await ids({ search: 'QWEN' })).toEqual(['Qwen/Qwen2.5-72B-Instruct', 'Qwen/Qwen2.5-72B-Instruct-Turbo', 'Qwen/Qwen2.5-7B-Instruct']);
    expect(await ids({ search: 'deepseek-v3' })).toEqual(['deepseek-ai/DeepSeek-R1', 'deepseek-ai/DeepSeek-V3']);
    expect(await ids({ search: 'mistralai', product: 'PRODUCT_SERVERLESS' })).toEqual(['mistralai/Mistral-7B-v0.1']);
    expectError(await t.caller.http.get('/v2/supported-models').query({ product: 'PRODUCT_RESERVED' }), 400, { param: 'product' });
  });
});
