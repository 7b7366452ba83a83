// The requirements' v2 migration for an uploaded model and a deployment that sleeps: step 1 (choose a model id and a
// config id) lists the base architecture's configs for an upload, by its id or its name, and a deployment scaled to
// zero answers the request that wakes it with a 503 saying so and a Retry-After for when it will be ready.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TICK_MS } from '../server/modules/dedicated/autoscaling.ts';
import { H100, insertUpload, L40S, MODEL, PROVISION_MS, STOP_MS } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const base = () => `/v2/projects/${t.caller.identity.projectId}`;
const chat = (model: string) => t.caller.http.post('/v1/chat/completions').send({ model, messages: [{ role: 'user', content: 'hi' }] });

describe('configs for an uploaded model', () => {
  test("by its ml_ id or its name: its base architecture's configs, one of which deploys it", async () => {
    const upload = await insertUpload(t, t.caller.identity.projectId, { name: 'acme/llama-ft' });
    const ids = async (query: Record<string, string>) =>
      ((await t.caller.http.get(`${base()}/configs`).query(query)).body.data as { id: string }[]).map((c) => c.id);
    const published = await ids({ referenceModelId: MODEL });
    expect(published).toEqual(expect.arrayContaining([H100, L40S]));
    // Those of every catalogue model of its architecture (llama-3.1-8b), by any of its names.
    const forUpload = await ids({ referenceModelId: upload.id });
    expect(forUpload).toEqual(expect.arrayContaining(published));
    expect(await ids({ referenceModel: `projects/${t.caller.identity.projectId}/models/${upload.id}` })).toEqual(forUpload);
    expect(await ids({ referenceModelId: 'acme/llama-ft' })).toEqual(forUpload);
    // Another project's upload is not the caller's to list by.
    expect(await ids({ referenceModelId: (await insertUpload(t, t.other.identity.projectId)).id })).toEqual([]);

    const deployed = await t.caller.http
      .post(`${base()}/deploy`)
      .send({ endpointName: 'ft-ep', model: upload.id, config: forUpload[0], minReplicas: 1, maxReplicas: 1 });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(202);
  });
});

describe('a deployment scaled to zero', () => {
  test('the request that wakes it answers 503 saying so, with Retry-After for when it will be ready', async () => {
    const e = (await t.caller.http.post(`${base()}/endpoints`).send({ name: 'sleepy' })).body;
    const d = (
      await t.caller.http
        .post(`${base()}/endpoints/${e.id}/deployments`)
        .send({ name: 'only', model: MODEL, config: H100, autoscaling: { minReplicas: 0, maxReplicas: 1, scaleToZeroWindow: '30s' } })
    ).body;
    await t.caller.http.patch(`${base()}/endpoints/${e.id}`).send({ trafficSplit: [{ deploymentId: d.id, weight: 1 }] });
    await t.advance(PROVISION_MS);
    const state = async () => (await t.caller.http.get(`${base()}/endpoints/${e.id}/deployments/${d.id}`)).body.status.state;
    for (let i = 0; i < 6 && (await state()) !== 'DEPLOYMENT_STATE_STOPPED'; i++) await t.advance(TICK_MS + STOP_MS);
    expect(await state()).toBe('DEPLOYMENT_STATE_STOPPED');

    const woke = await chat(e.name);
    expectError(woke, 503, { code: 'endpoint_not_ready', param: 'model' });
    expect(woke.body.error.message).toMatch(/is waking: it was scaled to zero replicas and this request started it; it should be ready in about 60 s/);
    expect(woke.headers['retry-after']).toBe(String(PROVISION_MS / 1000));
    // Once provisioning is under way, what is left of it.
    await t.advance(0);
    expect(await state()).toBe('DEPLOYMENT_STATE_PROVISIONING');
    await t.advance(PROVISION_MS - 20_000);
    const later = await chat(e.name);
    expectError(later, 503, { code: 'endpoint_not_ready' });
    expect(later.headers['retry-after']).toBe('20');
    await t.advance(20_000);
    expect((await chat(e.name)).status).toBe(200);

    // Stopped for good (0/0): nothing is on its way, so no Retry-After.
    await t.caller.http.patch(`${base()}/endpoints/${e.id}/deployments/${d.id}`).send({ autoscaling: { minReplicas: 0, maxReplicas: 0 } });
    await t.advance(STOP_MS);
    const stopped = await chat(e.name);
    expectError(stopped, 503, { code: 'endpoint_not_ready' });
    expect(stopped.headers['retry-after']).toBeUndefined();
  });
});
