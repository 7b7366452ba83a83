// A/B and shadow experiments on v2 endpoints (spec/tags/experiments.yaml), driven through the official client's
// `beta.endpoints.abExperiments.*`, `beta.endpoints.shadowExperiments.*` and `.targets.*` (together-ai) on
// `<server>/v2`, with real inference traffic on the endpoint.
//
// | SDK method                                                        | operationId             |
// |-------------------------------------------------------------------|-------------------------|
// | beta.endpoints.abExperiments.create(endpointId, {...})            | createABExperiment      |
// | beta.endpoints.abExperiments.list(endpointId)                     | listABExperiments       |
// | beta.endpoints.abExperiments.retrieve(id, {endpointId})           | getABExperiment         |
// | beta.endpoints.abExperiments.update(id, {endpointId, ...})        | updateABExperiment      |
// | beta.endpoints.abExperiments.delete(id, {endpointId, etag?})      | deleteABExperiment      |
// | beta.endpoints.shadowExperiments.create/list/retrieve/update/delete | *ShadowExperiment(s)  |
// | beta.endpoints.shadowExperiments.targets.create/list/retrieve/update/delete | *ShadowTarget(s) |
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../server/core/config.ts';
import { shadowsOf } from '../server/modules/experiments/index.ts';
import { Shadows } from '../server/modules/experiments/mirror.ts';
import { H100, MODEL, PROVISION_MS } from './support/endpoints.ts';
import { expectError, refusal } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let v2: Together;
let n = 0;
const uniq = (prefix: string) => `${prefix}-${++n}`;
const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });
const CONTROL = 'AB_EXPERIMENT_MEMBER_ROLE_CONTROL' as const;
const VARIANT = 'AB_EXPERIMENT_MEMBER_ROLE_VARIANT' as const;

beforeAll(async () => {
  t = await startTestPlatform();
  v2 = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, projectID: t.caller.identity.projectId, maxRetries: 0 });
});
afterAll(() => t?.close());

/** Waits (polling, generous deadline) until `check` answers true; never a timing assertion. */
async function eventually(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached before the deadline');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** An endpoint with READY deployments of the given models (the first routed wholly), on platform `p`. */
async function endpointWith(p: TestPlatform, client: Together, deployments: { model?: string; config?: string }[]) {
  const e = await client.beta.endpoints.create({ name: uniq('ep') });
  const ds = [];
  for (const d of deployments) {
    ds.push(
      await client.beta.endpoints.deployments.create(e.id, {
        name: uniq('dep'),
        model: d.model ?? MODEL,
        config: d.config ?? H100,
        autoscaling: { minReplicas: 1, maxReplicas: 1 },
      } as any),
    );
  }
  await client.beta.endpoints.update(e.id, { trafficSplit: [{ deploymentId: ds[0]!.id, weight: 1 }] } as any);
  await p.advance(PROVISION_MS);
  return { e, ds };
}

const chat = (p: TestPlatform, model: string, extra: Record<string, unknown> = {}) =>
  p.http
    .post('/v1/chat/completions')
    .set({ Authorization: `Bearer ${p.caller.key}` })
    .send({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 8, ...extra });

/** `count` chats on the endpoint; how many each deployment answered (all must answer 200). */
async function servedBy(model: string, count: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < count; i++) {
    const res = await chat(t, model);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const by = res.headers['x-served-by'] as string;
    counts[by] = (counts[by] ?? 0) + 1;
  }
  return counts;
}

const shadowRows = (p: TestPlatform, deploymentId: string) => p.services.db.prisma.servedRequest.findMany({ where: { deploymentId, role: 'shadow' } });
const primaryCount = (deploymentId: string) => t.services.db.prisma.servedRequest.count({ where: { deploymentId, role: 'primary' } });

