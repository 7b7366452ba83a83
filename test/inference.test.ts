// Dedicated inference (`model` = `<project_slug>/<endpoint_name>`): POST /v1/chat/completions routed to a READY
// deployment by the traffic split's weights (deterministically), to a running v1 endpoint, or to a serverless chat
// model, answered by the local chat engine in the shape the official openai and together-ai clients parse.
import OpenAI from 'openai';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { countTokens } from '../server/engines/tokens.ts';
import { pickByWeight } from '../server/modules/dedicated/traffic.ts';
import { H100 as CONFIG, insertUpload, MODEL, PROVISION_MS, seededV1Endpoints } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let openai: OpenAI;
let together: Together;
let projectId: string;
const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });
const chat = (body: object) => t.http.post('/v1/chat/completions').set(auth()).send(body);
const hi = [{ role: 'user', content: 'Hello there' }];

beforeAll(async () => {
  t = await startTestPlatform();
  projectId = t.caller.identity.projectId;
  openai = new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
  together = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
});
afterAll(() => t?.close());

async function deploy(endpointName: string) {
  const res = await t.http
    .post(`/v2/projects/${projectId}/deploy`)
    .set(auth())
    .send({ endpointName, model: MODEL, config: CONFIG, minReplicas: 1, maxReplicas: 1 });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body as { endpoint: { id: string; name: string }; deployment: { id: string } };
}

async function addDeployment(endpointId: string, name: string) {
  const res = await t.http
    .post(`/v2/projects/${projectId}/endpoints/${endpointId}/deployments`)
    .set(auth())
    .send({ name, model: MODEL, config: CONFIG, autoscaling: { minReplicas: 1, maxReplicas: 1 } });
  return res.body as { id: string };
}

const route = (endpointId: string, trafficSplit: object[]) =>
  t.http.patch(`/v2/projects/${projectId}/endpoints/${endpointId}`).set(auth()).send({ trafficSplit });

