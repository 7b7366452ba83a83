// Rollouts (spec/tags/rollouts.yaml): an endpoint's traffic moved from a source deployment to a target in steps on
// the durable runner (the manual clock drives each step's time), checked against what the target served. Inference
// traffic is counted by `x-served-by` at every step; the official client's `beta.endpoints.rollouts.*` runs too.
//
// | SDK method (together-ai)                                   | HTTP sent                                   | operationId            |
// |------------------------------------------------------------|---------------------------------------------|------------------------|
// | beta.endpoints.rollouts.create(endpointId, body)           | POST .../endpoints/{e}/rollouts             | createRollout          |
// | beta.endpoints.rollouts.previewDefaults(endpointId, body)  | POST .../rollouts/preview-defaults          | previewRolloutDefaults |
// | beta.endpoints.rollouts.list(endpointId, {filter?})        | GET .../rollouts                            | listRollouts           |
// | beta.endpoints.rollouts.retrieve(id, {endpointId})         | GET .../rollouts/{id}                       | getRollout             |
// | beta.endpoints.rollouts.start/pause/resume/promote/cancel  | POST .../rollouts/{id}/<verb>               | <verb>Rollout          |
// | beta.endpoints.rollouts.delete(id, {endpointId, etag?})    | DELETE .../rollouts/{id}?etag=              | deleteRollout          |
import Together from 'together-ai';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../server/core/config.ts';
import { rolloutMachine, rolloutStepMachine } from '../server/modules/rollouts/machine.ts';
import { H100, MODEL, PROVISION_MS, STOP_MS } from './support/endpoints.ts';
import { expectError, refusal } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let v2: Together;
let n = 0;
const uniq = (prefix: string) => `${prefix}-${++n}`;
const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });
const base = () => `/v2/projects/${t.caller.identity.projectId}/endpoints`;
const STEP_MS = 60_000;
const BROKEN = 'Qwen/Qwen2.5-7B-Instruct';

beforeAll(async () => {
  // Qwen 2.5 7B's chat goes to an upstream engine on a closed port: a deployment of it answers every chat with an error.
  const route = { models: [BROKEN], capabilities: ['chat'], engine: 'upstream', url: 'http://127.0.0.1:9/v1' };
  t = await startTestPlatform({ config: { engines: loadConfig({ ENGINES: JSON.stringify({ routes: [route] }) }).engines } });
  v2 = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, projectID: t.caller.identity.projectId, maxRetries: 0 });
});
afterAll(() => t?.close());
// Each test's endpoints are deleted after it, releasing their deployments' hardware for the next.
const endpoints: string[] = [];
afterEach(async () => {
  for (const id of endpoints.splice(0)) await t.http.delete(`${base()}/${id}`).set(auth());
});

/** An endpoint with two READY deployments, all traffic on `blue` (weight 1); `green` runs `targetModel`. */
async function pair(target: { model: string; config: string } = { model: MODEL, config: H100 }) {
  const e = await v2.beta.endpoints.create({ name: uniq('ro') });
  endpoints.push(e.id);
  const deploy = (name: string, m = { model: MODEL, config: H100 }) =>
    v2.beta.endpoints.deployments.create(e.id, { name, ...m, autoscaling: { minReplicas: 1, maxReplicas: 1 } } as any);
  const blue = await deploy('blue');
  const green = await deploy('green', target);
  await v2.beta.endpoints.update(e.id, { trafficSplit: [{ deploymentId: blue.id, weight: 1 }] } as any);
  await t.advance(PROVISION_MS);
  return { e, blue, green };
}

type Pair = Awaited<ReturnType<typeof pair>>;

const create = (p: Pair, body: Record<string, unknown> = {}) =>
  t.http
    .post(`${base()}/${p.e.id}/rollouts`)
    .set(auth())
    .send({
      sourceDeploymentId: p.blue.id,
      targetDeploymentId: p.green.id,
      canary: { steps: [{ traffic: 50 }, { traffic: 100 }], stepInterval: '60s' },
      ...body,
    });
const act = (p: Pair, id: string, verb: string, body?: Record<string, unknown>) => {
  const req = t.http.post(`${base()}/${p.e.id}/rollouts/${id}/${verb}`).set(auth());
  return body === undefined ? req : req.send(body);
};
const get = async (p: Pair, id: string) => (await t.http.get(`${base()}/${p.e.id}/rollouts/${id}`).set(auth())).body;
const endpoint = async (p: Pair) => (await t.http.get(`${base()}/${p.e.id}`).set(auth())).body;
const chat = (p: Pair) =>
  t.http
    .post('/v1/chat/completions')
    .set(auth())
    .send({ model: p.e.name, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });

