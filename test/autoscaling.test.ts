// The metric-based autoscaler of v2 deployments (spec/tags/dedicated.yaml, **Autoscaling**): replicas follow the
// traffic a deployment really served, after the policy's windows, visible in the deployment's status, its events
// (`deployment.scaled`) and its billing; a deployment with minReplicas 0 scales to zero when idle and a request to
// its endpoint wakes it. Time is the manual clock: each `tick()` moves it by the autoscaler's period and runs what
// became due.
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { OBSERVE_MS, TICK_MS } from '../server/modules/dedicated/autoscaling.ts';
import { recordServed } from '../server/modules/dedicated/served.ts';
import { AUTOSCALER_KIND } from '../server/modules/dedicated/traffic.ts';
import { scratchDatabase, usingPostgres } from './support/database.ts';
import { H100, MODEL, PROVISION_MS, STOP_MS } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';
import { type ServerProcess, startServerProcess } from './support/server-process.ts';

let t: TestPlatform;
let v2: Together;
let n = 0;
const uniq = (prefix: string) => `${prefix}-${++n}`;
const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });
const base = () => `/v2/projects/${t.caller.identity.projectId}`;

beforeAll(async () => {
  t = await startTestPlatform();
  v2 = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, projectID: t.caller.identity.projectId, maxRetries: 0 });
});
afterAll(() => t?.close());

const tick = async (count = 1) => {
  for (let i = 0; i < count; i++) await t.advance(TICK_MS);
};

/** An endpoint routed wholly to one deployment with this autoscaling, READY. */
async function autoscaled(autoscaling: Record<string, unknown>) {
  const e = await v2.beta.endpoints.create({ name: uniq('ep') });
  const d = await v2.beta.endpoints.deployments.create(e.id, { name: uniq('dep'), model: MODEL, config: H100, autoscaling } as any);
  await v2.beta.endpoints.update(e.id, { trafficSplit: [{ deploymentId: d.id, weight: 1 }] } as any);
  await tick(PROVISION_MS / TICK_MS);
  expect((await deployment(e.id, d.id)).status.state).toBe('DEPLOYMENT_STATE_READY');
  return { e, d };
}

const deployment = async (endpointId: string, id: string) => (await t.http.get(`${base()}/endpoints/${endpointId}/deployments/${id}`).set(auth())).body;
const usage = async (endpointId: string) => (await t.http.get(`${base()}/endpoints/${endpointId}/usage`).set(auth())).body;
const scaled = async (endpointId: string) =>
  (await t.http.get(`${base()}/endpoints/${endpointId}/events`).query({ types: 'deployment.scaled' }).set(auth())).body.data.map((v: any) => [
    v.oldReplicas,
    v.newReplicas,
    v.source,
  ]);
const chat = (model: string) =>
  t.http
    .post('/v1/chat/completions')
    .set(auth())
    .send({ model, messages: [{ role: 'user', content: 'hi' }] });

async function send(model: string, count: number) {
  for (let i = 0; i < count; i++) expect((await chat(model)).status).toBe(200);
}