describe('A/B experiments', () => {
  test("the members' percents are the endpoint's routing while the experiment exists; update re-weights; delete restores the split", async () => {
    const { e, ds } = await endpointWith(t, v2, [{}, {}, {}]);
    const [control, variant, idle] = ds.map((d) => d.id) as [string, string, string];
    const model = e.name;

    const x = await v2.beta.endpoints.abExperiments.create(e.id, {
      name: 'prompt-v2',
      description: 'new prompt template',
      members: [
        { deploymentId: control, role: CONTROL, percent: 70 },
        { deploymentId: variant, role: VARIANT, percent: 30 },
      ],
    });
    expect(x).toMatchObject({
      id: expect.stringMatching(/^abx_/),
      projectId: t.caller.identity.projectId,
      endpointId: e.id,
      name: 'prompt-v2',
      description: 'new prompt template',
      createdBy: t.caller.identity.apiKeyId,
      etag: expect.any(String),
    });
    expect((await v2.beta.endpoints.retrieve(e.id)).trafficSplit).toEqual([
      { deploymentId: control, weight: 70 },
      { deploymentId: variant, weight: 30 },
    ]);
    // The experiment steers the split: the endpoint's PATCH and deleting a member are refused.
    const patch = await refusal(v2.beta.endpoints.update(e.id, { trafficSplit: [{ deploymentId: idle, weight: 1 }] } as any));
    expect(patch.status).toBe(409);
    expect(patch.error.error).toMatchObject({ code: 'traffic_split_steered' });

    const before = { control: await primaryCount(control), variant: await primaryCount(variant) };
    const first = await servedBy(model, 100);
    console.log(`A/B 70/30 over 100 requests: control ${first[control]}, variant ${first[variant]}`);
    expect(first[idle]).toBeUndefined();
    expect(Math.abs((first[control] ?? 0) - 70)).toBeLessThanOrEqual(3);
    expect(Math.abs((first[variant] ?? 0) - 30)).toBeLessThanOrEqual(3);
    // Each member's requests are recorded as what its deployment served.
    expect((await primaryCount(control)) - before.control).toBe(first[control]);
    expect((await primaryCount(variant)) - before.variant).toBe(first[variant]);

    expect(await v2.beta.endpoints.abExperiments.retrieve(x.id, { endpointId: e.id })).toEqual(x);
    const listed = [];
    for await (const a of v2.beta.endpoints.abExperiments.list(e.id)) listed.push(a);
    expect(listed).toEqual([x]);

    const stale = await refusal(v2.beta.endpoints.abExperiments.update(x.id, { endpointId: e.id, etag: 'stale', description: 'x' }));
    expect(stale.status).toBe(409);
    expect(stale.error.error).toMatchObject({ code: 'etag_mismatch', param: 'etag' });
    const reweighted = await v2.beta.endpoints.abExperiments.update(x.id, {
      endpointId: e.id,
      etag: x.etag,
      members: [
        { deploymentId: control, role: CONTROL, percent: 25 },
        { deploymentId: variant, role: VARIANT, percent: 25 },
        { deploymentId: idle, role: VARIANT, percent: 50 },
      ],
    });
    expect(reweighted.etag).not.toBe(x.etag);
    expect(reweighted.description).toBe('new prompt template');
    const second = await servedBy(model, 100);
    console.log(`A/B 25/25/50 over 100 requests: ${second[control]}, ${second[variant]}, ${second[idle]}`);
    expect(Math.abs((second[control] ?? 0) - 25)).toBeLessThanOrEqual(3);
    expect(Math.abs((second[variant] ?? 0) - 25)).toBeLessThanOrEqual(3);
    expect(Math.abs((second[idle] ?? 0) - 50)).toBeLessThanOrEqual(3);

    // A mask applies only the fields it names.
    const masked = await v2.beta.endpoints.abExperiments.update(x.id, {
      endpointId: e.id,
      updateMask: 'description',
      description: 'only this',
      members: [],
    });
    expect(masked.members).toEqual(reweighted.members);
    expect(masked.description).toBe('only this');

    expect((await refusal(v2.beta.endpoints.abExperiments.delete(x.id, { endpointId: e.id, etag: x.etag }))).status).toBe(409);
    expect(await v2.beta.endpoints.abExperiments.delete(x.id, { endpointId: e.id, etag: masked.etag })).toEqual({});
    const restored = await v2.beta.endpoints.retrieve(e.id);
    expect(restored.trafficSplit).toEqual([{ deploymentId: control, weight: 1 }]);
    expect(await servedBy(model, 10)).toEqual({ [control]: 10 });
    // The split is the caller's again.
    await v2.beta.endpoints.update(e.id, { trafficSplit: [{ deploymentId: variant, weight: 1 }] } as any);
    const gone = await refusal(v2.beta.endpoints.abExperiments.retrieve(x.id, { endpointId: e.id }));
    expect(gone).toBeInstanceOf(Together.NotFoundError);
    expect(gone.error.error).toMatchObject({ code: 'not_found', param: 'id' });
  });

  test('members: deployments of this endpoint named once, percents 1-100 adding to 100, 2-20 members, exactly one control (400 naming the field)', async () => {
    const { e, ds } = await endpointWith(t, v2, [{}, {}]);
    const { ds: foreign } = await endpointWith(t, v2, [{}]);
    const [a, b] = ds.map((d) => d.id) as [string, string];
    const url = `/v2/projects/${t.caller.identity.projectId}/endpoints/${e.id}/abExperiments`;
    const create = (members: unknown, name = 'x') => t.http.post(url).set(auth()).send({ name, members });
    const m = (deploymentId: string, percent: number, role: string = VARIANT) => ({ deploymentId, role, percent });
    expectError(await create([m(foreign[0]!.id, 50, CONTROL), m(b, 50)]), 400, { code: 'unknown_deployment', param: 'members.0.deploymentId' });
    expectError(await create([m(a, 50, CONTROL), m(a, 50)]), 400, { code: 'duplicate_deployment', param: 'members.1.deploymentId' });
    expectError(await create([m(a, 100, CONTROL), m(b, 0)]), 400, { code: 'invalid_percent', param: 'members.1.percent' });
    expectError(await create([m(a, 101, CONTROL), m(b, 1)]), 400, { code: 'invalid_percent', param: 'members.0.percent' });
    expectError(await create([m(a, 60, CONTROL), m(b, 30)]), 400, { code: 'invalid_percent', param: 'members' });
    expectError(await create([m(a, 50, CONTROL), m(b, 50, CONTROL)]), 400, { code: 'invalid_members', param: 'members' });
    expectError(await create([m(a, 50), m(b, 50)]), 400, { code: 'invalid_members', param: 'members' });
    expectError(await create([m(a, 100, CONTROL)]), 400, { code: 'invalid_members', param: 'members' });
    expectError(await create([m(a, 50, CONTROL), m(b, 50)], '  '), 400, { code: 'invalid_name', param: 'name' });
    expectError(await create([m(a, 50.5, CONTROL), m(b, 49.5)]), 400, { param: 'members.0.percent' });
    // Nothing was written: the split is still the caller's.
    expect((await v2.beta.endpoints.retrieve(e.id)).trafficSplit).toEqual([{ deploymentId: a, weight: 1 }]);

    const ok = await create([m(a, 50, CONTROL), m(b, 50)]);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    // One A/B experiment per endpoint: the split has one steerer.
    expectError(await create([m(a, 40, CONTROL), m(b, 60)]), 409, { code: 'traffic_split_steered' });
    // A member cannot be deleted while the experiment steers the split.
    expectError(await t.http.delete(`/v2/projects/${t.caller.identity.projectId}/endpoints/${e.id}/deployments/${b}`).set(auth()), 409, {
      code: 'traffic_split_steered',
    });
    // Updates are checked the same way.
    expectError(
      await t.http
        .patch(`${url}/${ok.body.id}`)
        .set(auth())
        .send({ members: [m(a, 50, CONTROL), m(b, 40)] }),
      400,
      {
        code: 'invalid_percent',
        param: 'members',
      },
    );
    expectError(await t.http.patch(`${url}/${ok.body.id}?updateMask=name`).set(auth()).send({ description: 'x' }), 400, {
      code: 'invalid_update_mask',
      param: 'updateMask',
    });
  });

  test('two experiments created at once on one endpoint: one steers the split, the other is refused 409', async () => {
    const { e, ds } = await endpointWith(t, v2, [{}, {}]);
    const body = (control: number) => ({
      name: uniq('ab'),
      members: [
        { deploymentId: ds[0]!.id, role: CONTROL, percent: control },
        { deploymentId: ds[1]!.id, role: VARIANT, percent: 100 - control },
      ],
    });
    const url = `/v2/projects/${t.caller.identity.projectId}/endpoints/${e.id}/abExperiments`;
    const answers = await Promise.all([t.http.post(url).set(auth()).send(body(60)), t.http.post(url).set(auth()).send(body(20))]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    const won = answers.find((r) => r.status === 200)!.body;
    expectError(answers.find((r) => r.status === 409)!, 409, { code: 'traffic_split_steered' });
    expect((await v2.beta.endpoints.abExperiments.list(e.id)).data.map((x) => x.id)).toEqual([won.id]);
    expect((await v2.beta.endpoints.retrieve(e.id)).trafficSplit).toEqual(won.members.map((m: any) => ({ deploymentId: m.deploymentId, weight: m.percent })));
  });

  test('deleting the experiment restores the split it found, less the deployments deleted meanwhile', async () => {
    const { e, ds } = await endpointWith(t, v2, [{}, {}, {}]);
    const [a, b, c] = ds.map((d) => d.id) as [string, string, string];
    await v2.beta.endpoints.update(e.id, {
      trafficSplit: [
        { deploymentId: a, weight: 3 },
        { deploymentId: c, weight: 0 },
      ],
    } as any);
    const x = await v2.beta.endpoints.abExperiments.create(e.id, {
      name: 'ab',
      members: [
        { deploymentId: a, role: CONTROL, percent: 90 },
        { deploymentId: b, role: VARIANT, percent: 10 },
      ],
    });
    // c is in the split the experiment found, not in the one it steers: it can be deleted.
    await v2.beta.endpoints.deployments.delete(c, { endpointId: e.id } as any);
    await v2.beta.endpoints.abExperiments.delete(x.id, { endpointId: e.id });
    expect((await v2.beta.endpoints.retrieve(e.id)).trafficSplit).toEqual([{ deploymentId: a, weight: 3 }]);
  });

  test("another project's caller, endpoint or experiment answers 404", async () => {
    const { e, ds } = await endpointWith(t, v2, [{}, {}]);
    const x = await v2.beta.endpoints.abExperiments.create(e.id, {
      name: 'ab',
      members: [
        { deploymentId: ds[0]!.id, role: CONTROL, percent: 50 },
        { deploymentId: ds[1]!.id, role: VARIANT, percent: 50 },
      ],
    });
    const other = await t.newCaller();
    const path = `/v2/projects/${t.caller.identity.projectId}/endpoints/${e.id}/abExperiments/${x.id}`;
    expectError(await other.http.get(path), 404, { code: 'not_found', param: 'projectId' });
    expectError(await other.http.get(`/v2/projects/${other.identity.projectId}/endpoints/${e.id}/abExperiments/${x.id}`), 404, {
      code: 'not_found',
      param: 'endpointId',
    });
    const { e: sibling } = await endpointWith(t, v2, [{}]);
    expectError(await t.http.get(`/v2/projects/${t.caller.identity.projectId}/endpoints/${sibling.id}/abExperiments/${x.id}`).set(auth()), 404, {
      code: 'not_found',
      param: 'id',
    });
  });
});

describe('shadow experiments and targets', () => {
  test('create, read, list, update and delete through the official client; state follows the targets', async () => {
    const { e, ds } = await endpointWith(t, v2, [{}, {}, {}]);
    const [, candidate, other] = ds.map((d) => d.id) as [string, string, string];
    const x = await v2.beta.endpoints.shadowExperiments.create(e.id, {
      name: 'candidate-v3',
      source: { endpoint: { sampling: { uniform: { rate: 0.5 } } } },
      targets: [{ name: 'v3', targetDeploymentId: candidate, description: 'the new build' }],
    });
    expect(x).toMatchObject({
      id: expect.stringMatching(/^shx_/),
      projectId: t.caller.identity.projectId,
      endpointId: e.id,
      name: 'candidate-v3',
      source: { endpoint: { sampling: { uniform: { rate: 0.5 } } } },
      state: 'SHADOW_EXPERIMENT_STATE_ACTIVE',
      createdBy: t.caller.identity.apiKeyId,
      targets: [
        { id: expect.stringMatching(/^sht_/), experimentId: expect.any(String), name: 'v3', targetDeploymentId: candidate, description: 'the new build' },
      ],
    });
    expect(x.targets[0]!.experimentId).toBe(x.id);
    expect(await v2.beta.endpoints.shadowExperiments.retrieve(x.id, { endpointId: e.id })).toEqual(x);
    const plain = await v2.beta.endpoints.shadowExperiments.list(e.id);
    expect(plain.data).toEqual([{ ...x, targets: [] }]);
    expect((await v2.beta.endpoints.shadowExperiments.list(e.id, { includeTargets: true })).data).toEqual([x]);

    const updated = await v2.beta.endpoints.shadowExperiments.update(x.id, {
      endpointId: e.id,
      updateMask: 'source',
      source: { endpoint: { sampling: { keyBased: { rate: 0.2, key: 'user' } } } },
      description: 'ignored: not in the mask',
    });
    expect(updated.source).toEqual({ endpoint: { sampling: { keyBased: { rate: 0.2, key: 'user' } } } });
    expect(updated.description).toBeUndefined();
    expect(updated.etag).not.toBe(x.etag);
    const stale = await refusal(
      v2.beta.endpoints.shadowExperiments.update(x.id, { endpointId: e.id, updateMask: 'description', description: 'd', etag: x.etag }),
    );
    expect(stale.error.error).toMatchObject({ code: 'etag_mismatch' });

    const where = { endpointId: e.id, experimentId: x.id };
    const second = await v2.beta.endpoints.shadowExperiments.targets.create({ ...where, name: 'other', targetDeploymentId: other });
    const targets = [];
    for await (const tg of v2.beta.endpoints.shadowExperiments.targets.list(e.id, x.id)) targets.push(tg);
    expect(targets.map((tg) => tg.id)).toEqual([x.targets[0]!.id, second.id]);
    expect(await v2.beta.endpoints.shadowExperiments.targets.retrieve(second.id, where)).toEqual(second);
    const renamed = await v2.beta.endpoints.shadowExperiments.targets.update(second.id, { ...where, updateMask: 'name', name: 'renamed', etag: second.etag });
    expect(renamed).toMatchObject({ name: 'renamed', targetDeploymentId: other });
    const staleRename = await refusal(
      v2.beta.endpoints.shadowExperiments.targets.update(second.id, { ...where, updateMask: 'name', name: 'renamed-again', etag: second.etag }),
    );
    expect([staleRename.status, staleRename.error.error.code]).toEqual([409, 'etag_mismatch']);
    const taken = await refusal(v2.beta.endpoints.shadowExperiments.targets.create({ ...where, name: 'again', targetDeploymentId: candidate }));
    expect(taken.status).toBe(409);
    expect(taken.error.error).toMatchObject({ code: 'target_exists', param: 'targetDeploymentId' });
    const nameTaken = await refusal(v2.beta.endpoints.shadowExperiments.targets.create({ ...where, name: 'v3', targetDeploymentId: ds[0]!.id }));
    // ds[0] receives live traffic: that is checked before the name.
    expect(nameTaken.error.error).toMatchObject({ code: 'target_receives_traffic', param: 'targetDeploymentId' });
    expect((await refusal(v2.beta.endpoints.shadowExperiments.targets.delete(second.id, { ...where, etag: second.etag }))).status).toBe(409);
    expect(await v2.beta.endpoints.shadowExperiments.targets.delete(second.id, { ...where, etag: renamed.etag })).toEqual({});
    expect(await v2.beta.endpoints.shadowExperiments.targets.delete(x.targets[0]!.id, where)).toEqual({});
    const inactive = await v2.beta.endpoints.shadowExperiments.retrieve(x.id, { endpointId: e.id });
    expect(inactive).toMatchObject({ state: 'SHADOW_EXPERIMENT_STATE_INACTIVE', targets: [] });
    const gone = await refusal(v2.beta.endpoints.shadowExperiments.targets.retrieve(second.id, where));
    expect(gone.error.error).toMatchObject({ code: 'not_found', param: 'id' });

    const staleDelete = await refusal(v2.beta.endpoints.shadowExperiments.delete(x.id, { endpointId: e.id, etag: x.etag }));
    expect([staleDelete.status, staleDelete.error.error.code]).toEqual([409, 'etag_mismatch']);
    expect(await v2.beta.endpoints.shadowExperiments.delete(x.id, { endpointId: e.id, etag: inactive.etag })).toEqual({});
    expect((await v2.beta.endpoints.shadowExperiments.list(e.id)).data).toEqual([]);
    const missing = await refusal(v2.beta.endpoints.shadowExperiments.targets.list(e.id, x.id));
    expect(missing.error.error).toMatchObject({ code: 'not_found', param: 'experimentId' });
  });

  test('sampling, targets and names are checked (400/409 naming the field)', async () => {
    const { e, ds } = await endpointWith(t, v2, [{}, {}]);
    const { ds: foreign } = await endpointWith(t, v2, [{}]);
    const [live, candidate] = ds.map((d) => d.id) as [string, string];
    const url = `/v2/projects/${t.caller.identity.projectId}/endpoints/${e.id}/shadowExperiments`;
    const create = (sampling: unknown, targets?: unknown, name = uniq('shadow')) =>
      t.http
        .post(url)
        .set(auth())
        .send({ name, source: { endpoint: { sampling } }, ...(targets ? { targets } : {}) });
    const sp = 'source.endpoint.sampling';
    expectError(await create({ uniform: { rate: 1.5 } }), 400, { code: 'invalid_sampling', param: `${sp}.uniform.rate` });
    expectError(await create({ keyBased: { rate: 0.5, key: '' } }), 400, { code: 'invalid_sampling', param: `${sp}.keyBased.key` });
    expectError(await create({ adaptiveUniform: { targetQps: 0 } }), 400, { code: 'invalid_sampling', param: `${sp}.adaptiveUniform.targetQps` });
    expectError(await create({ adaptiveKeyBased: { targetQps: 1, key: 'user', window: '7200s' } }), 400, {
      code: 'invalid_sampling',
      param: `${sp}.adaptiveKeyBased.window`,
    });
    expectError(await create({ adaptiveUniform: { targetQps: 1, window: '-5s' } }), 400, { code: 'invalid_sampling', param: `${sp}.adaptiveUniform.window` });
    expect((await create({ uniform: { rate: 1 }, keyBased: { rate: 1, key: 'user' } })).status).toBe(400);
    const u = { uniform: { rate: 1 } };
    expectError(await create(u, [{ name: 'a', targetDeploymentId: foreign[0]!.id }]), 400, {
      code: 'unknown_deployment',
      param: 'targets.0.targetDeploymentId',
    });
    expectError(await create(u, [{ name: 'a', targetDeploymentId: live }]), 400, { code: 'target_receives_traffic', param: 'targets.0.targetDeploymentId' });
    expectError(
      await create(u, [
        { name: 'a', targetDeploymentId: candidate },
        { name: 'b', targetDeploymentId: candidate },
      ]),
      400,
      { code: 'duplicate_deployment', param: 'targets.1.targetDeploymentId' },
    );
    expectError(await create(u, [{ name: '', targetDeploymentId: candidate }]), 400, { code: 'invalid_name', param: 'targets.0.name' });
    expectError(await create(u, undefined, ''), 400, { code: 'invalid_name', param: 'name' });
    expect((await v2.beta.endpoints.shadowExperiments.list(e.id)).data).toEqual([]);

    const ok = await create({ adaptiveKeyBased: { targetQps: 2, key: 'metadata.session' } }, [{ name: 'a', targetDeploymentId: candidate }], 'same-name');
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expectError(await create(u, undefined, 'same-name'), 409, { code: 'experiment_name_taken', param: 'name' });
    const targets = `${url}/${ok.body.id}/targets`;
    expectError(await t.http.post(targets).set(auth()).send({ name: 'a', targetDeploymentId: candidate }), 409, {
      code: 'target_exists',
      param: 'targetDeploymentId',
    });
    const { ds: more } = {
      ds: [
        await v2.beta.endpoints.deployments.create(e.id, {
          name: uniq('dep'),
          model: MODEL,
          config: H100,
          autoscaling: { minReplicas: 1, maxReplicas: 1 },
        } as any),
      ],
    };
    expectError(await t.http.post(targets).set(auth()).send({ name: 'a', targetDeploymentId: more[0]!.id }), 409, { code: 'target_name_taken', param: 'name' });
    expectError(await t.http.patch(`${targets}/${ok.body.targets[0].id}`).set(auth()).send({ targetDeploymentId: live }), 400, {
      code: 'target_receives_traffic',
      param: 'targetDeploymentId',
    });
    expectError(await t.http.get(`${targets}/sht_nope`).set(auth()), 404, { code: 'not_found', param: 'id' });
    const other = await t.newCaller();
    expectError(await other.http.get(`${url}/${ok.body.id}`), 404, { code: 'not_found', param: 'projectId' });
  });

  test("every answered request is copied to the target by the sampling, recorded as the target's shadow requests; the caller sees only the primary", async () => {
    const { e, ds } = await endpointWith(t, v2, [{}, {}]);
    const [primary, candidate] = ds.map((d) => d.id) as [string, string];
    const x = await v2.beta.endpoints.shadowExperiments.create(e.id, {
      name: 'all',
      source: { endpoint: { sampling: { uniform: { rate: 1 } } } },
      targets: [{ name: 'candidate', targetDeploymentId: candidate }],
    });
    const counts = await servedBy(e.name, 20);
    expect(counts).toEqual({ [primary]: 20 });
    // A streamed request is copied too (the copy streams and is drained).
    const streamed = await chat(t, e.name, { stream: true });
    expect(streamed.status).toBe(200);
    await eventually(async () => (await shadowRows(t, candidate)).length === 21);
    const rows = await shadowRows(t, candidate);
    expect(rows.every((r) => r.status === 200 && r.endpointId === e.id)).toBe(true);
    // Tokens as the copy's answer counted them (the streamed copy, asked without include_usage, reports none).
    expect(rows.filter((r) => r.completionTokens > 0).length).toBeGreaterThanOrEqual(20);
    // The shadow copies are not the endpoint's (or the target's) served requests.
    expect(await primaryCount(candidate)).toBe(0);
    console.log(`shadow uniform 1.0: 21 answered, ${rows.length} copies recorded on the target`);

    // rate 0.25: exactly every fourth request.
    await v2.beta.endpoints.shadowExperiments.update(x.id, {
      endpointId: e.id,
      updateMask: 'source',
      source: { endpoint: { sampling: { uniform: { rate: 0.25 } } } },
    });
    await servedBy(e.name, 40);
    await eventually(async () => (await shadowRows(t, candidate)).length === 31);
    await shadowsOf(t.services).idle();
    expect((await shadowRows(t, candidate)).length).toBe(31);

    // key-based: a key value is always copied or never; a request without the key is not copied.
    await v2.beta.endpoints.shadowExperiments.update(x.id, {
      endpointId: e.id,
      updateMask: 'source',
      source: { endpoint: { sampling: { keyBased: { rate: 0.5, key: 'user' } } } },
    });
    const base = (await shadowRows(t, candidate)).length;
    for (let round = 0; round < 3; round++) for (let u = 0; u < 10; u++) expect((await chat(t, e.name, { user: `user-${u}` })).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await chat(t, e.name)).status).toBe(200);
    await shadowsOf(t.services).idle();
    const keyed = (await shadowRows(t, candidate)).length - base;
    console.log(`shadow keyBased 0.5 over 10 users x 3: ${keyed} copies`);
    expect(keyed % 3).toBe(0);
    expect(keyed).toBeGreaterThan(0);
    expect(keyed).toBeLessThan(30);

    // adaptive uniform: at most targetQps x window copies in a window of the clock.
    await v2.beta.endpoints.shadowExperiments.update(x.id, {
      endpointId: e.id,
      updateMask: 'source',
      source: { endpoint: { sampling: { adaptiveUniform: { targetQps: 1, window: '5s' } } } },
    });
    const base2 = (await shadowRows(t, candidate)).length;
    await servedBy(e.name, 12);
    await eventually(async () => (await shadowRows(t, candidate)).length === base2 + 5);
    t.clock.advance(6000);
    await servedBy(e.name, 12);
    await eventually(async () => (await shadowRows(t, candidate)).length === base2 + 10);
    await shadowsOf(t.services).idle();
    expect((await shadowRows(t, candidate)).length).toBe(base2 + 10);

    // No target (deleted experiment): nothing more is copied.
    await v2.beta.endpoints.shadowExperiments.delete(x.id, { endpointId: e.id });
    await servedBy(e.name, 5);
    await shadowsOf(t.services).idle();
    expect((await shadowRows(t, candidate)).length).toBe(base2 + 10);
  });
});