describe('a v2 endpoint', () => {
  test('answers 503 endpoint_not_ready while provisioning, then the official clients get the chat shape', async () => {
    const { endpoint, deployment } = await deploy('chat-app');
    expect(endpoint.name).toBe('default/chat-app');
    expectError(await chat({ model: 'default/chat-app', messages: hi }), 503, { code: 'endpoint_not_ready', param: 'model' });
    await t.advance(PROVISION_MS);

    const { data, response } = await openai.chat.completions
      .create({ model: 'default/chat-app', messages: [{ role: 'user', content: 'Hello there' }] })
      .withResponse();
    expect(response.headers.get('x-served-by')).toBe(deployment.id);
    expect(data).toMatchObject({ object: 'chat.completion', model: 'default/chat-app', system_fingerprint: 'local-chat-engine-2' });
    expect(response.headers.get('x-inference-engine')).toBe('local');
    expect(data.id).toMatch(/^chatcmpl_/);
    expect(data.choices).toHaveLength(1);
    const text = data.choices[0]!.message.content!;
    expect(text).toMatch(/local chat engine/);
    expect(text).toContain(MODEL);
    expect(text).toContain('"Hello there"');
    expect(data.choices[0]!.finish_reason).toBe('stop');
    const prompt = countTokens('user: Hello there');
    expect(data.usage).toEqual({ prompt_tokens: prompt, completion_tokens: countTokens(text), total_tokens: prompt + countTokens(text) });

    const again = await together.chat.completions.create({ model: 'default/chat-app', messages: [{ role: 'user', content: 'Hello there' }] });
    expect(again.choices[0]!.message!.content).toBe(text); // deterministic
    expect(again.usage!.total_tokens).toBe(data.usage!.total_tokens);
  });

  test('weights route deterministically; a READY deployment gets nothing until the split routes to it', async () => {
    const { endpoint, deployment: blue } = await deploy('weighted');
    const green = await addDeployment(endpoint.id, 'green');
    await t.advance(PROVISION_MS);
    const servedBy = async () => (await chat({ model: 'default/weighted', messages: hi })).headers['x-served-by'];

    // green is READY but unrouted.
    for (let i = 0; i < 10; i++) expect(await servedBy()).toBe(blue.id);

    await route(endpoint.id, [
      { deploymentId: blue.id, weight: 70 },
      { deploymentId: green.id, weight: 30 },
    ]);
    const counts = new Map<string, number>();
    const sequence: string[] = [];
    for (let i = 0; i < 100; i++) {
      const id = await servedBy();
      sequence.push(id);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    expect(Math.abs(counts.get(blue.id)! - 70)).toBeLessThanOrEqual(2);
    expect(Math.abs(counts.get(green.id)! - 30)).toBeLessThanOrEqual(2);
    // The same rule, from the same position (10 requests already routed), gives the same sequence.
    const entries = [
      { deploymentId: blue.id, weight: 70 },
      { deploymentId: green.id, weight: 30 },
    ];
    expect(sequence).toEqual(Array.from({ length: 100 }, (_, i) => pickByWeight(entries, 11 + i)));
    const share = (await t.http.get(`/v2/projects/${projectId}/endpoints/${endpoint.id}`).set(auth())).body.deployments;
    expect(Object.fromEntries(share.map((d: any) => [d.id, d.estimatedEffectiveTrafficShare]))).toEqual({ [blue.id]: 0.7, [green.id]: 0.3 });

    // Weight 0 sends nothing; stopping the only routed deployment leaves nothing READY to serve.
    await route(endpoint.id, [
      { deploymentId: blue.id, weight: 0 },
      { deploymentId: green.id, weight: 1 },
    ]);
    for (let i = 0; i < 5; i++) expect(await servedBy()).toBe(green.id);
    await t.http
      .patch(`/v2/projects/${projectId}/endpoints/${endpoint.id}/deployments/${green.id}`)
      .set(auth())
      .send({ autoscaling: { minReplicas: 0, maxReplicas: 0 } });
    expectError(await chat({ model: 'default/weighted', messages: hi }), 503, { code: 'endpoint_not_ready' });
    await route(endpoint.id, []);
    expectError(await chat({ model: 'default/weighted', messages: hi }), 503, { code: 'endpoint_not_ready' });

    // A deployment's own inference name bypasses the split, still only while READY.
    const direct = await chat({ model: 'default/weighted/primary', messages: hi });
    expect(direct.status).toBe(200);
    expect(direct.headers['x-served-by']).toBe(blue.id);
    expectError(await chat({ model: 'default/weighted/green', messages: hi }), 503, { code: 'endpoint_not_ready' });
    expectError(await chat({ model: 'default/weighted/absent', messages: hi }), 404, { code: 'model_not_found' });
  });
});

describe('v1 endpoints and serverless models', () => {
  test('the seeded running v1 endpoint serves; the stopped one answers 503', async () => {
    const list = (await t.api.GET('/v1/endpoints')).data!.data;
    const running = list.find((e) => e.state === 'STARTED')!;
    const res = await together.chat.completions.create({ model: running.name, messages: [{ role: 'user', content: 'ping' }] }).withResponse();
    expect(res.response.headers.get('x-served-by')).toBe(running.id);
    expect(res.data.choices[0]!.message!.content).toContain(running.model);
    const stopped = list.find((e) => e.state === 'STOPPED')!;
    const err: any = await openai.chat.completions.create({ model: stopped.name, messages: [{ role: 'user', content: 'ping' }] }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(503);
    expect(err.code).toBe('endpoint_not_ready');
  });

  test('a serverless chat model answers through the same engine; a model of another type is 400, unknown names 404 model_not_found', async () => {
    const res = await chat({ model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', messages: hi });
    expect(res.status).toBe(200);
    expect(res.headers['x-served-by']).toBe('serverless');
    expectError(await chat({ model: 'BAAI/bge-base-en-v1.5', messages: hi }), 400, { code: 'model_not_supported', param: 'model' });
    for (const model of ['default/no-such-endpoint', 'other-project/chat-app', 'default/a/b/c']) {
      expectError(await chat({ model, messages: hi }), 404, { code: 'model_not_found', param: 'model' });
    }
    const err: any = await openai.chat.completions.create({ model: 'nope/nope', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.param).toBe('model');
  });

  test('a listed model that is not served serverless answers 400 model_not_available on every inference operation, saying how to run it', async () => {
    const complete = (body: object) => t.http.post('/v1/completions').set(auth()).send(body);
    const listed = (await t.http.get('/v1/models').set(auth())).body as { id: string; type: string }[];
    const dedicatedOnly = [
      'Qwen/Qwen2.5-72B-Instruct',
      'meta-llama/Llama-3.3-70B-Instruct',
      'meta-llama/Meta-Llama-3.1-8B-Instruct',
      'Qwen/Qwen2.5-7B-Instruct',
      'mistralai/Mistral-7B-Instruct-v0.3',
    ];
    expect(listed.map((m) => m.id)).toEqual(expect.arrayContaining(dedicatedOnly));
    for (const model of dedicatedOnly) {
      for (const res of [await chat({ model, messages: hi }), await complete({ model, prompt: 'x' })]) {
        expectError(res, 400, { type: 'invalid_request_error', code: 'model_not_available', param: 'model' });
        expect(res.body.error.message).toBe(
          `Unable to access non-serverless model '${model}': it is not served serverless, only on a dedicated endpoint. Deploy it on one (POST /v2/projects/{projectId}/deploy) and send the endpoint as the model: 'default/<endpoint_name>'.`,
        );
      }
      // Embeddings and rerank say so too (it is not of their type either).
      expectError(await t.http.post('/v1/embeddings').set(auth()).send({ model, input: 'x' }), 400, { code: 'model_not_available', param: 'model' });
      expectError(
        await t.http
          .post('/v1/rerank')
          .set(auth())
          .send({ model, query: 'x', documents: ['y'] }),
        400,
        { code: 'model_not_available', param: 'model' },
      );
    }
    // Every chat model the list shows is either served serverless or says why not: none is an unknown name.
    for (const m of listed.filter((x) => x.type === 'chat')) {
      const res = await chat({ model: m.id, messages: hi, max_tokens: 1 });
      expect([200, 400], `${m.id}: ${JSON.stringify(res.body)}`).toContain(res.status);
      if (res.status === 400) expect(res.body.error.code).toBe('model_not_available');
    }
    // The project's own upload is listed, and runs only on a dedicated endpoint.
    const upload = await insertUpload(t, projectId);
    expectError(await chat({ model: upload.id, messages: hi }), 400, { code: 'model_not_available', param: 'model' });
    expectError(await chat({ model: (await insertUpload(t, t.other.identity.projectId)).id, messages: hi }), 404, { code: 'model_not_found', param: 'model' });

    const viaOpenAI: any = await openai.chat.completions
      .create({ model: 'Qwen/Qwen2.5-72B-Instruct', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(viaOpenAI).toBeInstanceOf(OpenAI.BadRequestError);
    expect(viaOpenAI).toMatchObject({ status: 400, code: 'model_not_available', type: 'invalid_request_error', param: 'model' });
    const viaTogether: any = await together.completions.create({ model: 'Qwen/Qwen2.5-72B-Instruct', prompt: 'x' }).catch((e) => e);
    expect(viaTogether).toBeInstanceOf(Together.BadRequestError);
    expect(viaTogether.error.error.code).toBe('model_not_available');
  });

  test("another project's endpoint is not addressable, even by its own name", async () => {
    const other = t.other.identity;
    await t.other.api.POST('/v2/projects/{projectId}/deploy', {
      params: { path: { projectId: other.projectId } },
      body: { endpointName: 'theirs', model: MODEL, config: CONFIG, minReplicas: 1, maxReplicas: 1 },
    });
    await t.advance(PROVISION_MS);
    expect(
      (await t.other.api.POST('/v1/chat/completions', { body: { model: `${other.projectSlug}/theirs`, messages: [{ role: 'user', content: 'x' }] } })).response
        .status,
    ).toBe(200);
    expectError(await chat({ model: `${other.projectSlug}/theirs`, messages: hi }), 404, { code: 'model_not_found' });
  });
});

describe('the request', () => {
  const model = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';

  test('max_tokens truncates (finish_reason length), stop cuts, n gives choices, parts are read', async () => {
    const short = await chat({ model, messages: hi, max_tokens: 5 });
    expect(short.body.choices[0].finish_reason).toBe('length');
    expect(short.body.usage.completion_tokens).toBe(5);
    expect(short.body.choices[0].message.content).toBe('[local engine] This'); // [ local engine ] This

    const cut = await chat({ model, messages: hi, stop: ['engine'] });
    expect(cut.body.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant', content: '[local ' } });

    const many = await chat({
      model,
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Part one' },
            { type: 'text', text: 'part two' },
          ],
        },
      ],
      n: 3,
      seed: 7,
    });
    expect(many.body.choices.map((c: any) => c.index)).toEqual([0, 1, 2]);
    expect(many.body.choices[2].message.content).toContain('"Part one\npart two" (choice 3 of 3)');
    expect(many.body.choices[0].seed).toBe(7);
    expect(many.body.usage.prompt_tokens).toBe(countTokens('system: Be brief.\nuser: Part one\npart two'));
  });

  test('malformed requests name the field', async () => {
    expect((await chat({ model, messages: hi, stream: false })).status).toBe(200);
    expectError(await chat({ model, messages: [] }), 400, { param: 'messages', code: 'minItems' });
    expectError(await chat({ model, messages: hi, temperature: 'hot' }), 400, { param: 'temperature', code: 'type' });
    expectError(await chat({ messages: hi }), 400, { param: 'model', code: 'required' });
  });
});

describe('the migration from v1 to v2, end to end', () => {
  test('deploy on v2, switch the model string, stop v1: v1 stops billing and serving, v2 serves and bills', async () => {
    const seeded = (await seededV1Endpoints(t)).running;
    const v1 = (await together.endpoints.list()).data.find((e) => e.id === seeded.id)!;
    expect(v1.state).toBe('STARTED');
    // (1) choose a model and a config; (2) deploy with an endpoint name, the config and replica counts.
    const configs = (await t.http.get(`/v2/projects/${projectId}/configs`).query({ referenceModelId: v1.model }).set(auth())).body.data;
    const config = configs.find((c: any) => c.hardware.includes('1x_nvidia_h100_80gb_sxm'));
    const res = await t.http
      .post(`/v2/projects/${projectId}/deploy`)
      .set(auth())
      .send({ endpointName: 'llama-v2', model: v1.model, config: config.id, minReplicas: 1, maxReplicas: 2 });
    expect(res.status).toBe(202);
    // While provisioning, the v1 endpoint keeps serving the application.
    expect((await chat({ model: v1.name, messages: hi })).status).toBe(200);
    await t.advance(PROVISION_MS);
    // (3) the application switches its model string; the request shape is unchanged.
    const answer = await openai.chat.completions.create({
      model: 'default/llama-v2',
      messages: [{ role: 'user', content: 'Hello there' }],
      max_tokens: 50,
      temperature: 0.2,
    });
    expect(answer.choices[0]!.message.content).toContain(v1.model);
    // (4) stop the v1 endpoint so that it stops billing.
    const v1Usage = async () => (await t.api.GET('/v1/endpoints/{endpointId}/usage', { params: { path: { endpointId: v1.id } } })).data!;
    const v2Usage = async () => (await t.http.get(`/v2/projects/${projectId}/endpoints/${res.body.endpoint.id}/usage`).set(auth())).body;
    await together.endpoints.update(v1.id, { state: 'STOPPED' });
    const [v1Stopped, v2Before] = [await v1Usage(), await v2Usage()];
    await t.advance(15 * 60_000);
    expect((await v1Usage()).cost_cents).toBe(v1Stopped.cost_cents);
    expect((await v2Usage()).costCents).toBeCloseTo(v2Before.costCents + 15 * 5.6, 2);
    expectError(await chat({ model: v1.name, messages: hi }), 503, { code: 'endpoint_not_ready' });
    expect((await chat({ model: 'default/llama-v2', messages: hi })).status).toBe(200);
    // Once stopped, v1 cannot start again: the remedy is v2.
    const err: any = await together.endpoints.update(v1.id, { state: 'STARTED' }).catch((e) => e);
    expect(err.error.error.code).toBe('endpoints_v1_create_access_disabled');
  });
});
