// The monitoring dashboard (`/dashboard`) in headless Chromium (Debian's, through playwright-core; skipped when
// absent): a project's own user signs in with its API key (the control key does not open it) and sees its v2
// endpoint with traffic: the totals, the traffic split, the charts over time (requests and errors, latency,
// replicas and cost), each deployment's live and shadow figures, the A/B members side by side and the shadow
// target against the callers. The console (control key) shows the same experiments among every project's, from
// getControlExperiments. Screenshots go to .test-output/dashboard/ (not committed).
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createPlatformClient } from '@inference-platform/client';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { root } from '../server/core/paths.ts';
import { shadowsOf } from '../server/modules/experiments/index.ts';
import { H100, MODEL, PROVISION_MS } from './support/endpoints.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const CHROMIUM = '/usr/bin/chromium';
let t: TestPlatform;
let browser: Browser;
const ids = { endpoint: '', ab: '', shadow: '', control: '', variant: '', candidate: '' };

beforeAll(async () => {
  t = await startTestPlatform();
  if (!existsSync(CHROMIUM)) return;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  // An endpoint with traffic: two members of an A/B experiment and a shadow target of the same model.
  const v2 = `/v2/projects/${t.caller.identity.projectId}`;
  const http = t.caller.http;
  const deployed = await http.post(`${v2}/deploy`).send({ endpointName: 'watched', model: MODEL, config: H100, minReplicas: 1, maxReplicas: 1 });
  const e = deployed.body.endpoint;
  const add = async (name: string) =>
    (await http.post(`${v2}/endpoints/${e.id}/deployments`).send({ name, model: MODEL, config: H100, autoscaling: { minReplicas: 1, maxReplicas: 1 } })).body
      .id;
  const [variant, shadow] = [await add('variant'), await add('candidate')];
  await t.advance(PROVISION_MS);
  const members = [
    { deploymentId: deployed.body.deployment.id, role: 'AB_EXPERIMENT_MEMBER_ROLE_CONTROL', percent: 50 },
    { deploymentId: variant, role: 'AB_EXPERIMENT_MEMBER_ROLE_VARIANT', percent: 50 },
  ];
  const abx = await http.post(`${v2}/endpoints/${e.id}/abExperiments`).send({ name: 'ab', members });
  expect(abx.status).toBe(200);
  const x = await http
    .post(`${v2}/endpoints/${e.id}/shadowExperiments`)
    .send({ name: 'mirror', source: { endpoint: { sampling: { uniform: { rate: 1 } } } }, targets: [{ name: 'c', targetDeploymentId: shadow }] });
  expect(x.status, JSON.stringify(x.body)).toBe(200);
  Object.assign(ids, { endpoint: e.id, ab: abx.body.id, shadow: x.body.id, control: deployed.body.deployment.id, variant, candidate: shadow });
  for (let i = 0; i < 10; i++)
    expect((await http.post('/v1/chat/completions').send({ model: e.name, messages: [{ role: 'user', content: 'hi' }] })).status).toBe(200);
  const copies = () => t.services.db.prisma.servedRequest.count({ where: { endpointId: e.id, role: 'shadow' } });
  for (let i = 0; i < 400 && (await copies()) < 10; i++) await new Promise((r) => setTimeout(r, 25));
  await shadowsOf(t.services).idle();
  t.clock.advance(1000);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

test.runIf(existsSync(CHROMIUM))('signed in with the API key, it shows the endpoint with its traffic; the control key is refused', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1800 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`${t.url}/dashboard`);
  const signIn = async (key: string) => {
    await page.fill('#api-key', key);
    await page.click('#sign-in button[type=submit]');
  };
  await signIn(TEST_CONTROL_KEY);
  await page.waitForSelector('#sign-in-error:not(:empty)');
  expect(await page.textContent('#sign-in-error')).toMatch(/not valid/i);

  await signIn(t.caller.key);
  await page.waitForSelector('#page[data-ready=true] section.endpoint');
  const section = page.locator('section.endpoint');
  expect(await section.locator('h2').textContent()).toBe(`${t.caller.identity.projectSlug}/watched`);
  expect(await section.locator('p.totals').textContent()).toMatch(
    /^requests 10, errors 0 \(0%\), p50 \d+ ms, p99 \d+ ms, running replicas 3, cost \d+\.\d\d USD$/,
  );
  expect(await section.locator('table.split tbody tr').count()).toBe(3);
  // Three charts, each drawn.
  await page.waitForFunction(() => Object.keys((window as any).dashboardPlots ?? {}).length === 3);
  expect(await section.locator('[data-chart] canvas').count()).toBe(3);
  // Each deployment's live figures and the shadow copies apart.
  const cells = (selector: string) =>
    section.locator(selector).evaluateAll((trs) => trs.map((tr) => [...(tr as HTMLTableRowElement).cells].map((c) => c.textContent ?? '')));
  const rows = (await cells('table.deployments tbody tr')).map((r) => r.slice(0, 3));
  expect(rows.map((r) => r[1])).toEqual(['live', 'live', 'live', 'shadow copies']);
  expect(rows.at(-1)).toEqual(['candidate', 'shadow copies', '10']);
  // The A/B members side by side (5 requests each), and the shadow target against the callers.
  const ab = (await cells('.ab tbody tr')).map((r) => r.slice(1, 4));
  expect(ab).toEqual([
    ['control', '50%', '5'],
    ['variant', '50%', '5'],
  ]);
  expect(await section.locator('.shadow p').textContent()).toMatch(/^callers: 10 requests, 0% errors/);
  const [target] = await cells('.shadow tbody tr');
  expect([target![1], target![5], target![6]]).toEqual(['10', '10', '100%']);

  mkdirSync(join(root, '.test-output/dashboard'), { recursive: true });
  await page.screenshot({ path: join(root, '.test-output/dashboard/endpoint.png'), fullPage: true });
  expect(errors).toEqual([]);
});