/** Sends `count` chats to the endpoint and counts who served them (`failed`: how many answered an error instead). */
async function served(p: Pair, count: number, failures = false) {
  const by: Record<string, number> = {};
  for (let i = 0; i < count; i++) {
    const res = await chat(p);
    if (failures && res.status >= 500) {
      by.failed = (by.failed ?? 0) + 1;
      continue;
    }
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const d = res.headers['x-served-by'];
    by[d] = (by[d] ?? 0) + 1;
  }
  return { blue: by[p.blue.id] ?? 0, green: by[p.green.id] ?? 0, ...(failures ? { failed: by.failed ?? 0 } : {}) };
}

describe('a canary driven by real inference traffic', () => {
  test('4 steps: each moves the split, inference follows it (x-served-by), rules pass on what the target served, then it completes and hands the split back', async () => {
    const p = await pair();
    const rules = [
      { name: 'router_error_rate', stat: 'METRIC_STAT_TYPE_AVG', thresholdCheck: { value: 0.05, operator: 'THRESHOLD_OPERATOR_LTE' } },
      { name: 'router_latency', stat: 'METRIC_STAT_TYPE_PERCENTILE', percentile: 99, thresholdCheck: { value: 60_000, operator: 'THRESHOLD_OPERATOR_LT' } },
    ];
    const steps = [10, 25, 50, 100];
    const created = await create(p, { canary: { steps: steps.map((traffic) => ({ traffic })), stepInterval: '60s' }, metrics: rules });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ state: 'ROLLOUT_STATE_PENDING', strategy: 'ROLLOUT_STRATEGY_TYPE_CANARY', status: { totalSteps: 4 } });
    const id = created.body.id;
    expect((await act(p, id, 'start')).body).toMatchObject({ state: 'ROLLOUT_STATE_RUNNING', currentStep: 0, currentTrafficPercent: 10 });

    const REQUESTS = 200;
    const counts: { percent: number; blue: number; green: number }[] = [];
    for (const [i, percent] of steps.entries()) {
      const r = await get(p, id);
      expect(r).toMatchObject({ state: 'ROLLOUT_STATE_RUNNING', currentStep: i, currentTrafficPercent: percent });
      expect(r.status.steps[i].state).toBe('ROLLOUT_STEP_STATE_RUNNING');
      expect((await endpoint(p)).trafficSplit).toEqual([
        { deploymentId: p.blue.id, weight: 100 - percent },
        { deploymentId: p.green.id, weight: percent },
      ]);
      const c = await served(p, REQUESTS);
      counts.push({ percent, ...c });
      // The split's weights, request by request (a low-discrepancy sequence): within a few requests.
      expect(Math.abs(c.green - (REQUESTS * percent) / 100)).toBeLessThanOrEqual(4);
      expect(c.blue + c.green).toBe(REQUESTS);
      await t.advance(STEP_MS);
      const after = await get(p, id);
      expect(after.status.steps[i].state).toBe('ROLLOUT_STEP_STATE_PASSED');
      const [errorRate, latency] = after.status.steps[i].metrics;
      expect(errorRate).toMatchObject({ name: 'router_error_rate', targetValue: 0, verdict: 'METRIC_VERDICT_PASS', check: 'METRIC_CHECK_TYPE_THRESHOLD' });
      expect(latency).toMatchObject({ name: 'router_latency', percentile: 99, verdict: 'METRIC_VERDICT_PASS' });
      expect(latency.targetValue).toBeGreaterThanOrEqual(0);
    }
    console.log(
      `canary of 4 steps, ${REQUESTS} chats per step (x-served-by):\n${counts.map((c) => `  ${c.percent}%: target ${c.green}, source ${c.blue}`).join('\n')}`,
    );

    const done = await get(p, id);
    expect(done).toMatchObject({ state: 'ROLLOUT_STATE_COMPLETED', currentTrafficPercent: 100 });
    expect(done.completedAt).toBeDefined();
    const e = await endpoint(p);
    expect(e.trafficSplit).toEqual([{ deploymentId: p.green.id, weight: 100 }]);
    // Handed back: the caller may change the split again.
    expect(
      (
        await t.http
          .patch(`${base()}/${p.e.id}`)
          .set(auth())
          .send({ trafficSplit: [{ deploymentId: p.blue.id, weight: 1 }] })
      ).status,
    ).toBe(200);
  });
});

