// Refusals that name the field the caller sent, in words that fit it; names that would become part of a model
// string or a URL refused when they hold a control character or a lone surrogate; the stated bounds of model names,
// image references, variable names and GPU counts (the hardware catalogue's largest configuration).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { root } from '../server/core/paths.ts';
import hardware from '../server/modules/hardware/seed.json' with { type: 'json' };
import { MODEL } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const v2 = () => `/v2/projects/${t.caller.identity.projectId}`;
const container = (over: object) =>
  t.caller.http.post('/v1/deployments').send({ name: 'app', image: 'registry.example/app:1', gpu_type: 'h100-80gb', ...over });

describe('a refusal names the field sent', () => {
  test('a cluster of -8 GPUs names num_gpus, not the num_reserved_gpus it was not sent', async () => {
    for (const billing_type of ['ON_DEMAND', 'RESERVED']) {
      const res = await t.caller.http.post('/v1/compute/clusters').send({
        cluster_name: 'neg',
        region: 'us-central-8',
        gpu_type: 'H100_SXM',
        num_gpus: -8,
        billing_type,
        cuda_version: '12.8',
        nvidia_driver_version: '570',
      });
      expectError(res, 400, { param: 'num_gpus' });
      expect(res.body.error.message).toBe('num_gpus is -8; it must be a positive multiple of 8 (whole nodes of 8 GPUs).');
    }
  });

  test('a rollout with two strategies names the second; with none, asks for one', async () => {
    const e = (await t.caller.http.post(`${v2()}/endpoints`).send({ name: 'rolled' })).body;
    const rollout = (body: object) =>
      t.caller.http.post(`${v2()}/endpoints/${e.id}/rollouts`).send({ sourceDeploymentId: 'dep_a', targetDeploymentId: 'dep_b', ...body });
    const both = await rollout({ rolling: {}, blueGreen: {} });
    expectError(both, 400, { param: 'rolling', code: 'invalid_strategy' });
    expect(both.body.error.message).toBe('Give one strategy only (canary, blueGreen or rolling): this request gives blueGreen and rolling.');
    expectError(await rollout({}), 400, { param: 'canary', code: 'invalid_strategy' });
  });
});

describe('names that become part of a model string or a URL', () => {
  test('a line break, a tab or a lone surrogate is refused in endpoint, deployment, model, secret and container names', async () => {
    for (const bad of ['two\nlines', 'tab\there', 'half\ud800']) {
      expectError(await t.caller.http.post(`${v2()}/endpoints`).send({ name: bad }), 400, { param: 'name', code: 'invalid_characters' });
      expectError(
        await t.caller.http
          .post(`${v2()}/deploy`)
          .send({ endpointName: 'ok', deploymentName: bad, model: MODEL, config: 'cr_llama_3_1_8b_h100', minReplicas: 1, maxReplicas: 1 }),
        400,
        {
          param: 'deploymentName',
          code: 'invalid_characters',
        },
      );
      expectError(await t.caller.http.post(`${v2()}/models`).send({ name: bad, type: 'model', baseModelId: MODEL }), 400, {
        param: 'name',
        code: 'invalid_characters',
      });
      expectError(await t.caller.http.post('/v1/models').send({ model_name: bad, model_source: 'acme/llama-3.1-8b-ft' }), 400, {
        param: 'model_name',
        code: 'invalid_characters',
      });
      expectError(await t.caller.http.post('/v1/deployments/secrets').send({ name: bad, value: 'v' }), 400, { param: 'name', code: 'invalid_characters' });
      expectError(await container({ name: bad }), 400, { param: 'name', code: 'invalid_characters' });
    }
    expect(await t.services.db.prisma.dedicatedEndpoint.count({ where: { projectId: t.caller.identity.projectId } })).toBe(1);
  });
});

describe('stated bounds', () => {
  test('model names are at most 256 characters, v1 and v2', async () => {
    expectError(await t.caller.http.post(`${v2()}/models`).send({ name: 'm'.repeat(200_000), type: 'model', baseModelId: MODEL }), 400, {
      param: 'name',
      code: 'maxLength',
    });
    expectError(await t.caller.http.post('/v1/models').send({ model_name: 'm'.repeat(257), model_source: 'acme/llama-3.1-8b-ft' }), 400, {
      param: 'model_name',
      code: 'maxLength',
    });
  });

  test('a container: an image of at most 512 characters without spaces, variable names a container takes, 1 to 8 GPUs', async () => {
    expectError(await container({ image: 'i'.repeat(100_000) }), 400, { param: 'image', code: 'maxLength' });
    expectError(await container({ image: 'registry.example/app :1' }), 400, { param: 'image', code: 'invalid_image' });
    const variable = await container({
      environment_variables: [
        { name: 'OK', value: '1' },
        { name: 'A=B', value: 'c' },
      ],
    });
    expectError(variable, 400, { param: 'environment_variables.1.name', code: 'invalid_variable_name' });
    expect(variable.body.error.message).toContain('(it holds "=")');
    expectError(await container({ environment_variables: [{ name: '9LIVES', value: '1' }] }), 400, { param: 'environment_variables.0.name' });
    expectError(await container({ gpu_count: 1000 }), 400, { param: 'gpu_count', code: 'maximum' });
    expect((await container({ name: 'eight', gpu_count: 8, environment_variables: [{ name: 'HF_HOME', value: '/cache' }] })).status).toBe(200);
    expect(await t.services.db.prisma.containerDeployment.count()).toBe(1);
  });

  test("the contract's GPU bound is the hardware catalogue's largest configuration", () => {
    const spec = JSON.parse(readFileSync(join(root, 'generated/openapi.json'), 'utf8'));
    const largest = Math.max(...hardware.hardware.map((h) => h.gpuCount));
    for (const schema of ['ContainerDeploymentCreate', 'ContainerDeploymentUpdate']) {
      expect(spec.components.schemas[schema].properties.gpu_count.maximum, schema).toBe(largest);
    }
  });
});
