// An endpoint's analytics (spec/tags/dedicated.yaml, getV2EndpointAnalytics): every figure is counted from the
// requests the endpoint's deployments really answered. Real chat traffic through a split between a healthy
// deployment and one whose engine cannot be reached, rows of known latency at known instants (the manual clock), and
// the official client's `beta.endpoints.analytics` (together-ai 0.52.0, GET /v2/projects/{p}/endpoints/{id}/analytics).
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { recordServed } from '../server/modules/dedicated/served.ts';
import { H100, insertUpload, MODEL, PROVISION_MS } from './support/endpoints.ts';
import { expectError, refusal } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const HOUR = 3_600_000;
let t: TestPlatform;
let v2: Together;
let n = 0;
const uniq = (prefix: string) => `${prefix}-${++n}`;
const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });
const path = (endpointId: string, projectId = t.caller.identity.projectId) => `/v2/projects/${projectId}/endpoints/${endpointId}/analytics`;
const analytics = (endpointId: string, query: Record<string, string> = {}) => t.http.get(path(endpointId)).set(auth()).query(query);

beforeAll(async () => {
  // Uploaded models (ml_...) chat on an upstream nothing listens on: a deployment of one fails every request (502).
  t = await startTestPlatform({
    config: { engines: { routes: [{ models: ['ml_*'], capabilities: ['chat'], engine: 'upstream', url: 'http://127.0.0.1:9/v1' }] } },
  });
  v2 = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, projectID: t.caller.identity.projectId, maxRetries: 0 });
});
afterAll(() => t?.close());

async function deployment(endpointId: string, model: string) {
  return v2.beta.endpoints.deployments.create(endpointId, { name: uniq('dep'), model, config: H100, autoscaling: { minReplicas: 1, maxReplicas: 1 } } as any);
}

const chat = (model: string) =>
  t.http
    .post('/v1/chat/completions')
    .set(auth())
    .send({ model, messages: [{ role: 'user', content: 'hello there' }] });