describe('metric rules', () => {
  test('a rule that fails aborts the rollout: the step FAILED with the observed values, the original split restored and handed back', async () => {
    const p = await pair();
    // Latency is never below 0 ms: a rule no answer can meet.
    const rule = { name: 'router_latency', stat: 'METRIC_STAT_TYPE_MAX', thresholdCheck: { value: 0, operator: 'THRESHOLD_OPERATOR_LT' } };
    const id = (await create(p, { metrics: [rule] })).body.id;
    await act(p, id, 'start');
    const c = await served(p, 20);
    expect(c.green).toBe(10);
    await t.advance(STEP_MS);
    const r = await get(p, id);
    expect(r.state).toBe('ROLLOUT_STATE_ABORTED');
    expect(r.status.steps.map((s: any) => s.state)).toEqual(['ROLLOUT_STEP_STATE_FAILED', 'ROLLOUT_STEP_STATE_PENDING']);
    expect(r.status.steps[0].failureReason).toMatch(/router_latency/);
    expect(r.status.condition).toMatchObject({ category: 'ROLLOUT_FAILURE_CATEGORY_METRIC_REGRESSION', atStep: 0 });
    const [m] = r.status.condition.metrics;
    expect(m).toMatchObject({
      name: 'router_latency',
      stat: 'METRIC_STAT_TYPE_MAX',
      threshold: 0,
      operator: 'THRESHOLD_OPERATOR_LT',
      verdict: 'METRIC_VERDICT_BREACHED',
    });
    expect(m.targetValue).toBeGreaterThanOrEqual(0);
    const e = await endpoint(p);
    expect(e.trafficSplit).toEqual([{ deploymentId: p.blue.id, weight: 1 }]);
    expect(await served(p, 10)).toEqual({ blue: 10, green: 0 });
    expect(
      (
        await t.http
          .patch(`${base()}/${p.e.id}`)
          .set(auth())
          .send({ trafficSplit: [{ deploymentId: p.blue.id, weight: 2 }] })
      ).status,
    ).toBe(200);
  });

  test("a target that fails its requests: the error-rate rule breaches on the target's 5xx answers and the rollout aborts", async () => {
    const p = await pair({ model: BROKEN, config: 'cr_qwen2_5_7b_h100' });
    const rule = { name: 'router_error_rate', stat: 'METRIC_STAT_TYPE_AVG', thresholdCheck: { value: 0.05, operator: 'THRESHOLD_OPERATOR_LTE' } };
    const id = (await create(p, { canary: { steps: [{ traffic: 25 }, { traffic: 100 }], stepInterval: '60s' }, metrics: [rule] })).body.id;
    await act(p, id, 'start');
    // A quarter of the requests go to the target, and every one of them fails there.
    const c = await served(p, 40, true);
    expect(c).toMatchObject({ green: 0, blue: 40 - c.failed! });
    expect(Math.abs(c.failed! - 10)).toBeLessThanOrEqual(2);
    await t.advance(STEP_MS);
    const r = await get(p, id);
    expect(r).toMatchObject({ state: 'ROLLOUT_STATE_ABORTED', status: { condition: { category: 'ROLLOUT_FAILURE_CATEGORY_METRIC_REGRESSION', atStep: 0 } } });
    expect(r.status.condition.metrics).toEqual([
      expect.objectContaining({ name: 'router_error_rate', targetValue: 1, threshold: 0.05, verdict: 'METRIC_VERDICT_BREACHED' }),
    ]);
    expect((await endpoint(p)).trafficSplit).toEqual([{ deploymentId: p.blue.id, weight: 1 }]);
    expect(await served(p, 10, true)).toEqual({ blue: 10, green: 0, failed: 0 });
  });

  test("inflight_requests reads the answers' spans over the window", async () => {
    const p = await pair();
    const rule = { name: 'inflight_requests', stat: 'METRIC_STAT_TYPE_MAX', thresholdCheck: { value: 1, operator: 'THRESHOLD_OPERATOR_LTE' } };
    const id = (await create(p, { canary: { steps: [{ traffic: 100 }], stepInterval: '60s' }, metrics: [rule] })).body.id;
    await act(p, id, 'start');
    // One at a time: never more than one in flight.
    await served(p, 5);
    await t.advance(STEP_MS);
    const r = await get(p, id);
    expect(r.state).toBe('ROLLOUT_STATE_COMPLETED');
    expect(r.status.steps[0].metrics[0]).toMatchObject({ name: 'inflight_requests', verdict: 'METRIC_VERDICT_PASS' });
    expect(r.status.steps[0].metrics[0].targetValue).toBeLessThanOrEqual(1);
  });

  test('a step in which the target served nothing: its rules are UNAVAILABLE and do not fail it', async () => {
    const p = await pair();
    const rules = [
      { name: 'router_error_rate', stat: 'METRIC_STAT_TYPE_AVG', thresholdCheck: { value: 0, operator: 'THRESHOLD_OPERATOR_LT' } },
      {
        name: 'serving_latency',
        stat: 'METRIC_STAT_TYPE_AVG',
        regressionCheck: { maxRegressionPercent: 10, direction: 'REGRESSION_DIRECTION_HIGHER_IS_WORSE' },
      },
    ];
    const id = (await create(p, { canary: { steps: [{ traffic: 100 }], stepInterval: '60s' }, metrics: rules })).body.id;
    await act(p, id, 'start');
    await t.advance(STEP_MS);
    const r = await get(p, id);
    expect(r.state).toBe('ROLLOUT_STATE_COMPLETED');
    expect(r.status.steps[0].metrics.map((m: any) => m.verdict)).toEqual(['METRIC_VERDICT_UNAVAILABLE', 'METRIC_VERDICT_UNAVAILABLE']);
    expect(r.status.steps[0].metrics[0].targetValue).toBeUndefined();
  });

  test("a regression check compares the target with the source over the step's window", async () => {
    const p = await pair();
    // The target errs on nothing and the source neither: 0 is no regression of 0.
    const rule = {
      name: 'router_error_rate',
      stat: 'METRIC_STAT_TYPE_AVG',
      regressionCheck: { maxRegressionPercent: 0, direction: 'REGRESSION_DIRECTION_HIGHER_IS_WORSE' },
    };
    const id = (await create(p, { metrics: [rule] })).body.id;
    await act(p, id, 'start');
    await served(p, 10);
    await t.advance(STEP_MS);
    const r = await get(p, id);
    expect(r.status.steps[0].metrics[0]).toMatchObject({
      check: 'METRIC_CHECK_TYPE_REGRESSION',
      sourceValue: 0,
      targetValue: 0,
      verdict: 'METRIC_VERDICT_PASS',
    });
    expect(r.currentStep).toBe(1);
    await act(p, id, 'cancel', { reason: 'done testing' });
  });
});

