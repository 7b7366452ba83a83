// LoRA adapters on dedicated endpoints: bind, list, unbind with the public platform's statuses, through
// the official together-ai client, and chat on `<endpoint>:<adapter>`.
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { insertUpload, insertV1Endpoint, seededV1Endpoints } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let client: Together;
const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });

beforeAll(async () => {
  t = await startTestPlatform();
  client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
});
afterAll(() => t?.close());

const seededRunning = async () => {
  const { running } = await seededV1Endpoints(t);
  return (await client.endpoints.list()).data.find((e) => e.id === running.id)!;
};

describe('adapters through the together-ai client', () => {
  test('add, list, chat on <endpoint>:<adapter>, remove', async () => {
    const ep = await seededRunning();
    const adapter = await insertUpload(t, t.caller.identity.projectId, { name: 'support-tone', modelType: 'adapter', base: ep.model });
    expect(await client.endpoints.adapters.list(ep.id)).toEqual({ object: 'list', data: [] });

    const modelId = `${ep.name}:support-tone`;
    expect(await client.endpoints.adapters.add(ep.id, { model_id: modelId })).toEqual({ model_id: modelId });
    // Binding by the adapter's id names it by its name; a second bind is not an error.
    expect(await client.endpoints.adapters.add(ep.id, { model_id: `${ep.name}:${adapter.id}` })).toEqual({ model_id: modelId });
    expect(await client.endpoints.adapters.list(ep.id)).toEqual({
      object: 'list',
      data: [{ model_id: modelId, adapter_name: 'support-tone', endpoint_name: ep.name }],
    });

    const chat = await client.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'Hello adapter' }] });
    expect(chat.model).toBe(modelId);
    expect(chat.choices[0]!.message!.content).toContain('with the LoRA adapter support-tone');
    expect(chat.choices[0]!.message!.content).toContain('Hello adapter');

    expect(await client.endpoints.adapters.remove(ep.id, { model_id: modelId })).toEqual({ model_id: modelId, deleted: true });
    expect((await client.endpoints.adapters.list(ep.id)).data).toEqual([]);
    const gone: any = await client.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(gone).toBeInstanceOf(Together.NotFoundError);
    expect(gone.error.error.code).toBe('model_not_found');
  });

  test("403 for an adapter that is not the caller's ready adapter, as PermissionDeniedError", async () => {
    const ep = await seededRunning();
    const theirs = await insertUpload(t, t.other.identity.projectId, { name: 'their-adapter', modelType: 'adapter', base: ep.model });
    const pending = await insertUpload(t, t.caller.identity.projectId, { modelType: 'adapter', base: ep.model, status: 'pending' });
    const full = await insertUpload(t, t.caller.identity.projectId, { modelType: 'model' });
    for (const ref of ['no-such-adapter', theirs.id, 'their-adapter', pending.name, full.name]) {
      const err: any = await client.endpoints.adapters.add(ep.id, { model_id: `${ep.name}:${ref}` }).catch((e) => e);
      expect(err, ref).toBeInstanceOf(Together.PermissionDeniedError);
      expect(err.error.error).toMatchObject({ code: 'adapter_not_found', param: 'model_id' });
    }
    const res = await t.http
      .delete(`/v1/endpoints/${ep.id}/adapters`)
      .set(auth())
      .send({ model_id: `${ep.name}:no-such-adapter` });
    expectError(res, 403, { code: 'adapter_not_found', param: 'model_id' });
  });
});

describe('names as the platform forms them', () => {
  test('an adapter named `<user>/<name>` on an endpoint named `<user>/<model>-<hash>`: bind, list, chat, remove', async () => {
    const ep = await seededRunning();
    expect(ep.name).toMatch(/^default\/Meta-Llama-3\.1-8B-Instruct-[0-9a-f]{6}$/);
    const adapter = await insertUpload(t, t.caller.identity.projectId, { name: 'default/support-adapter-abc123', modelType: 'adapter', base: ep.model });
    const modelId = `${ep.name}:${adapter.name}`;
    expect(await client.endpoints.adapters.add(ep.id, { model_id: modelId })).toEqual({ model_id: modelId });
    expect((await client.endpoints.adapters.list(ep.id)).data).toContainEqual({ model_id: modelId, adapter_name: adapter.name, endpoint_name: ep.name });
    const chat = await client.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.model).toBe(modelId);
    expect(await client.endpoints.adapters.remove(ep.id, { model_id: modelId })).toEqual({ model_id: modelId, deleted: true });
  });

  test('an adapter for another served model of the same architecture fits: `base_model` ...-Reference on a Meta-Llama-3.1-8B-Instruct endpoint', async () => {
    const ep = await seededRunning();
    const reference = await insertUpload(t, t.caller.identity.projectId, {
      modelType: 'adapter',
      base: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference',
      architecture: 'llama-3.1-8b',
    });
    const modelId = `${ep.name}:${reference.name}`;
    expect(await client.endpoints.adapters.add(ep.id, { model_id: modelId })).toEqual({ model_id: modelId });
    expect(await client.endpoints.adapters.remove(ep.id, { model_id: modelId })).toEqual({ model_id: modelId, deleted: true });
  });

  test('model_id has no length limit: a long one is read (and refused for what it names), not cut off by the contract', async () => {
    const ep = await seededRunning();
    const long = `${ep.name}:${'a'.repeat(2_000)}`;
    expectError(await t.http.post(`/v1/endpoints/${ep.id}/adapters`).set(auth()).send({ model_id: long }), 403, {
      code: 'adapter_not_found',
      param: 'model_id',
    });
    expectError(await t.http.post(`/v1/endpoints/${ep.id}/adapters`).set(auth()).send({ model_id: '' }), 400, { code: 'invalid_model_id', param: 'model_id' });
    expectError(await t.http.get(`/v1/endpoints/endpoint-${'0'.repeat(200)}/adapters`).set(auth()), 404, { param: 'endpointId' });
  });
});