describe('endpoint analytics', () => {
  test('counts, error rates and tokens equal the traffic sent: a healthy and a failing deployment, through the official client', async () => {
    const e = await v2.beta.endpoints.create({ name: uniq('ep') });
    const good = await deployment(e.id, MODEL);
    const upload = await insertUpload(t, t.caller.identity.projectId, { name: uniq('broken') });
    const bad = await deployment(e.id, upload.id);
    const idle = await deployment(e.id, MODEL);
    await v2.beta.endpoints.update(e.id, {
      trafficSplit: [
        { deploymentId: good.id, weight: 3 },
        { deploymentId: bad.id, weight: 1 },
      ],
    } as any);
    await t.advance(PROVISION_MS);

    const served = new Map<string, number>();
    let failed = 0;
    let promptTokens = 0;
    let completionTokens = 0;
    for (let i = 0; i < 40; i++) {
      const res = await chat(e.name);
      if (res.status === 200) {
        served.set(res.headers['x-served-by'], (served.get(res.headers['x-served-by']) ?? 0) + 1);
        promptTokens += res.body.usage.prompt_tokens;
        completionTokens += res.body.usage.completion_tokens;
      } else {
        expect(res.status, JSON.stringify(res.body)).toBe(502);
        failed++;
      }
    }
    const ok = served.get(good.id) ?? 0;
    expect([...served.keys()]).toEqual([good.id]);
    expect(ok + failed).toBe(40);
    expect(failed).toBeGreaterThanOrEqual(8); // a quarter of 40 by weight, within a few requests
    expect(failed).toBeLessThanOrEqual(12);

    // The range is closed-open and ends now by default: a moment later, it holds every request answered.
    await t.advance(1000);
    const a = await v2.beta.endpoints.analytics(e.id);
    const now = t.clock.now();
    expect(a.endpointId).toBe(e.id);
    expect(a.timeRange).toEqual({ startTime: new Date(now - 24 * HOUR).toISOString(), endTime: new Date(now).toISOString() });
    expect(a.timeSeries).toBeUndefined();
    expect(a.metrics!.requestMetrics).toEqual({
      totalRequests: '40',
      successfulRequests: String(ok),
      failedRequests: String(failed),
      requestsPerSecond: 40 / 86_400,
      requestsByStatusCode: { '200': String(ok), '502': String(failed) },
    });
    expect(a.metrics!.errorMetrics).toEqual({ errorRate: (failed / 40) * 100, errorsByType: { '502': String(failed) } });
    expect(a.metrics!.tokenMetrics).toEqual({
      totalInputTokens: String(promptTokens),
      totalOutputTokens: String(completionTokens),
      avgInputTokens: promptTokens / 40,
      avgOutputTokens: completionTokens / 40,
    });
    expect(a.metrics!.throughputMetrics!.tokensPerSecond).toBe(completionTokens / 86_400);
    // Every deployment of the endpoint, in id order; the idle one with zeros.
    const byId = new Map(a.deploymentAnalytics!.map((d) => [d.deploymentId, d]));
    expect(a.deploymentAnalytics!.map((d) => d.deploymentId)).toEqual([good.id, bad.id, idle.id].sort());
    expect(a.metrics!.deploymentMetrics).toEqual(a.deploymentAnalytics!.map((d) => d.metrics));
    expect(byId.get(good.id)!.metrics!.requestMetrics!.totalRequests).toBe(String(ok));
    expect(byId.get(good.id)!.metrics!.errorMetrics!.errorRate).toBe(0);
    expect(byId.get(bad.id)!.metrics!.requestMetrics).toMatchObject({ totalRequests: String(failed), failedRequests: String(failed), successfulRequests: '0' });
    expect(byId.get(bad.id)!.metrics!.errorMetrics!.errorRate).toBe(100);
    expect(byId.get(idle.id)!.metrics!.requestMetrics!.totalRequests).toBe('0');
    expect(byId.get(idle.id)!.metrics!.latencyMetrics).toEqual({ latencyP50Ms: 0, latencyP90Ms: 0, latencyP99Ms: 0 });

    // One deployment only.
    const one = await v2.beta.endpoints.analytics(e.id, { deploymentId: bad.id });
    expect(one.metrics!.requestMetrics!.totalRequests).toBe(String(failed));
    expect(one.deploymentAnalytics!.map((d) => d.deploymentId)).toEqual([bad.id]);
    // A range before the traffic counts nothing.
    const before = await v2.beta.endpoints.analytics(e.id, { endTime: new Date(now - HOUR).toISOString() });
    expect(before.metrics!.requestMetrics!.totalRequests).toBe('0');
  });

  test('latency percentiles and time buckets follow the recorded requests and the clock', async () => {
    const e = await v2.beta.endpoints.create({ name: uniq('ep') });
    const d = await deployment(e.id, MODEL);
    const start = Math.floor(t.clock.now() / HOUR) * HOUR + HOUR;
    const put = (at: number, latencyMs: number, status = 200, role: 'primary' | 'shadow' = 'primary') =>
      t.services.db.write((tx) =>
        recordServed(tx, { projectId: e.projectId, endpointId: e.id, deploymentId: d.id, role, status, latencyMs, at, promptTokens: 3, completionTokens: 5 }),
      );
    // Hour 0: latencies 1..10 ms; hour 1: nothing; hour 2: two requests, one failing; a shadow copy never counts in them.
    for (let i = 1; i <= 10; i++) await put(start + i * 1000, i);
    await put(start + 2 * HOUR + 5, 100);
    await put(start + 2 * HOUR + 6, 300, 503);
    await put(start + 2 * HOUR + 7, 999, 200, 'shadow');
    const range = { startTime: new Date(start).toISOString(), endTime: new Date(start + 3 * HOUR).toISOString() };

    const res = await analytics(e.id, { ...range, includeTimeSeries: 'true', granularity: '1h' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.metrics.requestMetrics.totalRequests).toBe('12');
    // Nearest rank over 1..10, 100, 300.
    expect(res.body.metrics.latencyMetrics).toEqual({ latencyP50Ms: 6, latencyP90Ms: 100, latencyP99Ms: 300 });
    const series = res.body.timeSeries;
    expect(series.map((p: any) => p.timestamp)).toEqual([0, 1, 2].map((h) => new Date(start + h * HOUR).toISOString()));
    expect(series.map((p: any) => p.values.totalRequests)).toEqual([10, 0, 2]);
    expect(series.map((p: any) => p.values.failedRequests)).toEqual([0, 0, 1]);
    expect(series.map((p: any) => p.values.errorRate)).toEqual([0, 0, 50]);
    expect(series[0].values).toMatchObject({ latencyP50Ms: 5, latencyP99Ms: 10, inputTokens: 30, outputTokens: 50, requestsPerSecond: 10 / 3600 });
    expect(res.body.deploymentAnalytics[0].timeSeries).toEqual(series);

    // Buckets align to the epoch: a range starting mid-hour still has buckets on the hour, and counts only its part.
    const mid = await analytics(e.id, {
      startTime: new Date(start + 5500).toISOString(),
      endTime: range.endTime,
      includeTimeSeries: 'true',
      granularity: '60m',
    });
    expect(mid.body.timeSeries.map((p: any) => p.timestamp)).toEqual(series.map((p: any) => p.timestamp));
    expect(mid.body.timeSeries.map((p: any) => p.values.totalRequests)).toEqual([5, 0, 2]);
    // The default granularity is a day.
    const daily = await analytics(e.id, { ...range, includeTimeSeries: 'true' });
    expect(daily.body.timeSeries.reduce((s: number, p: any) => s + p.values.totalRequests, 0)).toBe(12);
    expect(Date.parse(daily.body.timeSeries[0].timestamp) % (24 * HOUR)).toBe(0);

    // A deployment deleted after serving keeps its requests in the figures, listed after the current ones.
    const gone = await deployment(e.id, MODEL);
    await t.services.db.write((tx) =>
      recordServed(tx, { projectId: e.projectId, endpointId: e.id, deploymentId: gone.id, status: 200, latencyMs: 7, at: start + HOUR }),
    );
    expect((await t.http.delete(`/v2/projects/${e.projectId}/endpoints/${e.id}/deployments/${gone.id}`).set(auth())).status).toBe(200);
    const after = await analytics(e.id, range);
    expect(after.body.metrics.requestMetrics.totalRequests).toBe('13');
    // The shadow copy is listed apart, after them, marked as such (test/shadow-results.test.ts).
    expect(after.body.deploymentAnalytics.map((x: any) => [x.deploymentId, x.trafficMode, x.metrics.requestMetrics.totalRequests])).toEqual([
      [d.id, 'TRAFFIC_MODE_LIVE', '12'],
      [gone.id, 'TRAFFIC_MODE_LIVE', '1'],
      [d.id, 'TRAFFIC_MODE_SHADOW', '1'],
    ]);
    expect((await analytics(e.id, { ...range, deploymentId: gone.id })).body.metrics.requestMetrics.totalRequests).toBe('1');
  });

  test('ranges, granularities and deployments it cannot answer are 400 naming the parameter', async () => {
    const e = await v2.beta.endpoints.create({ name: uniq('ep') });
    const now = t.clock.now();
    const at = (ms: number) => new Date(ms).toISOString();
    expectError(await analytics(e.id, { startTime: at(now), endTime: at(now) }), 400, { code: 'invalid_time_range', param: 'startTime' });
    expectError(await analytics(e.id, { startTime: at(now - 32 * 24 * HOUR) }), 400, { code: 'invalid_time_range', param: 'startTime' });
    for (const g of ['1w', '0h', '1.5h', 'h', '-1m', 'PT1H']) {
      expectError(await analytics(e.id, { includeTimeSeries: 'true', granularity: g }), 400, { code: 'invalid_granularity', param: 'granularity' });
    }
    expectError(await analytics(e.id, { granularity: 'soon' }), 400, { code: 'invalid_granularity', param: 'granularity' });
    // A day of 1-minute buckets is 1440 (or 1441 unaligned): the bound.
    const day = { startTime: at(Math.floor(now / HOUR) * HOUR - 24 * HOUR), endTime: at(Math.floor(now / HOUR) * HOUR) };
    expect((await analytics(e.id, { ...day, includeTimeSeries: 'true', granularity: '1m' })).body.timeSeries).toHaveLength(1440);
    expectError(await analytics(e.id, { includeTimeSeries: 'true', granularity: '30s' }), 400, { code: 'too_many_buckets', param: 'granularity' });
    expectError(await analytics(e.id, { deploymentId: 'dep_nope' }), 400, { code: 'unknown_deployment', param: 'deploymentId' });
    const err = await refusal(v2.beta.endpoints.analytics(e.id, { granularity: '1y' }));
    expect(err.status).toBe(400);
  });

  test('rows are kept 31 days: each endpoint prunes older ones once a day', async () => {
    const e = await v2.beta.endpoints.create({ name: uniq('ep') });
    const d = await deployment(e.id, MODEL);
    const day = 24 * HOUR;
    const t0 = t.clock.now();
    for (const at of [t0 - 31 * day - 1, t0 - 29 * day]) {
      await t.services.db.write((tx) => recordServed(tx, { projectId: e.projectId, endpointId: e.id, deploymentId: d.id, status: 200, latencyMs: 1, at }));
    }
    const kept = async () =>
      (await t.services.db.prisma.servedRequest.findMany({ where: { endpointId: e.id }, orderBy: { createdAt: 'asc' } })).map((r) => Number(r.createdAt));
    expect(await kept()).toHaveLength(2);
    await t.advance(day);
    expect(await kept()).toEqual([t0 - 29 * day]);
  });

  test("another project's endpoint is 404, whichever project the path names", async () => {
    const e = await v2.beta.endpoints.create({ name: uniq('ep') });
    expectError(await t.other.http.get(path(e.id, t.other.identity.projectId)), 404);
    expectError(await t.other.http.get(path(e.id)), 404);
    expectError(await analytics('ep_missing'), 404);
  });
});