describe('which copies are made', () => {
  test('a target that is not READY records 503; a request is not copied to the deployment that answered it; adaptive key-based sampling', async () => {
    const { e, ds } = await endpointWith(t, v2, [{}, {}]);
    const [primary, candidate] = ds.map((d) => d.id) as [string, string];
    // A deployment created after the others were provisioned: still provisioning.
    const pending = await v2.beta.endpoints.deployments.create(e.id, {
      name: uniq('dep'),
      model: MODEL,
      config: H100,
      autoscaling: { minReplicas: 1, maxReplicas: 1 },
    } as any);
    const x = await v2.beta.endpoints.shadowExperiments.create(e.id, {
      name: 'mixed',
      source: { endpoint: { sampling: { uniform: { rate: 1 } } } },
      targets: [
        { name: 'candidate', targetDeploymentId: candidate },
        { name: 'pending', targetDeploymentId: pending.id },
      ],
    });
    await servedBy(e.name, 4);
    await eventually(async () => (await shadowRows(t, pending.id)).length === 4 && (await shadowRows(t, candidate)).length === 4);
    expect([...new Set((await shadowRows(t, pending.id)).map((r) => r.status))]).toEqual([503]);

    // The candidate now takes half the live traffic: the requests it answers are not copied to it.
    await v2.beta.endpoints.update(e.id, {
      trafficSplit: [
        { deploymentId: primary, weight: 1 },
        { deploymentId: candidate, weight: 1 },
      ],
    } as any);
    const counts = await servedBy(e.name, 10);
    await eventually(async () => (await shadowRows(t, candidate)).length === 4 + (counts[primary] ?? 0));
    await shadowsOf(t.services).idle();
    expect((await shadowRows(t, candidate)).length).toBe(4 + (counts[primary] ?? 0));
    await v2.beta.endpoints.update(e.id, { trafficSplit: [{ deploymentId: primary, weight: 1 }] } as any);

    // Adaptive key-based: the rate falls as the candidates seen in the window rise past targetQps x window.
    await v2.beta.endpoints.shadowExperiments.update(x.id, {
      endpointId: e.id,
      updateMask: 'source',
      source: { endpoint: { sampling: { adaptiveKeyBased: { targetQps: 1, key: 'user', window: '4s' } } } },
    });
    const before = (await shadowRows(t, candidate)).length;
    for (let i = 0; i < 40; i++) expect((await chat(t, e.name, { user: `adaptive-${i}` })).status).toBe(200);
    await shadowsOf(t.services).idle();
    const copied = (await shadowRows(t, candidate)).length - before;
    console.log(`shadow adaptiveKeyBased (1 qps over 4 s), 40 distinct keys at one instant: ${copied} copies`);
    expect(copied).toBeGreaterThan(0);
    expect(copied).toBeLessThan(20);
  });
});

