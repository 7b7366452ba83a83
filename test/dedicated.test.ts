// v2 dedicated endpoints: configs, endpoints with etags and traffic splits, deployments and their
// transition table (walked whole), provisioning on the runner, capacity and billing, the one-call deploy, and the
// rules on uploaded models.
import Together from 'together-ai';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createLogger } from '../server/core/log.ts';
import { type DeploymentState, deploymentMachine } from '../server/modules/dedicated/machine.ts';
import { revisionOf } from '../server/modules/dedicated/refs.ts';
import { startPlatform } from '../server/platform.ts';
import { enqueue } from '../server/runner/runner.ts';
import { usingPostgres } from './support/database.ts';
import { H100, insertUpload, insertV1Endpoint, L40S, MODEL, PROVISION_MS, STOP_MS, seededV1Endpoints } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let projectId: string;
let n = 0;
const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });
const base = () => `/v2/projects/${projectId}`;
const uniq = (prefix: string) => `${prefix}-${++n}`;

beforeAll(async () => {
  t = await startTestPlatform();
  projectId = t.caller.identity.projectId;
});
afterAll(() => t?.close());
// Every test starts with the shared hardware capacity free again (as far as v2 goes): deleting an endpoint
// releases its deployments' replicas.
afterEach(async () => {
  for (const e of await t.services.db.prisma.dedicatedEndpoint.findMany({ where: { projectId } })) {
    await t.http.delete(`${base()}/endpoints/${e.id}`).set(auth());
  }
});

