// The monitoring dashboard (`/dashboard`) in headless Chromium (Debian's, through playwright-core; skipped when
// absent): a project's own user signs in with its API key (the control key does not open it) and sees its v2
// endpoint with traffic: the totals, the traffic split, the charts over time (requests and errors, latency,
// replicas and cost), each deployment's live and shadow figures, the A/B members side by side and the shadow
// target against the callers. A screenshot goes to .test-output/dashboard/ (not committed).
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { root } from '../server/core/paths.ts';
import { shadowsOf } from '../server/modules/experiments/index.ts';
import { H100, MODEL, PROVISION_MS } from './support/endpoints.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const CHROMIUM = '/usr/bin/chromium';
let t: TestPlatform;
let browser: Browser;

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
  expect((await http.post(`${v2}/endpoints/${e.id}/abExperiments`).send({ name: 'ab', members })).status).toBe(200);
  const x = await http
    .post(`${v2}/endpoints/${e.id}/shadowExperiments`)
    .send({ name: 'mirror', source: { endpoint: { sampling: { uniform: { rate: 1 } } } }, targets: [{ name: 'c', targetDeploymentId: shadow }] });
  expect(x.status, JSON.stringify(x.body)).toBe(200);
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