describe('the caller moves', () => {
  test('pause holds the step clock, resume runs what was left of it', async () => {
    const p = await pair();
    const id = (await create(p)).body.id;
    await act(p, id, 'start');
    await t.advance(20_000);
    const paused = await act(p, id, 'pause', { reason: 'looking at dashboards' });
    expect(paused.body).toMatchObject({ state: 'ROLLOUT_STATE_PAUSED', currentStep: 0, pauseInfo: { reason: 'looking at dashboards' } });
    await t.advance(10 * STEP_MS);
    expect(await get(p, id)).toMatchObject({ state: 'ROLLOUT_STATE_PAUSED', currentStep: 0 });
    // The split stays where the step put it.
    expect((await served(p, 10)).green).toBe(5);
    const resumed = await act(p, id, 'resume', {});
    expect(resumed.body).toMatchObject({ state: 'ROLLOUT_STATE_RUNNING', currentStep: 0 });
    expect(resumed.body.pauseInfo).toBeUndefined();
    await t.advance(39_000);
    expect((await get(p, id)).currentStep).toBe(0);
    await t.advance(1_000);
    expect(await get(p, id)).toMatchObject({ state: 'ROLLOUT_STATE_RUNNING', currentStep: 1, currentTrafficPercent: 100 });
    await t.advance(STEP_MS);
    expect((await get(p, id)).state).toBe('ROLLOUT_STATE_COMPLETED');
  });

  test('promote jumps to the end: all traffic to the target, the final replicas applied, the split handed back', async () => {
    const p = await pair();
    const created = await create(p, { canary: { steps: [10, 25, 50, 100].map((traffic) => ({ traffic })) }, finalSourceReplicas: 0, finalTargetReplicas: 2 });
    expect(created.body.status.totalSteps).toBe(4);
    const id = created.body.id;
    await act(p, id, 'start');
    const promoted = await act(p, id, 'promote', {});
    expect(promoted.body).toMatchObject({ state: 'ROLLOUT_STATE_COMPLETED', currentTrafficPercent: 100 });
    expect(promoted.body.status.steps.map((s: any) => s.state)).toEqual([
      'ROLLOUT_STEP_STATE_PASSED',
      'ROLLOUT_STEP_STATE_PENDING',
      'ROLLOUT_STEP_STATE_PENDING',
      'ROLLOUT_STEP_STATE_PENDING',
    ]);
    expect((await endpoint(p)).trafficSplit).toEqual([{ deploymentId: p.green.id, weight: 100 }]);
    expect(await served(p, 10)).toEqual({ blue: 0, green: 10 });
    const green = await v2.beta.endpoints.deployments.retrieve(p.green.id, { endpointId: p.e.id } as any);
    expect(green).toMatchObject({ status: { state: 'DEPLOYMENT_STATE_READY', readyReplicas: 2 }, autoscaling: { minReplicas: 2 } });
    await t.advance(STOP_MS);
    const blue = await v2.beta.endpoints.deployments.retrieve(p.blue.id, { endpointId: p.e.id } as any);
    expect(blue).toMatchObject({ status: { state: 'DEPLOYMENT_STATE_STOPPED' }, autoscaling: { minReplicas: 0, maxReplicas: 0 } });
    // The endpoint's events record the final replicas.
    const events = (await t.http.get(`${base()}/${p.e.id}/events`).set(auth())).body.data;
    expect(events.some((ev: any) => ev.type === 'deployment.scaled' && ev.newReplicas === 2)).toBe(true);
  });

  test('completion applies the final replicas too', async () => {
    const p = await pair();
    const id = (await create(p, { canary: { steps: [{ traffic: 100 }], stepInterval: '60s' }, finalTargetReplicas: 2 })).body.id;
    await act(p, id, 'start');
    await t.advance(STEP_MS);
    expect((await get(p, id)).state).toBe('ROLLOUT_STATE_COMPLETED');
    const green = await v2.beta.endpoints.deployments.retrieve(p.green.id, { endpointId: p.e.id } as any);
    expect(green).toMatchObject({ status: { readyReplicas: 2 }, autoscaling: { minReplicas: 2 } });
    // The source, given no final count, keeps its replicas.
    const blue = await v2.beta.endpoints.deployments.retrieve(p.blue.id, { endpointId: p.e.id } as any);
    expect(blue).toMatchObject({ status: { state: 'DEPLOYMENT_STATE_READY' }, autoscaling: { minReplicas: 1, maxReplicas: 1 } });
  });

  test("cancel restores the original split (REVERT), or leaves the step's (FREEZE); either way hands it back", async () => {
    const p = await pair();
    const first = (await create(p)).body.id;
    await act(p, first, 'start');
    expectError(await act(p, first, 'cancel', {}), 400, { param: 'reason' });
    const canceled = await act(p, first, 'cancel', { reason: 'wrong build' });
    expect(canceled.body).toMatchObject({ state: 'ROLLOUT_STATE_CANCELED' });
    expect(canceled.body.status.condition).toMatchObject({ category: 'ROLLOUT_FAILURE_CATEGORY_ABORTED_BY_OPERATOR', message: 'Canceled: wrong build' });
    expect(canceled.body.status.steps[0]).toMatchObject({ state: 'ROLLOUT_STEP_STATE_FAILED', failureReason: 'Canceled: wrong build' });
    expect((await endpoint(p)).trafficSplit).toEqual([{ deploymentId: p.blue.id, weight: 1 }]);

    const second = (await create(p)).body.id;
    await act(p, second, 'start');
    await act(p, second, 'cancel', { reason: 'keep half', disposition: 'CANCEL_DISPOSITION_FREEZE' });
    const e = await endpoint(p);
    expect(e.trafficSplit).toEqual([
      { deploymentId: p.blue.id, weight: 50 },
      { deploymentId: p.green.id, weight: 50 },
    ]);
    expect(
      (
        await t.http
          .patch(`${base()}/${p.e.id}`)
          .set(auth())
          .send({ trafficSplit: [{ deploymentId: p.blue.id, weight: 1 }] })
      ).status,
    ).toBe(200);
  });

  test('every move of the machine a caller makes, from every state it can be in: allowed where the table says, else the one 409', async () => {
    const p = await pair();
    const failing = [{ name: 'router_latency', stat: 'METRIC_STAT_TYPE_MAX', thresholdCheck: { value: 0, operator: 'THRESHOLD_OPERATOR_LT' } }];
    /** A rollout of `p` brought into `state` by the caller's moves (and the runner's, for ABORTED). */
    async function into(state: string): Promise<string> {
      const id = (await create(p, state === 'ROLLOUT_STATE_ABORTED' ? { metrics: failing } : {})).body.id;
      if (state === 'ROLLOUT_STATE_PENDING') return id;
      if (state === 'ROLLOUT_STATE_CANCELED') return (await act(p, id, 'cancel', { reason: 'x' })).body.id;
      await act(p, id, 'start');
      if (state === 'ROLLOUT_STATE_PAUSED') await act(p, id, 'pause', {});
      if (state === 'ROLLOUT_STATE_COMPLETED') await act(p, id, 'promote', {});
      if (state === 'ROLLOUT_STATE_ABORTED') {
        await served(p, 4);
        await t.advance(STEP_MS);
      }
      return id;
    }
    const verbs = { start: undefined, pause: {}, resume: {}, promote: {}, cancel: { reason: 'x' } } as const;
    const reached = [
      'ROLLOUT_STATE_PENDING',
      'ROLLOUT_STATE_RUNNING',
      'ROLLOUT_STATE_PAUSED',
      'ROLLOUT_STATE_COMPLETED',
      'ROLLOUT_STATE_ABORTED',
      'ROLLOUT_STATE_CANCELED',
    ];
    for (const state of reached) {
      for (const [verb, body] of Object.entries(verbs)) {
        const id = await into(state);
        expect((await get(p, id)).state, `${state} by the setup`).toBe(state);
        const res = await act(p, id, verb, body);
        const allowed = rolloutMachine.can(state, verb as 'start');
        if (allowed) {
          expect(res.status, `${state} --${verb}--> ${JSON.stringify(res.body)}`).toBe(200);
          expect(res.body.state).toBe(rolloutMachine.next(state, verb as 'start'));
        } else {
          expectError(res, 409, { code: 'invalid_state_transition', param: null });
          expect((await get(p, id)).state, 'nothing changed').toBe(state);
        }
        // Leave the endpoint free for the next one.
        const now = (await get(p, id)).state;
        if (['ROLLOUT_STATE_PENDING', 'ROLLOUT_STATE_RUNNING', 'ROLLOUT_STATE_PAUSED'].includes(now)) await act(p, id, 'cancel', { reason: 'next' });
      }
    }
    // The runner's events (advance, complete, abort) only from RUNNING; the steps' machine only forward.
    for (const state of rolloutMachine.states.filter((s) => s !== 'ROLLOUT_STATE_RUNNING')) {
      for (const event of ['advance', 'complete', 'abort'] as const) expect(rolloutMachine.can(state, event)).toBe(false);
    }
    expect(rolloutStepMachine.moves().map((m) => `${m.from} ${m.event} ${m.to}`)).toEqual([
      'ROLLOUT_STEP_STATE_PENDING begin ROLLOUT_STEP_STATE_RUNNING',
      'ROLLOUT_STEP_STATE_RUNNING pass ROLLOUT_STEP_STATE_PASSED',
      'ROLLOUT_STEP_STATE_RUNNING fail ROLLOUT_STEP_STATE_FAILED',
    ]);
    expect(() => rolloutStepMachine.next('ROLLOUT_STEP_STATE_PASSED', 'begin')).toThrow(
      expect.objectContaining({ status: 409, code: 'invalid_state_transition' }),
    );
  }, 120_000);
});

