// v1 dedicated endpoints: the seeded pair, the retired create, the transition table walked whole,
// capacity and billing of a running endpoint, and the official together-ai client against all of it.
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { requestedEvent, v1EndpointMachine } from '../server/modules/endpoints/machine.ts';
import { insertV1Endpoint, seededV1Endpoints } from './support/endpoints.ts';
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

const seeded = async () => {
  const rows = await seededV1Endpoints(t);
  const list = await client.endpoints.list();
  const running = list.data.find((e) => e.id === rows.running.id)!;
  const stopped = list.data.find((e) => e.id === rows.stopped.id)!;
  return { running, stopped };
};

const openReservations = (ownerId: string) => t.services.db.prisma.hardwareReservation.count({ where: { ownerId, endedAt: null } });

describe('the seed', () => {
  test('the default project has one running and one stopped v1 endpoint; the running one holds its replica', async () => {
    const { running, stopped } = await seeded();
    expect(running).toMatchObject({
      object: 'endpoint',
      type: 'dedicated',
      owner: 'default',
      state: 'STARTED',
      model: 'meta-llama/Meta-Llama-3.1-8B-Instruct',
    });
    // Named as the platform names v1 endpoints: <user>/<model>-<hash>, the project's slug standing for the user.
    expect(running.name).toMatch(/^default\/Meta-Llama-3\.1-8B-Instruct-[0-9a-f]{6}$/);
    expect(stopped.name).toMatch(/^default\/Qwen2\.5-7B-Instruct-[0-9a-f]{6}$/);
    expect(stopped).toMatchObject({ state: 'STOPPED', model: 'Qwen/Qwen2.5-7B-Instruct' });
    expect(await openReservations(running.id)).toBe(1);
    expect(await openReservations(stopped.id)).toBe(0);
    const full = await client.endpoints.retrieve(running.id);
    expect(full).toMatchObject({
      id: running.id,
      hardware: '1x_nvidia_h100_80gb_sxm',
      autoscaling: { min_replicas: 1, max_replicas: 2 },
      display_name: expect.any(String),
    });
  });

  test('another project sees none of them, and filters list nothing serverless or reserved', async () => {
    expect((await t.other.api.GET('/v1/endpoints')).data!.data).toEqual([]);
    expect((await client.endpoints.list({ type: 'serverless' })).data).toEqual([]);
    expect((await client.endpoints.list({ usage_type: 'reserved' })).data).toEqual([]);
    expect((await client.endpoints.list({ type: 'dedicated', usage_type: 'on-demand', mine: true })).data).toHaveLength(2);
  });
});

describe('POST /v1/endpoints is retired', () => {
  test('the SDK create answers 403 PermissionDeniedError with endpoints_v1_create_access_disabled, pointing to v2', async () => {
    const before = await t.services.db.prisma.v1Endpoint.count();
    const err: any = await client.endpoints
      .create({ model: 'meta-llama/Meta-Llama-3.1-8B-Instruct', hardware: '1x_nvidia_h100_80gb_sxm', autoscaling: { min_replicas: 1, max_replicas: 1 } })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Together.PermissionDeniedError);
    expect(err.status).toBe(403);
    expect(err.error.error.code).toBe('endpoints_v1_create_access_disabled');
    expect(err.error.error.message).toMatch(/v2/);
    expect(await t.services.db.prisma.v1Endpoint.count()).toBe(before);
  });

  test('a create with values the contract no longer bounds is still refused with 403, never 400', async () => {
    const res = await t.http
      .post('/v1/endpoints')
      .set(auth())
      .send({
        model: 'deepseek-ai/DeepSeek-R1',
        hardware: '8x_nvidia_h200_141gb_sxm',
        autoscaling: { min_replicas: 0, max_replicas: 500 },
        display_name: 'y'.repeat(300),
        inactive_timeout: 0,
        availability_zone: 'us-central-4b',
      });
    expectError(res, 403, { code: 'endpoints_v1_create_access_disabled' });
  });

  test('a malformed create is refused the same: the 403 comes first (test/open-bodies.test.ts)', async () => {
    const res = await t.http.post('/v1/endpoints').set(auth()).send({ model: 'x', hardware: 'y' });
    expectError(res, 403, { code: 'endpoints_v1_create_access_disabled' });
  });
});

