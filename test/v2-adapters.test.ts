// Adapters bound to a v2 deployment (spec/tags/dedicated.yaml, **Bound adapters**), driven through the official
// client's `beta.endpoints.adapters.*` (together-ai 0.52.0) on `<server>/v2`, and chat on the bound adapter.
//
// | SDK method                                               | HTTP sent                                        | operationId             |
// |----------------------------------------------------------|--------------------------------------------------|-------------------------|
// | beta.endpoints.adapters.create({endpointId, deploymentId, ...}) | POST .../deployments/{d}/adapters         | addDeploymentAdapter    |
// | beta.endpoints.adapters.list(endpointId, deploymentId, {limit?}) | GET .../deployments/{d}/adapters          | listDeploymentAdapters  |
// | beta.endpoints.adapters.retrieve(id, {endpointId, deploymentId}) | GET .../deployments/{d}/adapters/{id}     | getDeploymentAdapter    |
// | beta.endpoints.adapters.update(id, {..., adapterRevisionId, etag}) | PATCH .../deployments/{d}/adapters/{id} | updateDeploymentAdapter |
// | beta.endpoints.adapters.delete(id, {..., etag})          | DELETE .../deployments/{d}/adapters/{id}?etag=   | removeDeploymentAdapter |
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { revisionOf } from '../server/modules/dedicated/refs.ts';
import { H100, insertUpload, MODEL, PROVISION_MS } from './support/endpoints.ts';
import { expectError, refusal } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let v2: Together;
let n = 0;
const uniq = (prefix: string) => `${prefix}-${++n}`;
const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });

beforeAll(async () => {
  t = await startTestPlatform();
  v2 = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, projectID: t.caller.identity.projectId, maxRetries: 0 });
});
afterAll(() => t?.close());

/** An endpoint routed wholly to one deployment without LoRA enabled, READY. */
async function routedDeployment(body: Record<string, unknown> = {}) {
  const e = await v2.beta.endpoints.create({ name: uniq('ep') });
  const d = await v2.beta.endpoints.deployments.create(e.id, {
    name: uniq('dep'),
    model: MODEL,
    config: H100,
    autoscaling: { minReplicas: 1, maxReplicas: 1 },
    ...body,
  } as any);
  await v2.beta.endpoints.update(e.id, { trafficSplit: [{ deploymentId: d.id, weight: 1 }] } as any);
  return { e, d };
}

const chat = (model: string) =>
  t.http
    .post('/v1/chat/completions')
    .set(auth())
    .send({ model, messages: [{ role: 'user', content: 'hi' }] });