async function createEndpoint(name = uniq('ep')) {
  const res = await t.http.post(`${base()}/endpoints`).set(auth()).send({ name });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function createDeployment(endpointId: string, body: Record<string, unknown> = {}) {
  const res = await t.http
    .post(`${base()}/endpoints/${endpointId}/deployments`)
    .set(auth())
    .send({ name: uniq('dep'), model: MODEL, config: H100, autoscaling: { minReplicas: 1, maxReplicas: 1 }, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const getDeployment = async (endpointId: string, id: string) => (await t.http.get(`${base()}/endpoints/${endpointId}/deployments/${id}`).set(auth())).body;
const patchDeployment = (endpointId: string, id: string, body: object, query = '') =>
  t.http.patch(`${base()}/endpoints/${endpointId}/deployments/${id}${query}`).set(auth()).send(body);
const openReservations = (ownerId: string) => t.services.db.prisma.hardwareReservation.count({ where: { ownerId, endedAt: null } });
const availability = async (hardware: string) => {
  const { data } = await t.api.GET('/v1/hardware', { params: { query: { model: MODEL } } });
  return data!.data.find((h) => h.id === hardware)!.availability!.status;
};

describe('configs', () => {
  test('published cr_ configs with selectors, a profile and the hardware they match; filtered and paged', async () => {
    const all = await t.http.get(`${base()}/configs`).set(auth());
    expect(all.status).toBe(200);
    expect(all.body.object).toBe('list');
    expect(all.body.next_cursor).toBe('');
    expect(all.body.data.every((c: any) => c.id.startsWith('cr_'))).toBe(true);
    const h100 = all.body.data.find((c: any) => c.id === H100);
    expect(h100).toEqual({
      id: H100,
      projectId: '',
      referenceModelId: MODEL,
      referenceModel: `models/${MODEL}`,
      selectors: [
        { key: 'gpu_type', value: 'h100-80gb' },
        { key: 'gpu_count', value: '1' },
      ],
      optimizationProfile: 'throughput',
      certifications: [
        {
          target: 'CERTIFICATION_TARGET_DE_SERVERLESS',
          certificationType: 'CERTIFICATION_TYPE_CERTIFIED',
          certifiedAt: '2026-06-01T00:00:00.000Z',
          certifiedBy: 'platform-certification',
          model: `models/${MODEL}`,
          modelRevisionId: revisionOf(MODEL),
          notes: 'Certified with fp8 weights.',
        },
      ],
      draftModel: '',
      hardware: ['1x_nvidia_h100_80gb_sxm'],
    });
    // The B200 config matches no hardware this platform has.
    expect(all.body.data.find((c: any) => c.id === 'cr_llama_3_1_8b_b200').hardware).toEqual([]);

    const llama = await t.http.get(`${base()}/configs`).query({ referenceModelId: MODEL }).set(auth());
    expect(llama.body.data.map((c: any) => c.id).sort()).toEqual(['cr_llama_3_1_8b_a100', 'cr_llama_3_1_8b_b200', H100, L40S]);
    const page1 = await t.http.get(`${base()}/configs`).query({ referenceModelId: MODEL, limit: 3 }).set(auth());
    expect(page1.body.data).toHaveLength(3);
    const page2 = await t.http.get(`${base()}/configs`).query({ referenceModelId: MODEL, limit: 3, after: page1.body.next_cursor }).set(auth());
    expect(page2.body.data).toHaveLength(1);
    expect(page2.body.next_cursor).toBe('');

    expect((await t.http.get(`${base()}/configs/${H100}`).set(auth())).body.id).toBe(H100);
    expectError(await t.http.get(`${base()}/configs/cr_nope`).set(auth()), 404, { code: 'not_found' });
  });

  test("another project's id in the path answers 404, even for published configs", async () => {
    const other = t.other.identity.projectId;
    expectError(await t.http.get(`/v2/projects/${other}/configs`).set(auth()), 404, { param: 'projectId' });
    expectError(await t.http.get(`/v2/projects/${other}/configs/${H100}`).set(auth()), 404, { param: 'projectId' });
    expectError(await t.http.get(`/v2/projects/proj_absent/endpoints`).set(auth()), 404, { param: 'projectId' });
  });
});

describe('endpoints', () => {
  test('create, get, list; names are unique per project across v1 and v2', async () => {
    const e = await createEndpoint('my-endpoint');
    expect(e).toMatchObject({
      projectId,
      name: 'default/my-endpoint',
      visibility: 'VISIBILITY_PRIVATE',
      endpointType: 'ENDPOINT_TYPE_DEDICATED',
      trafficSplit: [],
      deployments: [],
    });
    expect(e.id).toMatch(/^ep_/);
    expect((await t.http.get(`${base()}/endpoints/${e.id}`).set(auth())).body).toEqual(e);
    const list = await t.http.get(`${base()}/endpoints`).set(auth());
    expect(list.body.data.map((x: any) => x.id)).toContain(e.id);
    expectError(await t.http.post(`${base()}/endpoints`).set(auth()).send({ name: 'my-endpoint' }), 409, { code: 'endpoint_name_taken', param: 'name' });
    // A v1 endpoint's name is taken too: both are addressed as <project_slug>/<name>. (v1 endpoints are named
    // `<model>-<hash>` now, which a v2 name's pattern never matches; one named before that keeps its name.)
    await insertV1Endpoint(t, projectId, { name: 'llama-3-1-8b-instruct-v1', state: 'STOPPED' });
    expectError(await t.http.post(`${base()}/endpoints`).set(auth()).send({ name: 'llama-3-1-8b-instruct-v1' }), 409, { code: 'endpoint_name_taken' });
    // Another project may use the same name.
    const other = t.other.identity.projectId;
    const mine = await t.other.api.POST('/v2/projects/{projectId}/endpoints', { params: { path: { projectId: other } }, body: { name: 'my-endpoint' } });
    expect(mine.data!.name).toBe('other-project/my-endpoint');
  });

  test('pages by cursor', async () => {
    const c = await t.newCaller();
    const pid = c.identity.projectId;
    for (const name of ['a', 'b', 'c']) {
      t.clock.advance(1); // ids sort by creation time, to the millisecond
      await c.api.POST('/v2/projects/{projectId}/endpoints', { params: { path: { projectId: pid } }, body: { name } });
    }
    const p1 = await c.api.GET('/v2/projects/{projectId}/endpoints', { params: { path: { projectId: pid }, query: { limit: 2 } } });
    expect(p1.data!.data.map((e) => e.name)).toEqual([`${c.identity.projectSlug}/a`, `${c.identity.projectSlug}/b`]);
    const p2 = await c.api.GET('/v2/projects/{projectId}/endpoints', {
      params: { path: { projectId: pid }, query: { limit: 2, after: p1.data!.next_cursor! } },
    });
    expect(p2.data!.data).toHaveLength(1);
    expect(p2.data!.next_cursor).toBe('');
  });

  test('PATCH checks the etag (409 etag_mismatch, nothing changes), honours updateMask, and renames', async () => {
    const e = await createEndpoint();
    const stale = await t.http.patch(`${base()}/endpoints/${e.id}`).set(auth()).send({ etag: 'not-the-etag', visibility: 'VISIBILITY_INTERNAL' });
    expectError(stale, 409, { code: 'etag_mismatch', param: 'etag' });
    expect((await t.http.get(`${base()}/endpoints/${e.id}`).set(auth())).body.visibility).toBe('VISIBILITY_PRIVATE');

    const ok = await t.http.patch(`${base()}/endpoints/${e.id}`).set(auth()).send({ etag: e.etag, visibility: 'VISIBILITY_INTERNAL' });
    expect(ok.status).toBe(200);
    expect(ok.body.visibility).toBe('VISIBILITY_INTERNAL');
    expect(ok.body.etag).not.toBe(e.etag);

    // updateMask applies only the named fields; naming an absent one is an error.
    const masked = await t.http
      .patch(`${base()}/endpoints/${e.id}?updateMask=visibility`)
      .set(auth())
      .send({ visibility: 'VISIBILITY_PRIVATE', name: 'ignored-name' });
    expect(masked.body).toMatchObject({ visibility: 'VISIBILITY_PRIVATE', name: e.name });
    expectError(await t.http.patch(`${base()}/endpoints/${e.id}?updateMask=trafficSplit`).set(auth()).send({}), 400, {
      code: 'invalid_update_mask',
      param: 'updateMask',
    });

    const renamed = await t.http.patch(`${base()}/endpoints/${e.id}`).set(auth()).send({ name: 'default/renamed-endpoint' });
    expect(renamed.body.name).toBe('default/renamed-endpoint');
    await insertV1Endpoint(t, projectId, { name: 'qwen-2-5-7b-instruct-v1', state: 'STOPPED' }); // a v1 name from before `<model>-<hash>`
    expectError(await t.http.patch(`${base()}/endpoints/${e.id}`).set(auth()).send({ name: 'qwen-2-5-7b-instruct-v1' }), 409, { code: 'endpoint_name_taken' });
    expectError(await t.http.patch(`${base()}/endpoints/${e.id}`).set(auth()).send({ name: 'someone-else/x' }), 400, { code: 'invalid_name', param: 'name' });
  });

  test("the traffic split names this endpoint's deployments once each, with a positive weight", async () => {
    const e = await createEndpoint();
    const d = await createDeployment(e.id);
    const other = await createEndpoint();
    const foreign = await createDeployment(other.id);
    const patch = (trafficSplit: unknown) => t.http.patch(`${base()}/endpoints/${e.id}`).set(auth()).send({ trafficSplit });
    expectError(await patch([{ deploymentId: foreign.id, weight: 1 }]), 400, { code: 'unknown_deployment', param: 'trafficSplit.0.deploymentId' });
    expectError(
      await patch([
        { deploymentId: d.id, weight: 1 },
        { deploymentId: d.id, weight: 2 },
      ]),
      400,
      { code: 'duplicate_deployment', param: 'trafficSplit.1.deploymentId' },
    );
    expectError(await patch([{ deploymentId: d.id, weight: 0 }]), 400, { code: 'invalid_traffic_split', param: 'trafficSplit' });
    expect((await patch([{ deploymentId: d.id, weight: 3 }])).body.trafficSplit).toEqual([{ deploymentId: d.id, weight: 3 }]);
    expect((await patch([])).body.trafficSplit).toEqual([]);
  });

  test('DELETE checks the etag, then deletes the endpoint and its deployments, releasing their replicas', async () => {
    const e = await createEndpoint();
    const d = await createDeployment(e.id);
    await t.advance(PROVISION_MS);
    expect(await openReservations(d.id)).toBe(1);
    expectError(await t.http.delete(`${base()}/endpoints/${e.id}?etag=stale`).set(auth()), 409, { code: 'etag_mismatch', param: 'etag' });
    const current = (await t.http.get(`${base()}/endpoints/${e.id}`).set(auth())).body.etag;
    const res = await t.http.delete(`${base()}/endpoints/${e.id}?etag=${current}`).set(auth());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expect(await openReservations(d.id)).toBe(0);
    expect(await t.services.db.prisma.deployment.count({ where: { endpointId: e.id } })).toBe(0);
    expectError(await t.http.get(`${base()}/endpoints/${e.id}`).set(auth()), 404);
  });
});

describe("the one-call deploy (the migration's deploy step)", () => {
  test('creates endpoint, deployment and a 100% split, answers 202 while provisioning, and the runner makes it READY', async () => {
    const res = await t.http
      .post(`${base()}/deploy`)
      .set(auth())
      .send({ endpointName: 'migrated', model: MODEL, config: H100, minReplicas: 1, maxReplicas: 2 });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const { endpoint, deployment } = res.body;
    expect(endpoint).toMatchObject({ name: 'default/migrated', trafficSplit: [{ deploymentId: deployment.id, weight: 100 }] });
    expect(deployment).toMatchObject({
      name: 'primary',
      endpointId: endpoint.id,
      inferenceName: 'default/migrated/primary',
      modelId: MODEL,
      model: `models/${MODEL}`,
      configId: H100,
      config: `projects/${projectId}/configs/${H100}`,
      autoscaling: { minReplicas: 1, maxReplicas: 2 },
      hardware: '',
      status: { state: 'DEPLOYMENT_STATE_PROVISIONING', readyReplicas: 0, scheduledReplicas: 1 },
      desiredReplicas: 1,
      estimatedEffectiveTrafficShare: 0,
    });
    expect(deployment.id).toMatch(/^dep_/);

    await t.advance(PROVISION_MS - 1);
    expect((await getDeployment(endpoint.id, deployment.id)).status.state).toBe('DEPLOYMENT_STATE_PROVISIONING');
    await t.advance(1);
    const ready = await getDeployment(endpoint.id, deployment.id);
    expect(ready).toMatchObject({
      hardware: '1x_nvidia_h100_80gb_sxm',
      status: { state: 'DEPLOYMENT_STATE_READY', readyReplicas: 1 },
      estimatedEffectiveTrafficShare: 1,
    });
    expect(ready.etag).not.toBe(deployment.etag);
    expect(await openReservations(deployment.id)).toBe(1);
    expect((await t.http.get(`${base()}/endpoints/${endpoint.id}`).set(auth())).body.deployments[0]).toMatchObject({
      id: deployment.id,
      state: 'DEPLOYMENT_STATE_READY',
      readyReplicas: 1,
      estimatedEffectiveTrafficShare: 1,
    });

    expectError(
      await t.http.post(`${base()}/deploy`).set(auth()).send({ endpointName: 'migrated', model: MODEL, config: H100, minReplicas: 1, maxReplicas: 1 }),
      409,
      {
        code: 'endpoint_name_taken',
        param: 'endpointName',
      },
    );
  });

  test('refused input writes nothing', async () => {
    const before = await t.services.db.prisma.dedicatedEndpoint.count();
    const bad = (body: object) =>
      t.http
        .post(`${base()}/deploy`)
        .set(auth())
        .send({ endpointName: uniq('x'), model: MODEL, config: H100, minReplicas: 1, maxReplicas: 1, ...body });
    expectError(await bad({ minReplicas: 3, maxReplicas: 2 }), 400, { code: 'invalid_autoscaling', param: 'minReplicas' });
    expectError(await bad({ config: 'cr_qwen2_5_7b_h100' }), 400, { code: 'config_model_mismatch', param: 'config' });
    expectError(await bad({ config: 'cr_nope' }), 400, { code: 'config_not_found', param: 'config' });
    expectError(await bad({ config: `projects/${t.other.identity.projectId}/configs/${H100}` }), 400, { code: 'config_not_found', param: 'config' });
    expectError(await bad({ model: 'acme/nothing' }), 400, { code: 'model_not_found', param: 'model' });
    expectError(await bad({ model: 'BAAI/bge-base-en-v1.5' }), 400, { code: 'model_not_deployable', param: 'model' });
    expect(await t.services.db.prisma.dedicatedEndpoint.count()).toBe(before);
  });
});

describe('uploaded models on v2', () => {
  test("a ready fine-tune of a served base architecture deploys, by id or resource name, with its base's configs", async () => {
    const up = await insertUpload(t, projectId, { name: uniq('my-llama-ft') });
    const e = await createEndpoint();
    const d = await createDeployment(e.id, { model: up.id });
    expect(d).toMatchObject({ modelId: up.id, model: `projects/${projectId}/models/${up.id}` });
    const d2 = await createDeployment(e.id, { model: `projects/${projectId}/models/${up.id}`, config: 'cr_llama_3_1_8b_a100' });
    await t.advance(PROVISION_MS);
    expect((await getDeployment(e.id, d.id)).status.state).toBe('DEPLOYMENT_STATE_READY');
    expect((await getDeployment(e.id, d2.id)).hardware).toBe('1x_nvidia_a100_80gb_pcie');
  });

  test("pending, adapters, unknown architectures and other projects' uploads are refused", async () => {
    const e = await createEndpoint();
    const deploy = (model: string) =>
      t.http
        .post(`${base()}/endpoints/${e.id}/deployments`)
        .set(auth())
        .send({ name: uniq('d'), model, config: H100, autoscaling: { minReplicas: 1, maxReplicas: 1 } });
    const pending = await insertUpload(t, projectId, { status: 'pending' });
    expectError(await deploy(pending.id), 400, { code: 'model_not_ready', param: 'model' });
    const adapter = await insertUpload(t, projectId, { modelType: 'adapter' });
    expectError(await deploy(adapter.id), 400, { code: 'model_is_adapter', param: 'model' });
    const alien = await insertUpload(t, projectId, { architecture: 'gpt-neox-20b' });
    expectError(await deploy(alien.id), 400, { code: 'unsupported_architecture', param: 'model' });
    const theirs = await insertUpload(t, t.other.identity.projectId);
    expectError(await deploy(theirs.id), 400, { code: 'model_not_found', param: 'model' });
    expectError(await deploy(`projects/${t.other.identity.projectId}/models/${theirs.id}`), 400, { code: 'model_not_found', param: 'model' });
    const qwen = await insertUpload(t, projectId, { architecture: 'qwen2.5-7b', base: 'Qwen/Qwen2.5-7B-Instruct' });
    expectError(await deploy(qwen.id), 400, { code: 'config_model_mismatch', param: 'config' });
    expect(await t.services.db.prisma.deployment.count({ where: { endpointId: e.id } })).toBe(0);
  });
});

describe('provisioning outcomes, capacity and billing', () => {
  test("FAILED when no hardware matches the config's selectors", async () => {
    const e = await createEndpoint();
    const d = await createDeployment(e.id, { config: 'cr_llama_3_1_8b_b200' });
    await t.advance(PROVISION_MS);
    const failed = await getDeployment(e.id, d.id);
    expect(failed.status.state).toBe('DEPLOYMENT_STATE_FAILED');
    expect(failed.status.message).toMatch(/No hardware configuration matches config cr_llama_3_1_8b_b200's selectors \(gpu_type=b200-192gb, gpu_count=1\)/);
    expect(await openReservations(d.id)).toBe(0);
  });

  test('FAILED when capacity is lacking; a retry with fewer replicas becomes READY and takes the capacity; stopping gives it back', async () => {
    // 1x L40S has room for one replica.
    expect(await availability('1x_nvidia_l40s_48gb_pcie')).toBe('available');
    const e = await createEndpoint();
    const d = await createDeployment(e.id, { config: L40S, autoscaling: { minReplicas: 2, maxReplicas: 2 } });
    await t.advance(PROVISION_MS);
    const failed = await getDeployment(e.id, d.id);
    expect(failed.status).toMatchObject({ state: 'DEPLOYMENT_STATE_FAILED', message: expect.stringMatching(/Insufficient capacity/) });

    const retry = await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 1, maxReplicas: 2 } });
    expect(retry.body.status.state).toBe('DEPLOYMENT_STATE_PROVISIONING');
    await t.advance(PROVISION_MS);
    expect((await getDeployment(e.id, d.id)).status).toMatchObject({ state: 'DEPLOYMENT_STATE_READY', readyReplicas: 1 });
    expect(await availability('1x_nvidia_l40s_48gb_pcie')).toBe('unavailable');

    // Growing a READY deployment needs free capacity there.
    expectError(await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 2, maxReplicas: 2 } }), 409, {
      code: 'insufficient_capacity',
      param: 'autoscaling.minReplicas',
    });

    const stopping = await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 0, maxReplicas: 0 } });
    expect(stopping.body.status.state).toBe('DEPLOYMENT_STATE_STOPPING');
    expect(await availability('1x_nvidia_l40s_48gb_pcie')).toBe('unavailable');
    await t.advance(STOP_MS);
    expect((await getDeployment(e.id, d.id)).status).toMatchObject({ state: 'DEPLOYMENT_STATE_STOPPED', readyReplicas: 0 });
    expect(await availability('1x_nvidia_l40s_48gb_pcie')).toBe('available');
  });

  test('a READY deployment resizes in place', async () => {
    const e = await createEndpoint();
    const d = await createDeployment(e.id, { autoscaling: { minReplicas: 1, maxReplicas: 4 } });
    await t.advance(PROVISION_MS);
    const grown = await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 3, maxReplicas: 4 } });
    expect(grown.body).toMatchObject({ desiredReplicas: 3, status: { state: 'DEPLOYMENT_STATE_READY', readyReplicas: 3 } });
    expect(await openReservations(d.id)).toBe(3);
    await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 2, maxReplicas: 4 } });
    expect(await openReservations(d.id)).toBe(2);
  });

  test('v1 and v2 endpoints running at once both bill per minute by hardware, readable per endpoint', async () => {
    const seeded = (await seededV1Endpoints(t)).running;
    const v1 = (await t.api.GET('/v1/endpoints')).data!.data.find((x) => x.id === seeded.id)!;
    const v1Before = (await t.api.GET('/v1/endpoints/{endpointId}/usage', { params: { path: { endpointId: v1.id } } })).data!;

    const e = await createEndpoint();
    const d = await createDeployment(e.id, {
      config: 'cr_llama_3_3_70b_h100x2',
      model: 'meta-llama/Llama-3.3-70B-Instruct',
      autoscaling: { minReplicas: 2, maxReplicas: 2 },
    });
    const usage = async () => (await t.http.get(`${base()}/endpoints/${e.id}/usage`).set(auth())).body;
    expect(await usage()).toEqual({
      endpointId: e.id,
      runningReplicas: 0,
      replicaMinutes: 0,
      costCents: 0,
      deployments: [expect.objectContaining({ deploymentId: d.id, costCents: 0 })],
    });

    await t.advance(PROVISION_MS); // READY: 2 replicas of 2x H100 at 11.2 cents a minute each
    await t.advance(30 * 60_000);
    expect(await usage()).toEqual({
      endpointId: e.id,
      runningReplicas: 2,
      replicaMinutes: 60,
      costCents: 672,
      deployments: [{ deploymentId: d.id, name: d.name, hardware: '2x_nvidia_h100_80gb_sxm', runningReplicas: 2, replicaMinutes: 60, costCents: 672 }],
    });
    const v1After = (await t.api.GET('/v1/endpoints/{endpointId}/usage', { params: { path: { endpointId: v1.id } } })).data!;
    expect(v1After.running_replicas).toBe(1);
    expect(v1After.cost_cents - v1Before.cost_cents).toBeCloseTo((PROVISION_MS / 60_000 + 30) * 5.6, 1);

    // Stopping the v2 deployment ends its billing after the stop delay; the v1 endpoint keeps billing.
    await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 0, maxReplicas: 0 } });
    await t.advance(STOP_MS);
    await t.advance(60 * 60_000);
    expect((await usage()).costCents).toBeCloseTo(672 + (STOP_MS / 60_000) * 2 * 11.2, 2);
    const v1Later = (await t.api.GET('/v1/endpoints/{endpointId}/usage', { params: { path: { endpointId: v1.id } } })).data!;
    expect(v1Later.cost_cents - v1After.cost_cents).toBeCloseTo((STOP_MS / 60_000 + 60) * 5.6, 1);
  });
});

