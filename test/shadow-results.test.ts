// Shadow results visible (issue 30): an endpoint's analytics by deployment show the copies a shadow experiment made,
// marked TRAFFIC_MODE_SHADOW, and the experiment's report gives per target the copies made, their errors and
// latency, and how often the target answered what the callers were answered. On the database in use (SQLite, or
// PostgreSQL with TEST_DATABASE_URL).
import { afterAll, beforeAll, expect, test } from 'vitest';
import { shadowsOf } from '../server/modules/experiments/index.ts';
import { H100, MODEL, PROVISION_MS } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const v2 = () => `/v2/projects/${t.caller.identity.projectId}`;

test('40 requests at 0.25: 10 copies per target, shown in analytics and in the report, with errors and matches', async () => {
  const http = t.caller.http;
  const e = (await http.post(`${v2()}/endpoints`).send({ name: 'shadowed' })).body;
  const deploy = async (name: string, config: string, model = MODEL) =>
    (await http.post(`${v2()}/endpoints/${e.id}/deployments`).send({ name, model, config, autoscaling: { minReplicas: 1, maxReplicas: 1 } })).body.id as string;
  const primary = await deploy('primary', H100);
  const same = await deploy('same-model', H100);
  const other = await deploy('other-model', 'cr_llama_3_1_8b_turbo_h100', 'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo');
  await http.patch(`${v2()}/endpoints/${e.id}`).send({ trafficSplit: [{ deploymentId: primary, weight: 1 }] });
  await t.advance(PROVISION_MS);
  // Still provisioning when the copies come: each is a 503, counted as an error and compared with nothing.
  const cold = await deploy('cold', H100);
  const x = await http.post(`${v2()}/endpoints/${e.id}/shadowExperiments`).send({
    name: 'try',
    source: { endpoint: { sampling: { uniform: { rate: 0.25 } } } },
    targets: [
      { name: 'same', targetDeploymentId: same },
      { name: 'other', targetDeploymentId: other },
      { name: 'cold', targetDeploymentId: cold },
    ],
  });
  expect(x.status, JSON.stringify(x.body)).toBe(200);
  for (let i = 0; i < 40; i++)
    expect((await http.post('/v1/chat/completions').send({ model: e.name, messages: [{ role: 'user', content: `q${i % 3}` }] })).status).toBe(200);
  const recorded = () => t.services.db.prisma.servedRequest.count({ where: { endpointId: e.id, role: 'shadow' } });
  for (let i = 0; i < 400 && (await recorded()) < 30; i++) await new Promise((r) => setTimeout(r, 25));
  await shadowsOf(t.services).idle();
  // A range ends before now: the requests were all made at this instant of the manual clock.
  t.clock.advance(1000);

  // Analytics by the target: no live request, its copies apart and marked.
  const analytics = (await http.get(`${v2()}/endpoints/${e.id}/analytics`).query({ deploymentId: same })).body;
  expect(analytics.metrics.requestMetrics.totalRequests).toBe('0');
  expect(analytics.deploymentAnalytics.map((d: any) => [d.deploymentId, d.trafficMode, d.metrics.requestMetrics.totalRequests])).toEqual([
    [same, 'TRAFFIC_MODE_LIVE', '0'],
    [same, 'TRAFFIC_MODE_SHADOW', '10'],
  ]);
  // The whole endpoint: live entries for every deployment, then a shadow entry for each target.
  const all = (await http.get(`${v2()}/endpoints/${e.id}/analytics`)).body;
  expect(all.metrics.requestMetrics.totalRequests).toBe('40');
  expect(all.metrics.deploymentMetrics).toHaveLength(4);
  expect(all.deploymentAnalytics.filter((d: any) => d.trafficMode === 'TRAFFIC_MODE_SHADOW').map((d: any) => d.deploymentId)).toEqual(
    [same, other, cold].sort(),
  );

  const report = await http.get(`${v2()}/endpoints/${e.id}/shadowExperiments/${x.body.id}/results`);
  expect(report.status, JSON.stringify(report.body)).toBe(200);
  expect(report.body.primary).toMatchObject({ requests: 40, errors: 0, errorRate: 0 });
  const byName = Object.fromEntries(report.body.targets.map((r: any) => [r.name, r]));
  expect(byName.same).toMatchObject({ targetDeploymentId: same, copies: 10, errors: 0, compared: 10, matched: 10, matchRate: 100 });
  expect(byName.other).toMatchObject({ copies: 10, errors: 0, compared: 10, matched: 0, matchRate: 0 });
  expect(byName.cold).toMatchObject({ copies: 10, errors: 10, errorRate: 100, compared: 0, matched: 0, matchRate: null });
  expect(Object.keys(byName.same.latencyMs)).toEqual(['p50', 'p90', 'p95', 'p99', 'mean']);

  expectError(await http.get(`${v2()}/endpoints/${e.id}/shadowExperiments/${x.body.id}/results`).query({ startTime: '2030-01-01T00:00:00Z' }), 400, {
    param: 'startTime',
    code: 'invalid_time_range',
  });
});