test("the control key reads every project's experiments with their results; a project key is refused", async () => {
  const control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
  const { data, response } = await control.GET('/_control/experiments');
  expect(response.status).toBe(200);
  const ab = data!.abExperiments.find((x) => x.experiment.id === ids.ab)!;
  expect(ab.endpointName).toBe(`${t.caller.identity.projectSlug}/watched`);
  expect(ab.members.map((m) => [m.member.deploymentId, m.results.requests])).toEqual([
    [ids.control, 5],
    [ids.variant, 5],
  ]);
  const shadow = data!.shadowExperiments.find((x) => x.experiment.id === ids.shadow)!;
  // The very report the project's own operation answers.
  const own = await t.caller.http.get(`/v2/projects/${t.caller.identity.projectId}/endpoints/${ids.endpoint}/shadowExperiments/${ids.shadow}/results`);
  expect(shadow.results).toEqual(own.body);
  expect(shadow.results.targets.map((x) => [x.targetDeploymentId, x.copies, x.matched])).toEqual([[ids.candidate, 10, 10]]);
  expect((await t.caller.http.get('/_control/experiments')).status).toBe(401);
  const bad = await control.GET('/_control/experiments', { params: { query: { startTime: '2026-01-02T00:00:00Z', endTime: '2026-01-01T00:00:00Z' } } });
  expect([bad.response.status, bad.error?.error.param]).toEqual([400, 'startTime']);
});

test.runIf(existsSync(CHROMIUM))("the console's experiments page shows the A/B members and the shadow target's results", async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1200 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`${t.url}/console#experiments`);
  await page.fill('#control-key', TEST_CONTROL_KEY);
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector('#page[data-page="experiments"][data-ready="true"]');
  const cells = (selector: string) =>
    page.locator(selector).evaluateAll((trs) => trs.map((tr) => [...(tr as HTMLTableRowElement).cells].map((c) => c.textContent ?? '')));
  expect((await cells(`.ab[data-experiment="${ids.ab}"] tbody tr`)).map((r) => r.slice(0, 4))).toEqual([
    [ids.control, 'control', '50%', '5'],
    [ids.variant, 'variant', '50%', '5'],
  ]);
  const shadow = page.locator(`.shadow[data-experiment="${ids.shadow}"]`);
  expect(await shadow.locator('h3').textContent()).toContain(`on ${t.caller.identity.projectSlug}/watched`);
  expect(await shadow.locator('p.callers').textContent()).toBe('callers: 10 requests, 0% errors');
  const [target] = await cells(`.shadow[data-experiment="${ids.shadow}"] tbody tr`);
  expect([target![0], target![1], target![2], target![6], target![7]]).toEqual(['c', ids.candidate, '10', '10', '100%']);
  await page.screenshot({ path: join(root, '.test-output/dashboard/console-experiments.png'), fullPage: true });
  expect(errors).toEqual([]);
});