describe('metric-based autoscaling', () => {
  test('throughput_per_replica: up after scaleUpWindow under traffic, down after scaleDownWindow without; events and billing follow', async () => {
    // 0.1 requests per second per replica: 15 requests in the observed minute (0.25/s) already want 3 replicas, the most.
    const { e, d } = await autoscaled({
      minReplicas: 1,
      maxReplicas: 3,
      scaleUpWindow: '30s',
      scaleDownWindow: '60s',
      scalingMetrics: [{ name: 'throughput_per_replica', type: 'METRIC_TARGET_TYPE_AVERAGE_VALUE', target: 0.1 }],
    });
    // The need is first seen at one tick and must hold 30 s: two more ticks.
    for (let i = 0; i < 2; i++) {
      await send(e.name, 15);
      await tick();
      expect((await deployment(e.id, d.id)).status.readyReplicas).toBe(1);
    }
    await send(e.name, 15);
    await tick();
    const up = await deployment(e.id, d.id);
    expect(up.status).toMatchObject({ state: 'DEPLOYMENT_STATE_READY', readyReplicas: 3 });
    expect(up.desiredReplicas).toBe(3);
    expect(up.status.message).toMatch(/scaled up: throughput_per_replica/);
    expect(await scaled(e.id)).toEqual([[1, 3, 'runner']]);

    // Billing follows the replicas: a minute at 3 replicas is 3 replica-minutes.
    const before = await usage(e.id);
    expect(before.runningReplicas).toBe(3);
    await send(e.name, 15);
    await t.advance(30_000);
    await send(e.name, 15);
    await t.advance(30_000);
    const after = await usage(e.id);
    expect(after.replicaMinutes - before.replicaMinutes).toBeCloseTo(3, 6);
    expect((await deployment(e.id, d.id)).status.readyReplicas).toBe(3);

    // Traffic stops: the last requests leave the observed minute, then the need for fewer holds 60 s.
    await tick(OBSERVE_MS / TICK_MS);
    expect((await deployment(e.id, d.id)).status.readyReplicas).toBe(3);
    await tick(60_000 / TICK_MS);
    const down = await deployment(e.id, d.id);
    expect(down.status.readyReplicas).toBe(1);
    expect(down.status.message).toMatch(/scaled down/);
    expect(await scaled(e.id)).toEqual([
      [1, 3, 'runner'],
      [3, 1, 'runner'],
    ]);
    expect((await usage(e.id)).runningReplicas).toBe(1);
  });

  test('inflight_requests follows the time spent serving (Little law), within maxReplicas', async () => {
    const { e, d } = await autoscaled({
      minReplicas: 1,
      maxReplicas: 3,
      scalingMetrics: [{ name: 'inflight_requests', type: 'METRIC_TARGET_TYPE_VALUE', target: 1 }],
    });
    // 5 requests of 30 s each in the last minute: 2.5 in flight on average -> 3 replicas (scaleUpWindow defaults to 0).
    const put = (latencyMs: number) =>
      t.services.db.write((tx) =>
        recordServed(tx, { projectId: e.projectId, endpointId: e.id, deploymentId: d.id, status: 200, latencyMs, at: t.clock.now() }),
      );
    for (let i = 0; i < 5; i++) await put(30_000);
    await tick();
    expect((await deployment(e.id, d.id)).status.readyReplicas).toBe(3);
    // Twice that: still capped at maxReplicas.
    for (let i = 0; i < 10; i++) await put(30_000);
    await tick();
    expect((await deployment(e.id, d.id)).status.readyReplicas).toBe(3);
    expect(await scaled(e.id)).toEqual([[1, 3, 'runner']]);

    // A caller's new bounds keep the replicas it runs within them (not back to minReplicas).
    const patch = (autoscaling: Record<string, unknown>) => t.http.patch(`${base()}/endpoints/${e.id}/deployments/${d.id}`).set(auth()).send({ autoscaling });
    expect((await patch({ maxReplicas: 2 })).body.status.readyReplicas).toBe(2);
    expect((await patch({ maxReplicas: 5 })).body.status.readyReplicas).toBe(2);
    expect(await scaled(e.id)).toEqual([
      [1, 3, 'runner'],
      [3, 2, 'api'],
    ]);
  });

  test('e2e_latency holds a latency percentile at its target by scaling in proportion', async () => {
    const { e, d } = await autoscaled({
      minReplicas: 1,
      maxReplicas: 4,
      scalingMetrics: [{ name: 'e2e_latency', type: 'METRIC_TARGET_TYPE_VALUE', target: 100, percentile: 'p90' }],
    });
    // No requests: no recommendation, nothing moves.
    await tick(2);
    expect((await deployment(e.id, d.id)).status.readyReplicas).toBe(1);
    // p90 of 10 requests, 9 at 20 ms and one at 250 ms, is 20 ms: below target, and 1 is the minimum.
    const put = (latencyMs: number) =>
      t.services.db.write((tx) =>
        recordServed(tx, { projectId: e.projectId, endpointId: e.id, deploymentId: d.id, status: 200, latencyMs, at: t.clock.now() }),
      );
    for (let i = 0; i < 9; i++) await put(20);
    await put(250);
    await tick();
    expect((await deployment(e.id, d.id)).status.readyReplicas).toBe(1);
    // Ten more at 250 ms: p90 250 ms at 1 replica wants ceil(1 x 250 / 100) = 3.
    for (let i = 0; i < 10; i++) await put(250);
    await tick();
    const up = await deployment(e.id, d.id);
    expect(up.status.readyReplicas).toBe(3);
    expect(up.status.message).toMatch(/e2e_latency 250 for a target of 100/);
  });

  test('minReplicas 0: to zero after scaleToZeroWindow without traffic, and a request wakes it', async () => {
    const { e, d } = await autoscaled({ minReplicas: 0, maxReplicas: 2, scaleToZeroWindow: '120s' });
    expect((await deployment(e.id, d.id)).status.readyReplicas).toBe(1);
    await send(e.name, 1);
    await tick(7);
    expect((await deployment(e.id, d.id)).status.state).toBe('DEPLOYMENT_STATE_READY');
    await tick(2);
    // Stopping (its replicas released after STOP_MS, within the tick) once 120 s passed without a request.
    expect(['DEPLOYMENT_STATE_STOPPING', 'DEPLOYMENT_STATE_STOPPED']).toContain((await deployment(e.id, d.id)).status.state);
    await t.advance(STOP_MS);
    const asleep = await deployment(e.id, d.id);
    expect(asleep.status).toMatchObject({ state: 'DEPLOYMENT_STATE_STOPPED', readyReplicas: 0 });
    expect(asleep.status.message).toMatch(/Scaled to zero/);
    expect((await usage(e.id)).runningReplicas).toBe(0);
    // Billing stopped with the replicas.
    const idle = (await usage(e.id)).replicaMinutes;
    await tick(4);
    expect((await usage(e.id)).replicaMinutes).toBe(idle);

    // A request: 503 while it wakes (the autoscaler's next tick, due at once), then served once READY.
    expectError(await chat(e.name), 503, { code: 'endpoint_not_ready', param: 'model' });
    await t.advance(0);
    expect((await deployment(e.id, d.id)).status.state).toBe('DEPLOYMENT_STATE_PROVISIONING');
    expectError(await chat(e.name), 503, { code: 'endpoint_not_ready', param: 'model' });
    await t.advance(PROVISION_MS);
    expect((await deployment(e.id, d.id)).status).toMatchObject({ state: 'DEPLOYMENT_STATE_READY', readyReplicas: 1 });
    expect((await chat(e.name)).status).toBe(200);

    const states = (await t.http.get(`${base()}/endpoints/${e.id}/events`).query({ types: 'deployment.state_changed' }).set(auth())).body.data.map((v: any) => [
      v.status,
      v.reason,
      v.source,
    ]);
    expect(states.slice(-4)).toEqual([
      ['DEPLOYMENT_STATE_STOPPING', 'stop', 'runner'],
      ['DEPLOYMENT_STATE_STOPPED', 'stopped', 'runner'],
      ['DEPLOYMENT_STATE_PROVISIONING', 'start', 'runner'],
      ['DEPLOYMENT_STATE_READY', 'provisioned', 'runner'],
    ]);
    // Scaled to zero again, a caller may still stop it for good with 0/0: then no request wakes it.
    await tick(10);
    await t.advance(STOP_MS);
    expect((await deployment(e.id, d.id)).status.state).toBe('DEPLOYMENT_STATE_STOPPED');
    const stopped = await t.http
      .patch(`${base()}/endpoints/${e.id}/deployments/${d.id}`)
      .set(auth())
      .send({ autoscaling: { minReplicas: 0, maxReplicas: 0 } });
    expect(stopped.status, JSON.stringify(stopped.body)).toBe(200);
    expect(stopped.body.status.state).toBe('DEPLOYMENT_STATE_STOPPED');
    expect(await chat(e.name).then((r) => r.status)).toBe(503);
    await t.advance(0);
    expect((await deployment(e.id, d.id)).status.state).toBe('DEPLOYMENT_STATE_STOPPED');
  });

  test('a request while it is scaling to zero (STOPPING) wakes it once STOPPED', async () => {
    const { e, d } = await autoscaled({ minReplicas: 0, maxReplicas: 1, scaleToZeroWindow: '30s' });
    const state = async () => (await deployment(e.id, d.id)).status.state;
    for (let i = 0; i < 20 && (await state()) === 'DEPLOYMENT_STATE_READY'; i++) await t.advance(5_000);
    expect(await state()).toBe('DEPLOYMENT_STATE_STOPPING');
    expectError(await chat(e.name), 503, { code: 'endpoint_not_ready' });
    await t.advance(STOP_MS);
    // STOPPED by the runner's step, then woken by the autoscaler's first tick after that.
    expect(await state()).toBe('DEPLOYMENT_STATE_STOPPED');
    await t.advance(TICK_MS);
    expect(await state()).toBe('DEPLOYMENT_STATE_PROVISIONING');
    await t.advance(PROVISION_MS);
    expect((await chat(e.name)).status).toBe(200);
  });

  test('one chain of ticks per deployment: a second one started at once (two processes) ends at its first tick', async () => {
    const { d } = await autoscaled({ minReplicas: 0, maxReplicas: 1, scaleToZeroWindow: '3600s' });
    const live = () => t.services.db.prisma.workItem.count({ where: { kind: AUTOSCALER_KIND, subjectId: d.id, state: { in: ['queued', 'running'] } } });
    expect(await live()).toBe(1);
    await t.services.db.write((tx) =>
      tx.workItem.create({
        data: { id: `work_${'z'.repeat(20)}`, kind: AUTOSCALER_KIND, subjectId: d.id, state: 'queued', runAt: 0n, createdAt: 0n, updatedAt: 0n },
      }),
    );
    expect(await live()).toBe(2);
    await tick(2);
    expect(await live()).toBe(1);
  });

  test('a policy the autoscaler cannot follow is 400 naming the field', async () => {
    const e = await v2.beta.endpoints.create({ name: uniq('ep') });
    const post = (autoscaling: Record<string, unknown>) =>
      t.http
        .post(`${base()}/endpoints/${e.id}/deployments`)
        .set(auth())
        .send({ name: uniq('d'), model: MODEL, config: H100, autoscaling });
    const metric = (m: Record<string, unknown>) => ({
      scalingMetrics: [{ name: 'inflight_requests', type: 'METRIC_TARGET_TYPE_AVERAGE_VALUE', target: 4, ...m }],
    });
    expectError(await post(metric({ name: 'gpu_utilization' })), 400, { code: 'unsupported_metric', param: 'autoscaling.scalingMetrics.0.name' });
    expectError(await post(metric({ name: 'ttft' })), 400, { code: 'unsupported_metric', param: 'autoscaling.scalingMetrics.0.name' });
    expectError(await post(metric({ type: 'METRIC_TARGET_TYPE_UTILIZATION' })), 400, {
      code: 'unsupported_metric_type',
      param: 'autoscaling.scalingMetrics.0.type',
    });
    expectError(await post(metric({ target: 0 })), 400, { code: 'invalid_autoscaling', param: 'autoscaling.scalingMetrics.0.target' });
    expectError(await post(metric({ percentile: 'p95' })), 400, { code: 'invalid_autoscaling', param: 'autoscaling.scalingMetrics.0.percentile' });
    expectError(await post(metric({ name: 'e2e_latency', type: 'METRIC_TARGET_TYPE_VALUE', target: 200, percentile: 'p42' })), 400, {
      param: 'autoscaling.scalingMetrics.0.percentile',
    });
    expectError(await post({ scaleUpWindow: '-5s' }), 400, { code: 'invalid_autoscaling', param: 'autoscaling.scaleUpWindow' });
    const ok = await post(metric({ name: 'e2e_latency', type: 'METRIC_TARGET_TYPE_VALUE', target: 200, percentile: 'p99' }));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const patch = await t.http
      .patch(`${base()}/endpoints/${e.id}/deployments/${ok.body.id}`)
      .set(auth())
      .send({ autoscaling: { scalingMetrics: [{ name: 'cache_hit_rate', type: 'METRIC_TARGET_TYPE_VALUE', target: 1 }] } });
    expectError(patch, 400, { code: 'unsupported_metric', param: 'autoscaling.scalingMetrics.0.name' });
  });
});