describe('the v1 transition table', () => {
  for (const from of v1EndpointMachine.states) {
    for (const requested of ['STARTED', 'STOPPED'] as const) {
      const event = requestedEvent(from, requested);
      const allowed = event && v1EndpointMachine.can(from, event) ? v1EndpointMachine.next(from, event) : undefined;
      const outcome = from === requested ? 'no change' : allowed ? `moves to ${allowed}` : requested === 'STARTED' ? '403' : '409';
      test(`${from} asked for ${requested}: ${outcome}`, async () => {
        const e = await insertV1Endpoint(t, t.caller.identity.projectId, { state: from });
        const res = await t.http.patch(`/v1/endpoints/${e.id}`).set(auth()).send({ state: requested });
        const row = await t.services.db.prisma.v1Endpoint.findUniqueOrThrow({ where: { id: e.id } });
        if (from === requested || allowed) {
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          expect(res.body.state).toBe(allowed ?? from);
          expect(row.state).toBe(allowed ?? from);
        } else if (requested === 'STARTED') {
          expectError(res, 403, { code: 'endpoints_v1_create_access_disabled' });
          expect(row.state).toBe(from);
        } else {
          expectError(res, 409, { code: 'invalid_state_transition', param: null });
          expect(row.state).toBe(from);
        }
      });
    }
  }
});