describe('statuses of the public platform', () => {
  test('400: bad format, endpoint name mismatch, base mismatch, not bound', async () => {
    const ep = await seededRunning();
    const wrongBase = await insertUpload(t, t.caller.identity.projectId, {
      modelType: 'adapter',
      base: 'Qwen/Qwen2.5-7B-Instruct',
      architecture: 'qwen2.5-7b',
    });
    const fits = await insertUpload(t, t.caller.identity.projectId, { modelType: 'adapter', base: ep.model });
    const add = (model_id: string) => t.http.post(`/v1/endpoints/${ep.id}/adapters`).set(auth()).send({ model_id });
    for (const bad of ['no-colon-here', `${ep.name}:`, `:${fits.name}`]) expectError(await add(bad), 400, { code: 'invalid_model_id', param: 'model_id' });
    expectError(await add(`default/another-endpoint:${fits.name}`), 400, { code: 'endpoint_name_mismatch', param: 'model_id' });
    expectError(await add(`${ep.name}:${wrongBase.name}`), 400, { code: 'adapter_base_mismatch', param: 'model_id' });
    const unbound = await t.http
      .delete(`/v1/endpoints/${ep.id}/adapters`)
      .set(auth())
      .send({ model_id: `${ep.name}:${fits.name}` });
    expectError(unbound, 400, { code: 'adapter_not_bound', param: 'model_id' });
    expectError(await t.http.delete(`/v1/endpoints/${ep.id}/adapters`).set(auth()).send({ model_id: 'nope' }), 400, { code: 'invalid_model_id' });
    expect((await client.endpoints.adapters.list(ep.id)).data).toEqual([]);
  });

  test('404: no such endpoint (the SDK raises NotFoundError)', async () => {
    for (const call of [
      () => client.endpoints.adapters.list('endpoint-nope'),
      () => client.endpoints.adapters.add('endpoint-nope', { model_id: 'a:b' }),
      () => client.endpoints.adapters.remove('endpoint-nope', { model_id: 'a:b' }),
    ]) {
      const err: any = await call().catch((e) => e);
      expect(err).toBeInstanceOf(Together.NotFoundError);
    }
  });

  test('an adapter of a LoRA pool model fits an endpoint serving that pool model; chat answers 503 once the endpoint stops', async () => {
    const ep = await insertV1Endpoint(t, t.caller.identity.projectId, { model: 'meta-llama/Llama-3.3-70B-Instruct', hardware: '2x_nvidia_h100_80gb_sxm' });
    const pooled = await insertUpload(t, t.caller.identity.projectId, { modelType: 'adapter', base: 'meta-llama/Llama-3.3-70B-Instruct-Turbo' });
    await t.services.db.write((tx) => tx.model.update({ where: { id: pooled.id }, data: { loraModel: 'meta-llama/Llama-3.3-70B-Instruct' } }));
    const name = `default/${ep.name}`;
    expect(await client.endpoints.adapters.add(ep.id, { model_id: `${name}:${pooled.name}` })).toEqual({ model_id: `${name}:${pooled.name}` });
    await client.endpoints.update(ep.id, { state: 'STOPPED' });
    const err: any = await client.chat.completions.create({ model: `${name}:${pooled.name}`, messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
    expect(err.status).toBe(503);
    expect(err.error.error.code).toBe('endpoint_not_ready');
    // Deleting the endpoint drops its bindings.
    await client.endpoints.delete(ep.id);
    expect(await t.services.db.prisma.adapterBinding.count({ where: { endpointId: ep.id } })).toBe(0);
  });
});
