// v2 dedicated endpoints, continued: `validateOnly` on deployment create (checks like a create, writes nothing) and
// the endpoint lifecycle events feed (every transition and change recorded in its own transaction, paged by cursor).
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { H100, L40S, MODEL, PROVISION_MS, STOP_MS } from './support/endpoints.ts';
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

async function createEndpoint() {
  const res = await t.http
    .post(`${base()}/endpoints`)
    .set(auth())
    .send({ name: uniq('ep') });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const deploymentBody = (body: Record<string, unknown> = {}) => ({
  name: uniq('dep'),
  model: MODEL,
  config: H100,
  autoscaling: { minReplicas: 1, maxReplicas: 1 },
  ...body,
});
const postDeployment = (endpointId: string, body: object, query = '') =>
  t.http.post(`${base()}/endpoints/${endpointId}/deployments${query}`).set(auth()).send(body);
const patchDeployment = async (endpointId: string, id: string, body: object) =>
  t.http.patch(`${base()}/endpoints/${endpointId}/deployments/${id}`).set(auth()).send(body);
const patchEndpoint = (endpointId: string, body: object) => t.http.patch(`${base()}/endpoints/${endpointId}`).set(auth()).send(body);
const eventsPage = (endpointId: string, query = '') => t.http.get(`${base()}/endpoints/${endpointId}/events${query}`).set(auth());
async function events(endpointId: string) {
  const res = await eventsPage(endpointId);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as any[];
}
const summary = (list: any[]) => list.map((e) => [e.type, e.status ?? null, e.reason ?? null]);

describe('createDeployment?validateOnly=true', () => {
  test('answers the deployment that would be created and writes nothing: no row, no mount, no provisioning, no event', async () => {
    const e = await createEndpoint();
    const body = deploymentBody({ autoscaling: { minReplicas: 2, maxReplicas: 3 } });
    const res = await postDeployment(e.id, body, '?validateOnly=true');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      endpointId: e.id,
      name: body.name,
      modelId: MODEL,
      configId: H100,
      autoscaling: { minReplicas: 2, maxReplicas: 3 },
      status: { state: 'DEPLOYMENT_STATE_PROVISIONING', readyReplicas: 0, scheduledReplicas: 2 },
      desiredReplicas: 2,
    });
    expect(res.body.id).toMatch(/^dep_/);

    expect((await t.http.get(`${base()}/endpoints/${e.id}/deployments`).set(auth())).body.data).toEqual([]);
    expect(await t.services.db.prisma.deployment.count({ where: { endpointId: e.id } })).toBe(0);
    expect(await t.services.db.prisma.workItem.count({ where: { subjectId: res.body.id } })).toBe(0);
    const after = (await t.http.get(`${base()}/endpoints/${e.id}`).set(auth())).body;
    expect(after.etag).toBe(e.etag);
    expect(summary(await events(e.id))).toEqual([['endpoint.created', null, null]]);

    // The same body really creates it afterwards (the preview's id was never taken).
    const created = await postDeployment(e.id, body, '?validateOnly=false');
    expect(created.status).toBe(200);
    expect(created.body.id).not.toBe(res.body.id);
    expect(await t.services.db.prisma.deployment.count({ where: { endpointId: e.id } })).toBe(1);
  });

  test('refuses exactly what a create refuses, still writing nothing', async () => {
    const e = await createEndpoint();
    const taken = await postDeployment(e.id, deploymentBody());
    expect(taken.status).toBe(200);
    expectError(await postDeployment(e.id, deploymentBody({ name: taken.body.name }), '?validateOnly=true'), 409, {
      code: 'deployment_name_taken',
      param: 'name',
    });
    expectError(await postDeployment(e.id, deploymentBody({ model: 'no/such-model' }), '?validateOnly=true'), 400, { code: 'model_not_found', param: 'model' });
    expectError(await postDeployment(e.id, deploymentBody({ autoscaling: { minReplicas: 3, maxReplicas: 2 } }), '?validateOnly=true'), 400, {
      code: 'invalid_autoscaling',
      param: 'autoscaling.minReplicas',
    });
    expectError(await postDeployment(e.id, deploymentBody({ volumes: ['no-such-volume'] }), '?validateOnly=true'), 404, { param: 'volumes.0' });
    expectError(await postDeployment('ep_absent', deploymentBody(), '?validateOnly=true'), 404, { param: 'endpointId' });
    expectError(await postDeployment(e.id, deploymentBody(), '?validateOnly=maybe'), 400, { param: 'validateOnly' });
    expect(await t.services.db.prisma.deployment.count({ where: { endpointId: e.id } })).toBe(1);
  });
});