describe('deployments', () => {
  test('names are unique per endpoint; etags guard PATCH and DELETE; a routed deployment cannot be deleted', async () => {
    const e = await createEndpoint();
    const d = await createDeployment(e.id, { name: 'blue' });
    expectError(
      await t.http
        .post(`${base()}/endpoints/${e.id}/deployments`)
        .set(auth())
        .send({ name: 'blue', model: MODEL, config: H100, autoscaling: { minReplicas: 1, maxReplicas: 1 } }),
      409,
      { code: 'deployment_name_taken', param: 'name' },
    );
    const green = await createDeployment(e.id, { name: 'green' });
    expectError(await patchDeployment(e.id, green.id, { name: 'blue' }), 409, { code: 'deployment_name_taken', param: 'name' });
    expectError(await patchDeployment(e.id, d.id, { etag: 'stale', name: 'cyan' }), 409, { code: 'etag_mismatch', param: 'etag' });
    const renamed = await patchDeployment(e.id, d.id, { etag: d.etag, name: 'cyan' });
    expect(renamed.body.name).toBe('cyan');
    const masked = await patchDeployment(e.id, d.id, { name: 'ignored', autoscaling: { minReplicas: 2, maxReplicas: 2 } }, '?updateMask=autoscaling');
    expect(masked.body).toMatchObject({ name: 'cyan', autoscaling: { minReplicas: 2, maxReplicas: 2 } });
    expectError(await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 2, maxReplicas: 1 } }), 400, {
      code: 'invalid_autoscaling',
      param: 'autoscaling.minReplicas',
    });

    // Listed in id order (ids sort by creation time; these two share a millisecond).
    const ids = [d.id, green.id].sort();
    const list = await t.http.get(`${base()}/endpoints/${e.id}/deployments`).set(auth());
    expect(list.body.data.map((x: any) => x.id)).toEqual(ids);
    const page = await t.http.get(`${base()}/endpoints/${e.id}/deployments`).query({ limit: 1 }).set(auth());
    expect(page.body.data.map((x: any) => x.id)).toEqual([ids[0]]);
    expect(page.body.next_cursor).toBe(ids[0]);
    const rest = await t.http.get(`${base()}/endpoints/${e.id}/deployments`).query({ after: ids[0] }).set(auth());
    expect(rest.body.data.map((x: any) => x.id)).toEqual([ids[1]]);

    await t.http
      .patch(`${base()}/endpoints/${e.id}`)
      .set(auth())
      .send({
        trafficSplit: [
          { deploymentId: d.id, weight: 1 },
          { deploymentId: green.id, weight: 0 },
        ],
      });
    expectError(await t.http.delete(`${base()}/endpoints/${e.id}/deployments/${d.id}`).set(auth()), 409, { code: 'deployment_receives_traffic' });
    expectError(await t.http.delete(`${base()}/endpoints/${e.id}/deployments/${green.id}?etag=stale`).set(auth()), 409, { code: 'etag_mismatch' });
    const del = await t.http.delete(`${base()}/endpoints/${e.id}/deployments/${green.id}`).set(auth());
    expect(del.status).toBe(200);
    expect(del.body).toEqual({});
    // The zero-weight entry went with it.
    expect((await t.http.get(`${base()}/endpoints/${e.id}`).set(auth())).body.trafficSplit).toEqual([{ deploymentId: d.id, weight: 1 }]);
  });

  test('a 0/0 deployment is created STOPPED and costs nothing', async () => {
    const e = await createEndpoint();
    const d = await createDeployment(e.id, { autoscaling: { minReplicas: 0, maxReplicas: 0 } });
    expect(d.status.state).toBe('DEPLOYMENT_STATE_STOPPED');
    await t.advance(PROVISION_MS);
    expect((await getDeployment(e.id, d.id)).status.state).toBe('DEPLOYMENT_STATE_STOPPED');
  });
});