describe('refusals', () => {
  test('the request: deployments of this endpoint, two different ones, valid steps, rules and replicas', async () => {
    const p = await pair();
    const other = await pair();
    expectError(await create(p, { sourceDeploymentId: other.blue.id }), 400, { code: 'deployment_not_found', param: 'sourceDeploymentId' });
    expectError(await create(p, { targetDeploymentId: 'dep_nope' }), 400, { code: 'deployment_not_found', param: 'targetDeploymentId' });
    expectError(await create(p, { targetDeploymentId: p.blue.id }), 400, { code: 'same_deployment', param: 'targetDeploymentId' });
    expectError(await create(p, { canary: { steps: [{ traffic: 50 }, { traffic: 40 }] } }), 400, {
      code: 'invalid_rollout_step',
      param: 'canary.steps.1.traffic',
    });
    expectError(await create(p, { canary: { steps: [{ traffic: 101 }] } }), 400, { code: 'invalid_rollout_step', param: 'canary.steps.0.traffic' });
    expectError(await create(p, { canary: { stepInterval: '0s' } }), 400, { code: 'invalid_duration', param: 'canary.stepInterval' });
    const rule = { name: 'router_latency', stat: 'METRIC_STAT_TYPE_PERCENTILE', thresholdCheck: { value: 1, operator: 'THRESHOLD_OPERATOR_LT' } };
    expectError(await create(p, { metrics: [rule] }), 400, { code: 'invalid_percentile', param: 'metrics.0.percentile' });
    expectError(await create(p, { finalTargetReplicas: 0 }), 400, { code: 'minimum', param: 'finalTargetReplicas' });
    expectError(await create(p, { finalSourceReplicas: -1 }), 400, { code: 'minimum', param: 'finalSourceReplicas' });
    // No strategy: the contract's oneOf.
    expect((await t.http.post(`${base()}/${p.e.id}/rollouts`).set(auth()).send({ sourceDeploymentId: p.blue.id, targetDeploymentId: p.green.id })).status).toBe(
      400,
    );
  });

  test('one rollout steers an endpoint at a time; a running one cannot be deleted nor its deployments; start needs a READY target', async () => {
    const p = await pair();
    const first = (await create(p)).body;
    const pending = (await create(p)).body.id;
    await act(p, first.id, 'start');
    expectError(await create(p), 409, { code: 'traffic_split_steered', param: null });
    const preview = await t.http
      .post(`${base()}/${p.e.id}/rollouts/preview-defaults`)
      .set(auth())
      .send({ sourceDeploymentId: p.blue.id, targetDeploymentId: p.green.id, canary: {} });
    expectError(preview, 409, { code: 'traffic_split_steered', param: null });
    expectError(await act(p, pending, 'start'), 409, { code: 'traffic_split_steered' });
    expectError(
      await t.http
        .patch(`${base()}/${p.e.id}`)
        .set(auth())
        .send({ trafficSplit: [{ deploymentId: p.blue.id, weight: 1 }] }),
      409,
      {
        code: 'traffic_split_steered',
      },
    );
    expectError(await t.http.delete(`${base()}/${p.e.id}/deployments/${p.green.id}`).set(auth()), 409, { code: 'traffic_split_steered' });
    expectError(await t.http.delete(`${base()}/${p.e.id}/rollouts/${first.id}`).set(auth()), 409, { code: 'rollout_in_progress', param: null });
    // An etag not the current one (start changed it).
    expectError(await act(p, first.id, 'pause', { etag: first.etag }), 409, { code: 'etag_mismatch', param: 'etag' });
    await act(p, first.id, 'cancel', { reason: 'x' });
    expect((await t.http.delete(`${base()}/${p.e.id}/rollouts/${first.id}`).set(auth())).status).toBe(200);
    expect((await t.http.delete(`${base()}/${p.e.id}/rollouts/${pending}`).set(auth())).status).toBe(200);
    expectError(await t.http.get(`${base()}/${p.e.id}/rollouts/${pending}`).set(auth()), 404, { code: 'not_found' });

    // A target not READY.
    const fresh = await v2.beta.endpoints.deployments.create(p.e.id, {
      name: 'new',
      model: MODEL,
      config: H100,
      autoscaling: { minReplicas: 1, maxReplicas: 1 },
    } as any);
    const waiting = (await create(p, { targetDeploymentId: fresh.id })).body.id;
    expectError(await act(p, waiting, 'start'), 409, { code: 'target_not_ready', param: null });
    expect((await get(p, waiting)).state).toBe('ROLLOUT_STATE_PENDING');
    await t.advance(PROVISION_MS);
  });

  test('an endpoint deleted under a running rollout: its next step ends it ABORTED', async () => {
    const p = await pair();
    const id = (await create(p)).body.id;
    await act(p, id, 'start');
    expect((await t.http.delete(`${base()}/${p.e.id}`).set(auth())).status).toBe(200);
    await t.advance(STEP_MS);
    const r = await t.services.db.prisma.rollout.findUniqueOrThrow({ where: { id } });
    expect(r.state).toBe('ROLLOUT_STATE_ABORTED');
    expect(JSON.parse(r.conditions)).toEqual([expect.objectContaining({ category: 'ROLLOUT_FAILURE_CATEGORY_ROUTING_ERROR' })]);
  });

  test("another project's key: 404 as if absent", async () => {
    const p = await pair();
    const id = (await create(p)).body.id;
    const stranger = { Authorization: `Bearer ${t.other.key}` };
    expectError(await t.http.get(`${base()}/${p.e.id}/rollouts/${id}`).set(stranger), 404, { code: 'not_found' });
    const theirs = `/v2/projects/${t.other.identity.projectId}/endpoints/${p.e.id}/rollouts/${id}`;
    expectError(await t.http.get(theirs).set(stranger), 404, { code: 'not_found' });
    expectError(await t.http.post(`${theirs}/start`).set(stranger), 404, { code: 'not_found' });
    expect((await get(p, id)).state).toBe('ROLLOUT_STATE_PENDING');
  });
});