describe('adapters bound to a v2 deployment', () => {
  test('bind, read, list, re-pin and unbind through the official client; chat serves the adapter only while bound', async () => {
    const { e, d } = await routedDeployment();
    const adapter = await insertUpload(t, t.caller.identity.projectId, { modelType: 'adapter', name: uniq('lora'), base: MODEL });
    await t.advance(PROVISION_MS);
    const where = { endpointId: e.id, deploymentId: d.id };
    const address = `${e.name}:${adapter.name}`;

    // Not bound, LoRA not enabled: nothing serves it.
    expectError(await chat(address), 400, { code: 'lora_not_enabled', param: 'model' });

    const bound = await v2.beta.endpoints.adapters.create({ ...where, adapterModelId: adapter.name });
    const model = `projects/${t.caller.identity.projectId}/models/${adapter.id}`;
    const revision = revisionOf(adapter.id);
    expect(bound).toMatchObject({
      adapterModelId: adapter.id,
      adapterModel: model,
      desiredRevisionId: revision,
      desiredRevision: `${model}/revisions/${revision}`,
      perCluster: [
        {
          adapterModelId: adapter.id,
          clusterId: 'local',
          state: 'ADAPTER_LOAD_STATE_READY',
          readyPodCount: 1,
          failedPodCount: 0,
          totalPodCount: 1,
          realizedRevisionId: revision,
          realizedEtag: bound.etag,
        },
      ],
    });
    for (const name of [address, `${e.name}/${d.name}:${adapter.id}`]) {
      const res = await chat(name);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers['x-served-by']).toBe(d.id);
      expect(res.body.choices[0].message.content).toContain(`with the LoRA adapter ${adapter.name}`);
    }

    expect(await v2.beta.endpoints.adapters.retrieve(adapter.id, where)).toEqual(bound);
    expect(await v2.beta.endpoints.adapters.retrieve(adapter.name, where)).toEqual(bound);
    const listed = [];
    for await (const a of v2.beta.endpoints.adapters.list(e.id, d.id)) listed.push(a);
    expect(listed).toEqual([bound]);

    // Binding it again is 409 unless forced (then the binding there is); a stale etag is refused.
    const again = await refusal(v2.beta.endpoints.adapters.create({ ...where, adapterModelId: adapter.id }));
    expect(again.status).toBe(409);
    expect(again.error.error).toMatchObject({ code: 'adapter_already_bound', param: 'adapterModelId' });
    expect(await v2.beta.endpoints.adapters.create({ ...where, adapterModelId: adapter.id, force: true })).toEqual(bound);
    const stale = await refusal(v2.beta.endpoints.adapters.update(adapter.id, { ...where, adapterRevisionId: revision, etag: 'stale' }));
    expect(stale.error.error).toMatchObject({ code: 'etag_mismatch' });
    const badRevision = await refusal(v2.beta.endpoints.adapters.update(adapter.id, { ...where, adapterRevisionId: 'rev_other', etag: bound.etag }));
    expect(badRevision.error.error).toMatchObject({ code: 'revision_not_found', param: 'adapterRevisionId' });
    const repinned = await v2.beta.endpoints.adapters.update(adapter.id, { ...where, adapterRevisionId: revision, etag: bound.etag });
    expect(repinned.etag).not.toBe(bound.etag);
    expect((await refusal(v2.beta.endpoints.adapters.delete(adapter.id, { ...where, etag: bound.etag }))).status).toBe(409);

    expect(await v2.beta.endpoints.adapters.delete(adapter.id, { ...where, etag: repinned.etag })).toEqual({});
    expectError(await chat(address), 400, { code: 'lora_not_enabled', param: 'model' });
    expectError(await chat(`${e.name}/${d.name}:${adapter.name}`), 400, { code: 'lora_not_enabled', param: 'model' });
    expect((await v2.beta.endpoints.adapters.list(e.id, d.id)).data).toEqual([]);
    const gone = await refusal(v2.beta.endpoints.adapters.retrieve(adapter.id, where));
    expect(gone).toBeInstanceOf(Together.NotFoundError);
    expect(gone.error.error).toMatchObject({ code: 'not_found', param: 'id' });
  });

  test("an adapter must fit the deployment's model (400 naming adapterModelId); an unknown one is 404; a revision must be the adapter's", async () => {
    const { e, d } = await routedDeployment();
    const qwen = await insertUpload(t, t.caller.identity.projectId, {
      modelType: 'adapter',
      name: uniq('qwen-lora'),
      architecture: 'qwen2.5-7b',
      base: 'Qwen/Qwen2.5-7B-Instruct',
    });
    const url = `/v2/projects/${t.caller.identity.projectId}/endpoints/${e.id}/deployments/${d.id}/adapters`;
    expectError(await t.http.post(url).set(auth()).send({ adapterModelId: qwen.id }), 400, { code: 'adapter_base_mismatch', param: 'adapterModelId' });
    expectError(await t.http.post(url).set(auth()).send({ adapterModelId: 'no-such-adapter' }), 404, { code: 'adapter_not_found', param: 'adapterModelId' });
    const pending = await insertUpload(t, t.caller.identity.projectId, { modelType: 'adapter', name: uniq('lora'), status: 'processing' });
    expectError(await t.http.post(url).set(auth()).send({ adapterModelId: pending.id }), 404, { code: 'adapter_not_found', param: 'adapterModelId' });
    const ok = await insertUpload(t, t.caller.identity.projectId, { modelType: 'adapter', name: uniq('lora') });
    expectError(await t.http.post(url).set(auth()).send({ adapterModelId: ok.id, adapterRevisionId: 'rev_other' }), 400, {
      code: 'revision_not_found',
      param: 'adapterRevisionId',
    });
    // Before its replicas are READY the binding is PENDING; by resource name with its revision it binds too.
    const res = await t.http
      .post(url)
      .set(auth())
      .send({ adapterModelId: `projects/${t.caller.identity.projectId}/models/${ok.id}`, adapterRevisionId: revisionOf(ok.id) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.perCluster).toEqual([
      expect.objectContaining({ state: 'ADAPTER_LOAD_STATE_PENDING', readyPodCount: 0, totalPodCount: 1, clusterId: 'local' }),
    ]);
    expect(res.body.perCluster[0].realizedRevisionId).toBeUndefined();
    expectError(await t.http.get(`${url}/no-such-adapter`).set(auth()), 404, { code: 'not_found', param: 'id' });
  });

  test('the list pages in binding order; deleting the deployment removes its bindings', async () => {
    const { e, d } = await routedDeployment();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const a = await insertUpload(t, t.caller.identity.projectId, { modelType: 'adapter', name: uniq('lora') });
      await v2.beta.endpoints.adapters.create({ endpointId: e.id, deploymentId: d.id, adapterModelId: a.id });
      ids.push(a.id);
    }
    const first = await v2.beta.endpoints.adapters.list(e.id, d.id, { limit: 2 });
    expect(first.data.map((a) => a.adapterModelId)).toEqual(ids.slice(0, 2));
    const seen: string[] = [];
    for await (const a of v2.beta.endpoints.adapters.list(e.id, d.id, { limit: 2 })) seen.push(a.adapterModelId);
    expect(seen).toEqual(ids);

    await v2.beta.endpoints.update(e.id, { trafficSplit: [] } as any);
    const { etag } = await v2.beta.endpoints.deployments.retrieve(d.id, { endpointId: e.id } as any);
    await v2.beta.endpoints.deployments.delete(d.id, { endpointId: e.id, etag } as any);
    expect(await t.services.db.prisma.deploymentAdapter.count({ where: { deploymentId: d.id } })).toBe(0);
  });
});