describe("the public platform's deployment fields", () => {
  const post = (endpointId: string, body: Record<string, unknown>) => t.http.post(`${base()}/endpoints/${endpointId}/deployments`).set(auth()).send(body);

  test('modelId and configId (deprecated aliases) deploy like model and config; neither form is 400 required naming the field', async () => {
    const e = await createEndpoint();
    const byId = await post(e.id, { name: uniq('d'), modelId: MODEL, configId: H100, autoscaling: { minReplicas: 1 } });
    expect(byId.status, JSON.stringify(byId.body)).toBe(200);
    expect(byId.body).toMatchObject({ modelId: MODEL, model: `models/${MODEL}`, configId: H100, config: `projects/${projectId}/configs/${H100}` });
    // Both forms naming the same thing are fine, in any of their spellings.
    const both = await post(e.id, {
      name: uniq('d'),
      model: `models/${MODEL}`,
      modelId: MODEL,
      config: `projects/${projectId}/configs/${H100}`,
      configId: H100,
      autoscaling: {},
    });
    expect(both.status, JSON.stringify(both.body)).toBe(200);

    expectError(await post(e.id, { name: uniq('d'), config: H100, autoscaling: {} }), 400, { code: 'required', param: 'model' });
    expectError(await post(e.id, { name: uniq('d'), modelId: MODEL, autoscaling: {} }), 400, { code: 'required', param: 'config' });
    expectError(await post(e.id, { name: uniq('d'), model: MODEL, modelId: 'Qwen/Qwen2.5-7B-Instruct', config: H100, autoscaling: {} }), 400, {
      code: 'model_mismatch',
      param: 'modelId',
    });
    expectError(await post(e.id, { name: uniq('d'), model: MODEL, config: H100, configId: L40S, autoscaling: {} }), 400, {
      code: 'config_mismatch',
      param: 'configId',
    });
    expectError(await post(e.id, { name: uniq('d'), modelId: 'acme/nothing', configId: H100, autoscaling: {} }), 400, {
      code: 'model_not_found',
      param: 'modelId',
    });
    expectError(await post(e.id, { name: uniq('d'), model: MODEL, configId: 'cr_nope', autoscaling: {} }), 400, {
      code: 'config_not_found',
      param: 'configId',
    });
    expect(await t.services.db.prisma.deployment.count({ where: { endpointId: e.id } })).toBe(2);
  });

  test("every deployment carries modelRevisionId (its model's one revision), runtimeInfo, enableLora and a hardware string", async () => {
    const e = await createEndpoint();
    const rev = revisionOf(MODEL);
    expect(rev).toMatch(/^rev_[0-9a-f]{16}$/);
    const d = await createDeployment(e.id);
    expect(d).toMatchObject({
      modelRevisionId: rev,
      enableLora: false,
      hardware: '',
      runtimeInfo: { engineType: 'local', engineVersion: 'local-chat-engine-2', functionCallingSupported: true, structuredOutputSupported: true },
    });
    expect(d).not.toHaveProperty('placement');
    await t.advance(PROVISION_MS);
    expect((await getDeployment(e.id, d.id)).hardware).toBe('1x_nvidia_h100_80gb_sxm');
    const listed = await t.http.get(`${base()}/endpoints/${e.id}`).set(auth());
    expect(listed.body.deployments[0].hardware).toBe('1x_nvidia_h100_80gb_sxm');

    // The revision may be named, as modelRevisionId or as a /revisions/ suffix of model; another one is refused.
    const pinned = await post(e.id, {
      name: uniq('d'),
      model: `projects/${projectId}/models/${MODEL}/revisions/${rev}`,
      config: H100,
      modelRevisionId: rev,
      autoscaling: { minReplicas: 0, maxReplicas: 0 },
    });
    expect(pinned.status, JSON.stringify(pinned.body)).toBe(200);
    expect(pinned.body).toMatchObject({ modelId: MODEL, modelRevisionId: rev });
    expectError(await post(e.id, { name: uniq('d'), model: MODEL, modelRevisionId: 'rev_other', config: H100, autoscaling: {} }), 400, {
      code: 'model_revision_not_found',
      param: 'modelRevisionId',
    });
    expectError(await post(e.id, { name: uniq('d'), model: `models/${MODEL}/revisions/rev_other`, config: H100, autoscaling: {} }), 400, {
      code: 'model_revision_not_found',
      param: 'model',
    });

    // An upload has its own revision.
    const up = await insertUpload(t, projectId, { name: uniq('ft') });
    expect((await createDeployment(e.id, { model: up.id })).modelRevisionId).toBe(revisionOf(up.id));
  });

  test('autoscaling: bounds default to one replica, are not negative and fit 32 bits; windows and metrics are recorded, returned and kept', async () => {
    const e = await createEndpoint();
    const empty = await post(e.id, { name: uniq('d'), model: MODEL, config: H100, autoscaling: {} });
    expect(empty.body).toMatchObject({
      autoscaling: { minReplicas: 1, maxReplicas: 1 },
      desiredReplicas: 1,
      status: { state: 'DEPLOYMENT_STATE_PROVISIONING' },
    });
    expect((await post(e.id, { name: uniq('d'), model: MODEL, config: H100, autoscaling: { maxReplicas: 3 } })).body.autoscaling).toEqual({
      minReplicas: 1,
      maxReplicas: 3,
    });
    const stopped = await post(e.id, { name: uniq('d'), model: MODEL, config: H100, autoscaling: { maxReplicas: 0 } });
    expect(stopped.body).toMatchObject({ autoscaling: { minReplicas: 0, maxReplicas: 0 }, status: { state: 'DEPLOYMENT_STATE_STOPPED' } });

    expectError(await post(e.id, { name: uniq('d'), model: MODEL, config: H100, autoscaling: { minReplicas: -1 } }), 400, {
      code: 'invalid_autoscaling',
      param: 'autoscaling.minReplicas',
    });
    expectError(await post(e.id, { name: uniq('d'), model: MODEL, config: H100, autoscaling: { maxReplicas: -2 } }), 400, {
      code: 'invalid_autoscaling',
      param: 'autoscaling.maxReplicas',
    });
    expectError(await post(e.id, { name: uniq('d'), model: MODEL, config: H100, autoscaling: { minReplicas: 2 ** 31 } }), 400, {
      param: 'autoscaling.minReplicas',
    });
    // More replicas than any hardware holds are accepted; provisioning then fails for capacity, as the tag says.
    const huge = await post(e.id, { name: uniq('d'), model: MODEL, config: H100, autoscaling: { minReplicas: 1000 } });
    expect(huge.status, JSON.stringify(huge.body)).toBe(200);

    const policy = {
      scaleDownWindow: '300s',
      scaleUpWindow: '30s',
      scaleToZeroWindow: '3600s',
      scalingMetrics: [
        { name: 'inflight_requests', type: 'METRIC_TARGET_TYPE_AVERAGE_VALUE', target: 8 },
        { name: 'e2e_latency', type: 'METRIC_TARGET_TYPE_VALUE', target: 500, percentile: 'p95' },
      ],
    };
    const d = await createDeployment(e.id, { autoscaling: { minReplicas: 1, maxReplicas: 2, ...policy } });
    expect(d.autoscaling).toEqual({ minReplicas: 1, maxReplicas: 2, ...policy });
    expectError(await post(e.id, { name: uniq('d'), model: MODEL, config: H100, autoscaling: { scaleDownWindow: '5m' } }), 400, {
      param: 'autoscaling.scaleDownWindow',
    });

    // An update changes what it names and keeps the rest; windows alone change no state, not even on a STOPPED deployment.
    const windowed = await patchDeployment(e.id, d.id, { autoscaling: { scaleUpWindow: '60s', scalingMetrics: [] } });
    expect(windowed.status, JSON.stringify(windowed.body)).toBe(200);
    expect(windowed.body.autoscaling).toEqual({ ...policy, minReplicas: 1, maxReplicas: 2, scaleUpWindow: '60s', scalingMetrics: [] });
    expect(windowed.body.status.state).toBe('DEPLOYMENT_STATE_PROVISIONING');
    const onStopped = await patchDeployment(e.id, stopped.body.id, { autoscaling: { scaleDownWindow: '120s' } });
    expect(onStopped.status, JSON.stringify(onStopped.body)).toBe(200);
    expect(onStopped.body).toMatchObject({
      autoscaling: { minReplicas: 0, maxReplicas: 0, scaleDownWindow: '120s' },
      status: { state: 'DEPLOYMENT_STATE_STOPPED' },
    });
    expectError(await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: -1 } }), 400, {
      code: 'invalid_autoscaling',
      param: 'autoscaling.minReplicas',
    });
    expect((await getDeployment(e.id, d.id)).autoscaling.scaleUpWindow).toBe('60s');
  });

  test("placement: recorded as given; required regions must include this server's region local, and neither HIPAA nor a profile other than pp_local can be met", async () => {
    const e = await createEndpoint();
    const inline = { inline: { regions: ['local'], constraint: 'ENFORCEMENT_REQUIRED' } };
    const here = await createDeployment(e.id, { placement: inline });
    expect(here.placement).toEqual(inline);
    expect((await getDeployment(e.id, here.id)).placement).toEqual(inline);
    const preferred = { inline: { regions: ['us-east-1', 'eu-west-1'], constraint: 'ENFORCEMENT_PREFERRED' } };
    expect((await createDeployment(e.id, { placement: preferred })).placement).toEqual(preferred);
    expect((await createDeployment(e.id, { placement: { inline: {} } })).placement).toEqual({ inline: {} });

    const bad = (placement: unknown) => post(e.id, { name: uniq('d'), model: MODEL, config: H100, autoscaling: {}, placement });
    expectError(await bad({ inline: { regions: ['us-east-1'], constraint: 'ENFORCEMENT_REQUIRED' } }), 400, {
      code: 'placement_unsatisfiable',
      param: 'placement.inline.regions',
    });
    expectError(await bad({ inline: { regions: ['us-east-1'] } }), 400, { code: 'placement_unsatisfiable', param: 'placement.inline.regions' });
    expectError(await bad({ inline: { compliancePolicy: { hipaa: true } } }), 400, {
      code: 'placement_unsatisfiable',
      param: 'placement.inline.compliancePolicy.hipaa',
    });
    expectError(await bad({ profile: 'pp_123' }), 400, { code: 'placement_profile_not_found', param: 'placement.profile' });
    expectError(await bad({}), 400, {});
  });

  test("enableLora: the caller's adapters of the model are served on the endpoint and on the deployment, with no binding; elsewhere 400 lora_not_enabled", async () => {
    const e = await createEndpoint();
    const lora = await createDeployment(e.id, { name: 'lora', enableLora: true });
    expect(lora.enableLora).toBe(true);
    const plain = await createDeployment(e.id, { name: 'plain' });
    const adapter = await insertUpload(t, projectId, { modelType: 'adapter', name: uniq('my-lora'), base: MODEL });
    await t.advance(PROVISION_MS);
    const chat = (model: string) =>
      t.http
        .post('/v1/chat/completions')
        .set(auth())
        .send({ model, messages: [{ role: 'user', content: 'hi' }] });

    // Only the plain deployment is routed: nothing that serves the adapter is.
    await t.http
      .patch(`${base()}/endpoints/${e.id}`)
      .set(auth())
      .send({ trafficSplit: [{ deploymentId: plain.id, weight: 1 }] });
    expectError(await chat(`${e.name}:${adapter.name}`), 503, { code: 'endpoint_not_ready' });
    await t.http
      .patch(`${base()}/endpoints/${e.id}`)
      .set(auth())
      .send({
        trafficSplit: [
          { deploymentId: plain.id, weight: 1 },
          { deploymentId: lora.id, weight: 1 },
        ],
      });
    for (let i = 0; i < 4; i++) {
      const res = await chat(`${e.name}:${adapter.name}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers['x-served-by']).toBe(lora.id);
      expect(res.body.choices[0].message.content).toContain(`with the LoRA adapter ${adapter.name}`);
    }
    const byId = await chat(`${e.name}/lora:${adapter.id}`);
    expect(byId.status, JSON.stringify(byId.body)).toBe(200);
    expect(byId.headers['x-served-by']).toBe(lora.id);
    expectError(await chat(`${e.name}/plain:${adapter.name}`), 400, { code: 'lora_not_enabled', param: 'model' });

    // An adapter of another base model, or an endpoint without LoRA, has nothing to serve it; an unknown adapter is unknown.
    const qwen = await insertUpload(t, projectId, {
      modelType: 'adapter',
      name: uniq('qwen-lora'),
      architecture: 'qwen2.5-7b',
      base: 'Qwen/Qwen2.5-7B-Instruct',
    });
    expectError(await chat(`${e.name}:${qwen.name}`), 400, { code: 'lora_not_enabled', param: 'model' });
    const other = await createEndpoint();
    await createDeployment(other.id);
    expectError(await chat(`${other.name}:${adapter.name}`), 400, { code: 'lora_not_enabled', param: 'model' });
    expectError(await chat(`${e.name}:no-such-adapter`), 404, { code: 'model_not_found', param: 'model' });
  });

  test('names: any non-empty string without / or : (no length or alphabet rule); endpoints also as <project_slug>/<name>', async () => {
    const long = `Prod_Endpoint.${'x'.repeat(80)}`;
    const e = await t.http
      .post(`${base()}/endpoints`)
      .set(auth())
      .send({ name: `default/${long}` });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    expect(e.body.name).toBe(`default/${long}`);
    expectError(await t.http.post(`${base()}/endpoints`).set(auth()).send({ name: 'other-slug/x' }), 400, { code: 'invalid_name', param: 'name' });
    expectError(await t.http.post(`${base()}/endpoints`).set(auth()).send({ name: 'a:b' }), 400, { code: 'invalid_name', param: 'name' });
    expectError(await t.http.post(`${base()}/endpoints`).set(auth()).send({ name: '' }), 400, { code: 'invalid_name', param: 'name' });
    expectError(await t.http.patch(`${base()}/endpoints/${e.body.id}`).set(auth()).send({ name: 'default/a/b' }), 400, { code: 'invalid_name', param: 'name' });

    const d = await createDeployment(e.body.id, { name: 'Blue Deployment' });
    expect(d).toMatchObject({ name: 'Blue Deployment', inferenceName: `default/${long}/Blue Deployment` });
    expectError(await post(e.body.id, { name: 'a/b', model: MODEL, config: H100, autoscaling: {} }), 400, { code: 'invalid_name', param: 'name' });
    expectError(await patchDeployment(e.body.id, d.id, { name: 'x:y' }), 400, { code: 'invalid_name', param: 'name' });
    expectError(
      await t.http
        .post(`${base()}/deploy`)
        .set(auth())
        .send({ endpointName: uniq('x'), deploymentName: 'p/q', model: MODEL, config: H100, minReplicas: 1, maxReplicas: 1 }),
      400,
      {
        code: 'invalid_name',
        param: 'deploymentName',
      },
    );
  });

  test('traffic weights: any finite non-negative numbers, large ones included; a negative weight is 400', async () => {
    const e = await createEndpoint();
    const d = await createDeployment(e.id);
    const patch = (trafficSplit: unknown) => t.http.patch(`${base()}/endpoints/${e.id}`).set(auth()).send({ trafficSplit });
    expect((await patch([{ deploymentId: d.id, weight: 5e9 }])).body.trafficSplit).toEqual([{ deploymentId: d.id, weight: 5e9 }]);
    expectError(await patch([{ deploymentId: d.id, weight: -1 }]), 400, { code: 'invalid_traffic_split', param: 'trafficSplit.0.weight' });
    const d2 = await createDeployment(e.id);
    expectError(
      await patch([
        { deploymentId: d.id, weight: 1.5e308 },
        { deploymentId: d2.id, weight: 1.5e308 },
      ]),
      400,
      { code: 'invalid_traffic_split', param: 'trafficSplit' },
    );
  });
});

describe('storage volumes', () => {
  test('a deployment mounts volumes by id or name (mounted_by names it) and releases them when deleted', async () => {
    const volumes = (await t.http.get('/v1/deployments/storage/volumes').set(auth())).body.data;
    expect(volumes.length).toBeGreaterThan(0);
    const v = volumes[0];
    const e = await createEndpoint();
    const before = await t.services.db.prisma.deployment.count();
    const unknown = await t.http
      .post(`${base()}/endpoints/${e.id}/deployments`)
      .set(auth())
      .send({ name: 'vol', model: MODEL, config: H100, autoscaling: { minReplicas: 1, maxReplicas: 1 }, volumes: [v.name, 'no-such-volume'] });
    expectError(unknown, 404, { param: 'volumes.1' });
    expect(await t.services.db.prisma.deployment.count()).toBe(before);

    const d = await createDeployment(e.id, { volumes: [v.name] });
    expect(d.volumes).toEqual([v.id]);
    const mounted = (await t.http.get(`/v1/deployments/storage/volumes/${v.id}`).set(auth())).body;
    expect(mounted.mounted_by).toContain(d.id);
    await t.http.delete(`${base()}/endpoints/${e.id}/deployments/${d.id}`).set(auth());
    expect((await t.http.get(`/v1/deployments/storage/volumes/${v.id}`).set(auth())).body.mounted_by).not.toContain(d.id);

    const deployed = await t.http
      .post(`${base()}/deploy`)
      .set(auth())
      .send({ endpointName: uniq('with-volume'), model: MODEL, config: H100, minReplicas: 1, maxReplicas: 1, volumes: [v.id] });
    expect(deployed.body.deployment.volumes).toEqual([v.id]);
    await t.http.delete(`${base()}/endpoints/${deployed.body.endpoint.id}`).set(auth());
    expect((await t.http.get(`/v1/deployments/storage/volumes/${v.id}`).set(auth())).body.mounted_by).toEqual([]);
  });
});

describe('the deployment transition table', () => {
  const states = deploymentMachine.states;
  const table = deploymentMachine.transitions as Record<string, Record<string, string> | undefined>;

  test("every (state, event) pair: the table's target, or 409 invalid_state_transition", () => {
    for (const from of states) {
      for (const event of deploymentMachine.events) {
        const to = table[from]?.[event];
        if (to) expect(deploymentMachine.next(from, event)).toBe(to);
        else expect(() => deploymentMachine.next(from, event)).toThrow(expect.objectContaining({ status: 409, code: 'invalid_state_transition', param: null }));
      }
    }
  });

  /**
   * A deployment put straight into `state` (with running replicas when READY or STOPPING). A STOPPED one keeps its
   * 0/0 bounds, as a caller stopped it (STOPPED with bounds that let it run is the autoscaler's scaled to zero).
   */
  async function inState(state: DeploymentState) {
    const e = await createEndpoint();
    const d = await createDeployment(e.id, { autoscaling: { minReplicas: 0, maxReplicas: 0 } });
    const running = state === 'DEPLOYMENT_STATE_READY' || state === 'DEPLOYMENT_STATE_STOPPING';
    const bounds = state === 'DEPLOYMENT_STATE_STOPPED' ? 0 : 1;
    await t.services.db.write(async (tx) => {
      await tx.deployment.update({
        where: { id: d.id },
        data: { state, minReplicas: bounds, maxReplicas: bounds, hardwareId: running ? '1x_nvidia_h100_80gb_sxm' : null, readyReplicas: running ? 1 : 0 },
      });
      if (running) {
        await tx.hardwareReservation.create({
          data: {
            id: `rsv_${d.id}`,
            projectId,
            hardwareId: '1x_nvidia_h100_80gb_sxm',
            gpus: 1,
            ownerKind: 'deployment',
            ownerId: d.id,
            startedAt: BigInt(t.clock.now()),
            centsPerMinute: 5.6,
          },
        });
      }
    });
    return { e, d };
  }

  // Callers cause `stop` (0/0 replicas) and `start` (positive replicas on a STOPPED, FAILED or STOPPING deployment).
  for (const from of states) {
    const to = table[from]?.stop;
    test(`${from} + stop (PATCH 0/0): ${to ?? '409'}`, async () => {
      const { e, d } = await inState(from);
      const res = await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 0, maxReplicas: 0 } });
      if (to) {
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.status.state).toBe(to);
      } else {
        expectError(res, 409, { code: 'invalid_state_transition' });
        expect((await getDeployment(e.id, d.id)).status.state).toBe(from);
      }
    });
  }
  for (const from of ['DEPLOYMENT_STATE_STOPPED', 'DEPLOYMENT_STATE_FAILED', 'DEPLOYMENT_STATE_STOPPING'] as const) {
    const to = table[from]?.start;
    test(`${from} + start (PATCH 1/1): ${to ?? '409'}`, async () => {
      const { e, d } = await inState(from);
      const res = await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 1, maxReplicas: 1 } });
      if (to) {
        expect(res.body.status.state).toBe(to);
        await t.advance(PROVISION_MS);
        expect((await getDeployment(e.id, d.id)).status.state).toBe('DEPLOYMENT_STATE_READY');
      } else {
        expectError(res, 409, { code: 'invalid_state_transition' });
      }
    });
  }

  // The runner causes `provisioned`/`failed` (only from PROVISIONING) and `stopped` (only from STOPPING); in any other
  // state its step leaves the deployment alone.
  for (const from of states) {
    test(`runner step on ${from}`, async () => {
      const { e, d } = await inState(from);
      await t.services.db.write((tx) => enqueue(tx, t.clock, { kind: deploymentMachine.kind, subjectId: d.id, projectId, payload: { state: from, epoch: 0 } }));
      await t.advance(0);
      const after = (await getDeployment(e.id, d.id)).status.state;
      const expected =
        from === 'DEPLOYMENT_STATE_PROVISIONING' ? 'DEPLOYMENT_STATE_READY' : from === 'DEPLOYMENT_STATE_STOPPING' ? 'DEPLOYMENT_STATE_STOPPED' : from;
      expect(after).toBe(expected);
      expect(await openReservations(d.id)).toBe(expected === 'DEPLOYMENT_STATE_READY' ? 1 : from === 'DEPLOYMENT_STATE_READY' ? 1 : 0);
    });
  }

  test("a runner item made stale by a caller's change does nothing", async () => {
    const e = await createEndpoint();
    const d = await createDeployment(e.id); // PROVISIONING, item due in 60 s with epoch 0
    await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 0, maxReplicas: 0 } }); // STOPPED, epoch 1
    await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 1, maxReplicas: 1 } }); // PROVISIONING, epoch 2, due in 60 s from now
    await t.advance(PROVISION_MS - 1);
    expect((await getDeployment(e.id, d.id)).status.state).toBe('DEPLOYMENT_STATE_PROVISIONING');
    await t.advance(1);
    expect((await getDeployment(e.id, d.id)).status.state).toBe('DEPLOYMENT_STATE_READY');
  });
});

describe('the official together-ai client on v2 (client.beta.endpoints, baseURL .../v2)', () => {
  test('lists, retrieves and updates endpoints and deployments', async () => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, projectID: projectId, maxRetries: 0 });
    const e = await createEndpoint();
    const d = await createDeployment(e.id);
    const listed: string[] = [];
    for await (const x of client.beta.endpoints.list()) listed.push(x.id);
    expect(listed).toContain(e.id);
    const got = await client.beta.endpoints.retrieve(e.id);
    expect(got.name).toBe(e.name);
    const routed = await client.beta.endpoints.update(e.id, {
      etag: got.etag,
      trafficSplit: [{ deploymentId: d.id, weight: 1 }],
      updateMask: 'trafficSplit',
    } as any);
    expect(routed.trafficSplit).toEqual([{ deploymentId: d.id, weight: 1 }]);
    const dep = await client.beta.endpoints.deployments.retrieve(d.id, { endpointId: e.id } as any);
    expect(dep.status.state).toBe('DEPLOYMENT_STATE_PROVISIONING');
    const err: any = await client.beta.endpoints.update(e.id, { etag: 'stale', visibility: 'VISIBILITY_INTERNAL' } as any).catch((x) => x);
    expect(err.status).toBe(409);
    expect(err.error.error.code).toBe('etag_mismatch');
  });
});

describe('durability', () => {
  test('provisioning survives a restart: a new server on the same database makes the deployment READY', async () => {
    const p = await startTestPlatform();
    try {
      const pid = p.caller.identity.projectId;
      const res = await p.caller.http
        .post(`/v2/projects/${pid}/deploy`)
        .send({ endpointName: 'survivor', model: MODEL, config: H100, minReplicas: 1, maxReplicas: 1 });
      const id = res.body.deployment.id;
      await p.restart();
      await p.advance(PROVISION_MS);
      expect((await p.caller.http.get(`/v2/projects/${pid}/endpoints/${res.body.endpoint.id}/deployments/${id}`)).body.status.state).toBe(
        'DEPLOYMENT_STATE_READY',
      );
      expect(await p.services.db.prisma.hardwareReservation.count({ where: { ownerId: id, endedAt: null } })).toBe(1);
    } finally {
      await p.close();
    }
  });

  test('two servers sharing the database provision each deployment exactly once', async () => {
    const one = await startTestPlatform();
    const two = await startPlatform(one.services.config, { clock: one.clock, log: createLogger('silent') });
    try {
      const pid = one.caller.identity.projectId;
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await one.http
          .post(`/v2/projects/${pid}/deploy`)
          .set('Authorization', `Bearer ${one.caller.key}`)
          .send({ endpointName: `pair-${i}`, model: MODEL, config: H100, minReplicas: 2, maxReplicas: 2 });
        ids.push(res.body.deployment.id);
      }
      one.clock.advance(PROVISION_MS);
      if (usingPostgres) await Promise.all([one.services.runner.drain(), two.services.runner.drain()]);
      else for (const runner of [two.services.runner, one.services.runner]) await runner.drain();
      for (const id of ids) {
        expect((await two.services.db.prisma.deployment.findUniqueOrThrow({ where: { id } })).state).toBe('DEPLOYMENT_STATE_READY');
        expect(await two.services.db.prisma.hardwareReservation.count({ where: { ownerId: id } })).toBe(2);
      }

      // Capacity holds under concurrency: 1x L40S has room for one replica, and four deployments race for it.
      const racers: string[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await one.http
          .post(`/v2/projects/${pid}/deploy`)
          .set('Authorization', `Bearer ${one.caller.key}`)
          .send({ endpointName: `race-${i}`, model: MODEL, config: L40S, minReplicas: 1, maxReplicas: 1 });
        racers.push(res.body.deployment.id);
      }
      one.clock.advance(PROVISION_MS);
      if (usingPostgres) await Promise.all([one.services.runner.drain(), two.services.runner.drain()]);
      else for (const runner of [two.services.runner, one.services.runner]) await runner.drain();
      const states = await Promise.all(racers.map(async (id) => (await two.services.db.prisma.deployment.findUniqueOrThrow({ where: { id } })).state));
      expect(states.filter((s) => s === 'DEPLOYMENT_STATE_READY')).toHaveLength(1);
      expect(states.filter((s) => s === 'DEPLOYMENT_STATE_FAILED')).toHaveLength(3);
      expect(await two.services.db.prisma.hardwareReservation.count({ where: { hardwareId: '1x_nvidia_l40s_48gb_pcie', endedAt: null } })).toBe(1);
    } finally {
      await two.close();
      await one.close();
    }
  });
});