describe('the official client', () => {
  test('beta.endpoints.rollouts: previewDefaults, create, list, retrieve, start, pause, resume, promote, cancel, delete', async () => {
    const p = await pair();
    const body = { sourceDeploymentId: p.blue.id, targetDeploymentId: p.green.id };
    const preview = await v2.beta.endpoints.rollouts.previewDefaults(p.e.id, { ...body, rolling: {} });
    expect(preview).toMatchObject({
      estimatedEffectiveSteps: [{ traffic: 25 }, { traffic: 50 }, { traffic: 75 }, { traffic: 100 }],
      estimatedSeedPercent: 25,
      sourceReplicas: 1,
      targetReplicas: 1,
      targetMinReplicas: 1,
      targetMaxReplicas: 1,
      warnings: [{ code: 'no_metric_rules' }],
    });
    const canaryPreview = await v2.beta.endpoints.rollouts.previewDefaults(p.e.id, { ...body, canary: {} });
    expect(canaryPreview.spec.canary).toEqual({ steps: [10, 25, 50, 100].map((traffic) => ({ traffic })), stepInterval: '300s' });
    const blueGreen = await v2.beta.endpoints.rollouts.create(p.e.id, { ...body, blueGreen: {} });
    expect(blueGreen).toMatchObject({ strategy: 'ROLLOUT_STRATEGY_TYPE_BLUE_GREEN', status: { totalSteps: 1, steps: [{ targetTrafficPercent: 100 }] } });
    await v2.beta.endpoints.rollouts.delete(blueGreen.id, { endpointId: p.e.id, etag: blueGreen.etag });

    const r = await v2.beta.endpoints.rollouts.create(p.e.id, { ...body, rolling: {} });
    expect(r).toMatchObject({ strategy: 'ROLLOUT_STRATEGY_TYPE_ROLLING', state: 'ROLLOUT_STATE_PENDING', status: { totalSteps: 4 } });
    const where = { endpointId: p.e.id };
    const started = await v2.beta.endpoints.rollouts.start(r.id, where);
    expect(started).toMatchObject({ state: 'ROLLOUT_STATE_RUNNING', currentTrafficPercent: 25 });
    const paused = await v2.beta.endpoints.rollouts.pause(r.id, { ...where, etag: started.etag, reason: 'hold' });
    expect(paused).toMatchObject({ state: 'ROLLOUT_STATE_PAUSED', pauseInfo: { reason: 'hold' } });
    const resumed = await v2.beta.endpoints.rollouts.resume(r.id, { ...where, etag: paused.etag });
    expect(resumed.state).toBe('ROLLOUT_STATE_RUNNING');
    const active = [];
    for await (const x of v2.beta.endpoints.rollouts.list(p.e.id, { filter: 'ROLLOUT_FILTER_ACTIVE' })) active.push(x.id);
    expect(active).toEqual([r.id]);
    const promoted = await v2.beta.endpoints.rollouts.promote(r.id, { ...where, etag: resumed.etag });
    expect(promoted.state).toBe('ROLLOUT_STATE_COMPLETED');
    expect((await v2.beta.endpoints.rollouts.retrieve(r.id, where)).state).toBe('ROLLOUT_STATE_COMPLETED');
    const ended = [];
    for await (const x of v2.beta.endpoints.rollouts.list(p.e.id, { filter: 'ROLLOUT_FILTER_TERMINAL' })) ended.push(x.id);
    expect(ended).toEqual([r.id]);
    expect((await refusal(v2.beta.endpoints.rollouts.cancel(r.id, { ...where, reason: 'late' }))).status).toBe(409);

    const again = await v2.beta.endpoints.rollouts.create(p.e.id, { sourceDeploymentId: p.green.id, targetDeploymentId: p.blue.id, rolling: {} });
    const canceled = await v2.beta.endpoints.rollouts.cancel(again.id, { ...where, reason: 'not now' });
    expect(canceled.state).toBe('ROLLOUT_STATE_CANCELED');
    expect(await v2.beta.endpoints.rollouts.delete(again.id, where)).toEqual({});
    const all = [];
    for await (const x of v2.beta.endpoints.rollouts.list(p.e.id)) all.push(x.id);
    expect(all).toEqual([r.id]);
  });
});