describe('the autoscaler across processes', () => {
  // Real processes on the system clock: short ticks and provisioning, and polling with generous deadlines (never a
  // timing assertion). The observed minute is the autoscaler's own, so the traffic sent stays in view throughout.
  test.skipIf(!usingPostgres)(
    'two server processes on one PostgreSQL, one killed -9: each decision is taken once, the chain goes on in the other',
    { timeout: 180_000 },
    async () => {
      const scratch = await scratchDatabase('postgresql');
      const env = {
        DATABASE_URL: scratch.url,
        DURATION_DEPLOYMENT_PROVISION_MS: '200',
        DURATION_AUTOSCALER_TICK_MS: '200',
        RUNNER_POLL_MS: '50',
        RUNNER_LEASE_MS: '2000',
        RATE_LIMITS: 'off',
        CONTROL_KEY: TEST_CONTROL_KEY,
      };
      const servers: ServerProcess[] = [];
      try {
        servers.push(await startServerProcess(env));
        servers.push(await startServerProcess(env));
        const [a, b] = servers as [ServerProcess, ServerProcess];
        const key = a.key!;
        const call = async (server: ServerProcess, method: string, path: string, body?: unknown) => {
          const res = await fetch(`${server.url}${path}`, {
            method,
            headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          return { status: res.status, body: (await res.json()) as any };
        };
        const projectId = (await call(a, 'GET', '/v1/whoami')).body.project_id;
        const v2 = `/v2/projects/${projectId}`;
        const e = (await call(a, 'POST', `${v2}/endpoints`, { name: 'scaled' })).body;
        const d = (
          await call(a, 'POST', `${v2}/endpoints/${e.id}/deployments`, {
            name: 'primary',
            model: MODEL,
            config: H100,
            autoscaling: {
              minReplicas: 1,
              maxReplicas: 2,
              scaleUpWindow: '1s',
              scaleDownWindow: '3600s',
              scalingMetrics: [{ name: 'throughput_per_replica', type: 'METRIC_TARGET_TYPE_AVERAGE_VALUE', target: 0.01 }],
            },
          })
        ).body;
        expect((await call(b, 'PATCH', `${v2}/endpoints/${e.id}`, { trafficSplit: [{ deploymentId: d.id, weight: 1 }] })).status).toBe(200);
        const replicas = async () => (await call(b, 'GET', `${v2}/endpoints/${e.id}/deployments/${d.id}`)).body.status;
        let state: any;
        const waitFor = async (what: (s: any) => boolean) => {
          const deadline = Date.now() + 60_000;
          for (;;) {
            state = await replicas();
            if (what(state) || Date.now() > deadline) return what(state);
            await new Promise((r) => setTimeout(r, 100));
          }
        };
        expect(await waitFor((s) => s.state === 'DEPLOYMENT_STATE_READY'), JSON.stringify(state)).toBe(true);

        // 6 requests in the observed minute want 10 replicas at 0.01/s each: grows to maxReplicas, once.
        for (let i = 0; i < 6; i++) {
          const res = await call(i % 2 ? a : b, 'POST', '/v1/chat/completions', { model: e.name, messages: [{ role: 'user', content: 'hi' }] });
          expect(res.status, JSON.stringify(res.body)).toBe(200);
        }
        expect(await waitFor((s) => s.readyReplicas === 2), JSON.stringify(state)).toBe(true);

        // One process dies mid-run; through the other, a larger maximum: the chain (wherever its item was) goes on.
        await a.stop('SIGKILL');
        expect((await call(b, 'PATCH', `${v2}/endpoints/${e.id}/deployments/${d.id}`, { autoscaling: { maxReplicas: 3 } })).status).toBe(200);
        expect(await waitFor((s) => s.readyReplicas === 3), JSON.stringify(state)).toBe(true);
        // A few more ticks (the clock moved past five of them, each run in its turn), for a doubled decision to show.
        const advanced = await fetch(`${b.url}/_control/time/advance`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${TEST_CONTROL_KEY}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ seconds: 1 }),
        });
        expect(advanced.status).toBe(200);
        const events = (await call(b, 'GET', `${v2}/endpoints/${e.id}/events?types=deployment.scaled`)).body.data;
        expect(events.map((v: any) => [v.oldReplicas, v.newReplicas, v.source])).toEqual([
          [1, 2, 'runner'],
          [2, 3, 'runner'],
        ]);
        const usage = (await call(b, 'GET', `${v2}/endpoints/${e.id}/usage`)).body;
        expect(usage.runningReplicas).toBe(3);
      } finally {
        for (const s of servers) await s.stop('SIGKILL');
        await scratch.drop();
      }
    },
  );
});