describe('GET /v2/projects/{projectId}/endpoints/{id}/events', () => {
  test('records creation, every transition (by callers and the runner), resizes, edits and deletion, in order', async () => {
    const e = await createEndpoint();
    const d = (await postDeployment(e.id, deploymentBody())).body;
    await t.advance(PROVISION_MS); // PROVISIONING -> READY
    expect((await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 2, maxReplicas: 2 } })).status, 'step').toBe(200); // resized
    expect((await patchEndpoint(e.id, { trafficSplit: [{ deploymentId: d.id, weight: 1 }] })).status).toBe(200);
    expect((await patchEndpoint(e.id, { visibility: 'VISIBILITY_PRIVATE' })).status, 'step').toBe(200); // no change: no event
    expect((await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 0, maxReplicas: 0 } })).status, 'step').toBe(200); // READY -> STOPPING
    await t.advance(STOP_MS); // STOPPING -> STOPPED
    expect((await patchDeployment(e.id, d.id, { name: 'renamed' })).status).toBe(200);
    expect((await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 1, maxReplicas: 1 } })).status, 'step').toBe(200); // STOPPED -> PROVISIONING
    expect((await patchDeployment(e.id, d.id, { autoscaling: { minReplicas: 0, maxReplicas: 0 } })).status, 'step').toBe(200); // PROVISIONING -> STOPPED
    expect((await patchEndpoint(e.id, { trafficSplit: [] })).status).toBe(200);
    expect((await t.http.delete(`${base()}/endpoints/${e.id}/deployments/${d.id}`).set(auth())).status).toBe(200);

    const list = await events(e.id);
    expect(summary(list)).toEqual([
      ['endpoint.created', null, null],
      ['deployment.created', 'DEPLOYMENT_STATE_PROVISIONING', null],
      ['deployment.state_changed', 'DEPLOYMENT_STATE_READY', 'provisioned'],
      ['deployment.scaled', 'DEPLOYMENT_STATE_READY', null],
      ['endpoint.updated', null, null],
      ['deployment.state_changed', 'DEPLOYMENT_STATE_STOPPING', 'stop'],
      ['deployment.state_changed', 'DEPLOYMENT_STATE_STOPPED', 'stopped'],
      ['deployment.updated', 'DEPLOYMENT_STATE_STOPPED', null],
      ['deployment.state_changed', 'DEPLOYMENT_STATE_PROVISIONING', 'start'],
      ['deployment.state_changed', 'DEPLOYMENT_STATE_STOPPED', 'stop'],
      ['endpoint.updated', null, null],
      ['deployment.deleted', null, null],
    ]);
    const [slug, bare] = e.name.split('/');
    expect(list[0]).toEqual({
      id: expect.stringMatching(/^evt_/),
      createdAt: expect.stringMatching(/^\d{4}-/),
      level: 'LEVEL_INFO',
      type: 'endpoint.created',
      source: 'api',
      sourceKind: 'SOURCE_KIND_ENDPOINT',
      endpointId: e.id,
      name: `${slug}/${bare}`,
      message: `Endpoint '${bare}' created.`,
    });
    expect(list[1]).toEqual({
      id: expect.stringMatching(/^evt_/),
      createdAt: expect.stringMatching(/^\d{4}-/),
      level: 'LEVEL_INFO',
      type: 'deployment.created',
      source: 'api',
      sourceKind: 'SOURCE_KIND_DEPLOYMENT',
      endpointId: e.id,
      deploymentId: d.id,
      name: d.name,
      status: 'DEPLOYMENT_STATE_PROVISIONING',
      newReplicas: 1,
      message: expect.stringContaining(d.name),
    });
    expect(list[2]).toMatchObject({ source: 'runner', deploymentId: d.id });
    expect(list[3]).toMatchObject({ source: 'api', oldReplicas: 1, newReplicas: 2, message: expect.stringContaining('2 replica(s)') });
    expect(list[4]).toMatchObject({ paths: ['trafficSplit'], message: expect.stringContaining('trafficSplit') });
    expect(list[6]).toMatchObject({ source: 'runner' });
    expect(list[7]).toMatchObject({ paths: ['name'] });
    expect(list[11]).toMatchObject({ deploymentId: d.id, name: 'renamed' });
    for (const v of list.slice(2)) expect(v.source, v.type).toBe(v === list[2] || v === list[6] ? 'runner' : 'api');
    expect(list.every((v) => v.level === 'LEVEL_INFO')).toBe(true);
  });

  test('deleting a deployment drops its zero-weight split entry: an endpoint change, then the deletion', async () => {
    const e = await createEndpoint();
    const stopped = deploymentBody({ autoscaling: { minReplicas: 0, maxReplicas: 0 } });
    const a = (await postDeployment(e.id, stopped)).body;
    const b = (await postDeployment(e.id, { ...stopped, name: uniq('dep') })).body;
    expect(
      (
        await patchEndpoint(e.id, {
          trafficSplit: [
            { deploymentId: a.id, weight: 1 },
            { deploymentId: b.id, weight: 0 },
          ],
        })
      ).status,
    ).toBe(200);
    expect((await t.http.delete(`${base()}/endpoints/${e.id}/deployments/${b.id}`).set(auth())).status).toBe(200);
    const [changed, deleted] = (await events(e.id)).slice(-2);
    expect(changed).toMatchObject({
      type: 'endpoint.updated',
      paths: ['trafficSplit'],
      message: expect.stringContaining(JSON.stringify([{ deploymentId: a.id, weight: 1 }])),
    });
    expect(deleted).toMatchObject({ type: 'deployment.deleted', deploymentId: b.id, name: b.name, source: 'api' });
  });

  test('a deployment that cannot be placed fails at LEVEL_ERROR with the reason in its message', async () => {
    const e = await createEndpoint();
    const d = (await postDeployment(e.id, deploymentBody({ config: L40S, autoscaling: { minReplicas: 2, maxReplicas: 2 } }))).body;
    await t.advance(PROVISION_MS);
    const failed = (await events(e.id)).at(-1);
    expect(failed).toMatchObject({
      type: 'deployment.state_changed',
      level: 'LEVEL_ERROR',
      status: 'DEPLOYMENT_STATE_FAILED',
      reason: 'failed',
      deploymentId: d.id,
      message: expect.stringContaining('Insufficient capacity'),
    });
  });

  test('the one-call deploy records the endpoint and its deployment', async () => {
    const res = await t.http
      .post(`${base()}/deploy`)
      .set(auth())
      .send({ endpointName: uniq('deploy'), model: MODEL, config: H100, minReplicas: 1, maxReplicas: 1 });
    expect(res.status).toBe(202);
    expect(summary(await events(res.body.endpoint.id))).toEqual([
      ['endpoint.created', null, null],
      ['deployment.created', 'DEPLOYMENT_STATE_PROVISIONING', null],
    ]);
  });

  test('pages oldest first by limit and after; an unknown or foreign cursor is 400 invalid_cursor', async () => {
    const e = await createEndpoint();
    for (let i = 0; i < 4; i++) await postDeployment(e.id, deploymentBody({ autoscaling: { minReplicas: 0, maxReplicas: 0 } }));
    const all = await events(e.id);
    expect(all).toHaveLength(5);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await eventsPage(e.id, `?limit=2${cursor ? `&after=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.object).toBe('list');
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((v: any) => v.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(all.map((v) => v.id));

    expectError(await eventsPage(e.id, '?after=evt_unknown'), 400, { code: 'invalid_cursor', param: 'after' });
    const other = await createEndpoint();
    expectError(await eventsPage(other.id, `?after=${all[0].id}`), 400, { code: 'invalid_cursor', param: 'after' });
    expectError(await eventsPage(e.id, '?kinds=endpoint.created'), 400, { code: 'unknown_parameter' });
  });

  test('deleting the endpoint deletes its feed; another project sees 404', async () => {
    const e = await createEndpoint();
    expectError(await t.http.get(`/v2/projects/${t.other.identity.projectId}/endpoints/${e.id}/events`).set(auth()), 404, {});
    const res = await t.other.api.GET('/v2/projects/{projectId}/endpoints/{endpointId}/events', {
      params: { path: { projectId: t.other.identity.projectId, endpointId: e.id } },
    });
    expect(res.response.status).toBe(404);
    expect((await t.http.delete(`${base()}/endpoints/${e.id}`).set(auth())).status).toBe(200);
    expect(await t.services.db.prisma.endpointEvent.count({ where: { endpointId: e.id } })).toBe(0);
    expectError(await eventsPage(e.id), 404, { param: 'endpointId' });
  });
});

describe('the official together-ai client (client.beta, baseURL .../v2)', () => {
  test('deployments.create with validateOnly previews without writing; listEvents pages through the feed by cursor', async () => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, projectID: projectId, maxRetries: 0 });
    const e = await createEndpoint();
    const body = deploymentBody({ autoscaling: { minReplicas: 0, maxReplicas: 0 } });
    const preview = await client.beta.endpoints.deployments.create(e.id, { ...body, validateOnly: true } as any);
    expect(preview).toMatchObject({ name: body.name, endpointId: e.id });
    expect(await t.services.db.prisma.deployment.count({ where: { endpointId: e.id } })).toBe(0);
    for (let i = 0; i < 3; i++) await client.beta.endpoints.deployments.create(e.id, { ...body, name: uniq('dep') } as any);

    const types: string[] = [];
    for await (const v of client.beta.endpoints.listEvents(e.id, { limit: 2 })) types.push(v.type);
    expect(types).toEqual(['endpoint.created', 'deployment.created', 'deployment.created', 'deployment.created']);
    const first = await client.beta.endpoints.listEvents(e.id, { limit: 2 });
    expect(first.data).toHaveLength(2);
    expect(first.hasNextPage()).toBe(true);
  });
});