describe('a running v1 endpoint', () => {
  test('bills per minute by hardware while it runs, stops through the SDK, then cannot start again', async () => {
    const e = await insertV1Endpoint(t, t.caller.identity.projectId, { hardware: '2x_nvidia_h100_80gb_sxm', minReplicas: 2, maxReplicas: 2 });
    await t.advance(10 * 60_000);
    const usage = await t.api.GET('/v1/endpoints/{endpointId}/usage', { params: { path: { endpointId: e.id } } });
    expect(usage.data).toEqual({
      object: 'endpoint.usage',
      endpoint_id: e.id,
      hardware: '2x_nvidia_h100_80gb_sxm',
      cents_per_minute: 11.2,
      running_replicas: 2,
      replica_minutes: 20,
      cost_cents: 224,
    });

    const stopped = await client.endpoints.update(e.id, { state: 'STOPPED' });
    expect(stopped.state).toBe('STOPPED');
    expect(await openReservations(e.id)).toBe(0);
    await t.advance(10 * 60_000);
    const after = await t.api.GET('/v1/endpoints/{endpointId}/usage', { params: { path: { endpointId: e.id } } });
    expect(after.data).toMatchObject({ running_replicas: 0, replica_minutes: 20, cost_cents: 224 });

    const err: any = await client.endpoints.update(e.id, { state: 'STARTED' }).catch((x) => x);
    expect(err).toBeInstanceOf(Together.PermissionDeniedError);
    expect(err.error.error.code).toBe('endpoints_v1_create_access_disabled');
    expect((await client.endpoints.retrieve(e.id)).state).toBe('STOPPED');
  });

  test('resizing takes capacity at once, and is refused when the hardware has none left', async () => {
    // 1x L40S has room for exactly one replica.
    const e = await insertV1Endpoint(t, t.caller.identity.projectId, {
      model: 'meta-llama/Meta-Llama-3.1-8B-Instruct',
      hardware: '1x_nvidia_l40s_48gb_pcie',
      maxReplicas: 3,
    });
    const hw = await t.api.GET('/v1/hardware', { params: { query: { model: 'meta-llama/Meta-Llama-3.1-8B-Instruct' } } });
    expect(hw.data!.data.find((h) => h.id === '1x_nvidia_l40s_48gb_pcie')!.availability!.status).toBe('unavailable');

    const res = await t.http
      .patch(`/v1/endpoints/${e.id}`)
      .set(auth())
      .send({ autoscaling: { min_replicas: 2, max_replicas: 3 } });
    expectError(res, 409, { code: 'insufficient_capacity', param: 'autoscaling.min_replicas' });
    expect((await t.services.db.prisma.v1Endpoint.findUniqueOrThrow({ where: { id: e.id } })).minReplicas).toBe(1);

    // On H100 (32 GPUs) the same growth fits, and shrinking gives the GPUs back.
    const h = await insertV1Endpoint(t, t.caller.identity.projectId, { maxReplicas: 3 });
    const grown = await client.endpoints.update(h.id, { autoscaling: { min_replicas: 3, max_replicas: 3 }, display_name: 'Bigger', inactive_timeout: 30 });
    expect(grown).toMatchObject({ autoscaling: { min_replicas: 3, max_replicas: 3 }, display_name: 'Bigger', inactive_timeout: 30 });
    expect(await openReservations(h.id)).toBe(3);
    await client.endpoints.update(h.id, { autoscaling: { min_replicas: 1, max_replicas: 3 } });
    expect(await openReservations(h.id)).toBe(1);
  });

  test('a new v1 endpoint is named <model>-<hash>; each its own', async () => {
    const [a, b] = [await insertV1Endpoint(t, t.caller.identity.projectId), await insertV1Endpoint(t, t.caller.identity.projectId)];
    expect(a.name).toMatch(/^Meta-Llama-3\.1-8B-Instruct-[0-9a-f]{6}$/);
    expect(b.name).not.toBe(a.name);
    expect((await client.endpoints.retrieve(a.id)).name).toBe(`default/${a.name}`);
  });

  test('the update is bounded by what an endpoint can be, not by the contract: display names of any length, large counts, 400 for impossible values', async () => {
    const e = await insertV1Endpoint(t, t.caller.identity.projectId, { state: 'STOPPED' });
    // Values the platform's contract allows, which a narrower contract here used to refuse.
    const wide = await client.endpoints.update(e.id, {
      display_name: 'x'.repeat(500),
      autoscaling: { min_replicas: 0, max_replicas: 100 },
      inactive_timeout: 200_000,
    });
    expect(wide).toMatchObject({ display_name: 'x'.repeat(500), autoscaling: { min_replicas: 0, max_replicas: 100 }, inactive_timeout: 200_000 });
    expect((await client.endpoints.update(e.id, { display_name: '' })).display_name).toBe('');
    const patch = (body: object) => t.http.patch(`/v1/endpoints/${e.id}`).set(auth()).send(body);
    expectError(await patch({ autoscaling: { min_replicas: -1, max_replicas: 1 } }), 400, { code: 'invalid_autoscaling', param: 'autoscaling.min_replicas' });
    expectError(await patch({ autoscaling: { min_replicas: 1, max_replicas: 2 ** 31 } }), 400, {
      code: 'invalid_autoscaling',
      param: 'autoscaling.max_replicas',
    });
    expectError(await patch({ inactive_timeout: -5 }), 400, { code: 'invalid_inactive_timeout', param: 'inactive_timeout' });
    expectError(await patch({ inactive_timeout: 2 ** 31 }), 400, { code: 'invalid_inactive_timeout', param: 'inactive_timeout' });
    expect((await patch({ inactive_timeout: null })).body.inactive_timeout).toBeNull();
    // Nothing a refused update asked for was kept.
    expect(await client.endpoints.retrieve(e.id)).toMatchObject({ autoscaling: { min_replicas: 0, max_replicas: 100 }, display_name: '' });
    // Ids of any length are looked up (and not found), not refused.
    expectError(await t.http.get(`/v1/endpoints/endpoint-${'f'.repeat(300)}`).set(auth()), 404, { code: 'not_found', param: 'endpointId' });
  });

  test('autoscaling must keep min <= max and at least one replica', async () => {
    const e = await insertV1Endpoint(t, t.caller.identity.projectId);
    expectError(
      await t.http
        .patch(`/v1/endpoints/${e.id}`)
        .set(auth())
        .send({ autoscaling: { min_replicas: 3, max_replicas: 2 } }),
      400,
      {
        code: 'invalid_autoscaling',
        param: 'autoscaling.min_replicas',
      },
    );
    expectError(
      await t.http
        .patch(`/v1/endpoints/${e.id}`)
        .set(auth())
        .send({ autoscaling: { min_replicas: 0, max_replicas: 0 } }),
      400,
      {
        code: 'invalid_autoscaling',
        param: 'autoscaling.max_replicas',
      },
    );
  });

  test('delete answers 204 with no body', async () => {
    const e = await insertV1Endpoint(t, t.caller.identity.projectId);
    const res = await t.http.delete(`/v1/endpoints/${e.id}`).set(auth());
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
  });

  test('delete through the SDK releases its replicas and answers 204; then it is gone', async () => {
    const e = await insertV1Endpoint(t, t.caller.identity.projectId);
    expect(await openReservations(e.id)).toBe(1);
    await client.endpoints.delete(e.id); // 204: the SDK resolves with no body
    expect(await openReservations(e.id)).toBe(0);
    const err: any = await client.endpoints.retrieve(e.id).catch((x) => x);
    expect(err).toBeInstanceOf(Together.NotFoundError);
    expectError(await t.http.delete(`/v1/endpoints/${e.id}`).set(auth()), 404, { code: 'not_found' });
  });
});