describe('a slow or failing target changes nothing the caller sees', () => {
  let p: TestPlatform;
  let hung: Server;
  const held: { end: () => void }[] = [];

  beforeAll(async () => {
    // An upstream that accepts requests and never answers them.
    hung = createServer((req, res) => {
      req.resume();
      held.push({ end: () => res.destroy() });
    });
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', r));
    const port = (hung.address() as AddressInfo).port;
    const { engines } = loadConfig({
      ENGINES: JSON.stringify({
        routes: [
          // Long enough that the callers' answers all come back while the copies still hang, even on a loaded machine.
          { models: ['Qwen/*'], engine: 'upstream', url: `http://127.0.0.1:${port}/v1`, timeoutMs: 3_000 },
          // Nothing listens on port 9: connections are refused.
          { models: ['mistralai/*'], engine: 'upstream', url: 'http://127.0.0.1:9/v1' },
        ],
      }),
    });
    p = await startTestPlatform({ config: { engines } });
  });
  afterAll(async () => {
    for (const h of held) h.end();
    await p?.close();
    await new Promise((r) => hung.close(r));
  });

  test('targets on a hanging and on a refusing upstream: every caller answered by the primary at once, the outcomes recorded as 504 and 502', async () => {
    const client = new Together({ apiKey: p.caller.key, baseURL: `${p.url}/v2`, projectID: p.caller.identity.projectId, maxRetries: 0 });
    const { e, ds } = await endpointWith(p, client, [
      {},
      { model: 'Qwen/Qwen2.5-7B-Instruct', config: 'cr_qwen2_5_7b_h100' },
      { model: 'mistralai/Mistral-7B-Instruct-v0.3', config: 'cr_mistral_7b_h100' },
    ]);
    const [primary, slow, refusing] = ds.map((d) => d.id) as [string, string, string];
    await client.beta.endpoints.shadowExperiments.create(e.id, {
      name: 'risky',
      source: { endpoint: { sampling: { uniform: { rate: 1 } } } },
      targets: [
        { name: 'slow', targetDeploymentId: slow },
        { name: 'refusing', targetDeploymentId: refusing },
      ],
    });
    for (let i = 0; i < 5; i++) {
      const res = await chat(p, e.name);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers['x-served-by']).toBe(primary);
      expect(res.body.choices[0].message.content.length).toBeGreaterThan(0);
    }
    // The callers were answered while the hanging upstream still held copies it never answered.
    await eventually(async () => held.length >= 1);
    expect((await shadowRows(p, slow)).length).toBeLessThan(5);
    // Every copy ends with its outcome recorded: refused (502) and timed out (504).
    await eventually(async () => (await shadowRows(p, refusing)).length === 5);
    await eventually(async () => (await shadowRows(p, slow)).length === 5);
    const statuses = async (d: string) => [...new Set((await shadowRows(p, d)).map((r) => r.status))];
    expect(await statuses(refusing)).toEqual([502]);
    expect(await statuses(slow)).toEqual([504]);
    const primaryRows = await p.services.db.prisma.servedRequest.findMany({ where: { endpointId: e.id, role: 'primary' } });
    expect(primaryRows.map((r) => [r.deploymentId, r.status])).toEqual(Array(5).fill([primary, 200]));
    // Failures of targets are outcomes, not server errors: nothing is logged as an error.
    expect(p.logs.map((l) => JSON.parse(l)).filter((l) => l.level >= 50)).toEqual([]);
    console.log(`shadow to failing targets: 5 answered 200 by the primary; refusing target 5x502, hanging target 5x504`);
  }, 60_000);

  test('copies that find the queue full are dropped and counted, never waited for', async () => {
    const client = new Together({ apiKey: p.caller.key, baseURL: `${p.url}/v2`, projectID: p.caller.identity.projectId, maxRetries: 0 });
    const { e, ds } = await endpointWith(p, client, [{}, { model: 'Qwen/Qwen2.5-7B-Instruct', config: 'cr_qwen2_5_7b_h100' }]);
    await client.beta.endpoints.shadowExperiments.create(e.id, {
      name: 'small-queue',
      source: { endpoint: { sampling: { uniform: { rate: 1 } } } },
      targets: [{ name: 'slow', targetDeploymentId: ds[1]!.id }],
    });
    // A queue of 2 waiting copies and 2 running, in front of the hanging upstream.
    const shadows = new Shadows(p.services, { waiting: 2, running: 2 });
    const body = { model: e.name, messages: [{ role: 'user', content: 'hi' }] };
    for (let i = 0; i < 6; i++) shadows.offer({ op: 'chat', body, projectId: p.caller.identity.projectId, endpointId: e.id, servedBy: ds[0]!.id });
    await eventually(async () => shadows.snapshot().dropped + shadows.snapshot().waiting + shadows.snapshot().running === 6);
    expect(shadows.snapshot().dropped).toBe(4);
    // One warning (no stack) for the first drop.
    const warned = p.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'shadow copies dropped: the queue is full');
    expect(warned).toMatchObject([{ level: 40, dropped: 1, endpointId: e.id }]);
    expect(warned[0].err).toBeUndefined();
    // The two kept copies end (timed out) and are recorded; the dropped ones never are.
    await shadows.idle();
    expect(shadows.snapshot()).toEqual({ mirrored: 2, dropped: 4, waiting: 0, running: 0 });
    expect((await shadowRows(p, ds[1]!.id)).map((r) => r.status)).toEqual([504, 504]);
  }, 60_000);
});
