// The console (`/console`) in headless Chromium (Debian's, through playwright-core; no browser is downloaded), on a
// platform seeded through the API: a fine-tune run to completion, a rendered video, a queue job, a deployment, a
// fault rule and some traffic. Each page shows the seeded data, the video plays, the loss plot draws, and a fault
// rule added in the page changes the next API call; so do a rate limit set, a scripted answer added, a snapshot
// restored, a job moved and the clock advanced in the page. Screenshots go to .test-output/console/ (not committed). Also the
// console's control operations (overview, a fine-tune's metrics, a video's file) through the typed client.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { root } from '../server/core/paths.ts';
import { PROVISION_MS } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { uploadFile } from './support/files.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(root, '.test-output/console');
const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
const T2V = 'Wan-AI/Wan2.2-T2V-A14B';
const chat = { model: CHAT, messages: [{ role: 'user' as const, content: 'Say hi' }], max_tokens: 5 };

let t: TestPlatform;
let control: PlatformClient;
const seeded = { fineTune: '', video: '', pendingVideo: '', queueJob: '', deployment: '', fault: '', uploadedModel: '', fixtureProject: '', fixtureJob: '' };
const FIXTURE_SECRET = 'console-fixture-key-0123456789';

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
  const rows = Array.from({ length: 20 }, (_, i) => ({
    messages: [
      { role: 'user', content: `Question number ${i}?` },
      { role: 'assistant', content: `Answer ${i}.` },
    ],
  }));
  const train = await uploadFile(t.caller, 'fine-tune', rows);
  const validation = await uploadFile(t.caller, 'fine-tune', rows.slice(0, 5));
  await t.advance(0);
  const ft = await t.caller.http.post('/v1/fine-tunes').send({ model: BASE, training_file: train, validation_file: validation, n_evals: 2, batch_size: 8 });
  expect(ft.status, JSON.stringify(ft.body)).toBe(200);
  seeded.fineTune = ft.body.id;
  // WEBM (VP9, Opus): what every Chromium build plays.
  const video = await t.caller.http
    .post('/v2/videos')
    .send({ model: T2V, prompt: 'a lighthouse', width: 128, height: 72, seconds: '1', fps: 12, output_format: 'WEBM', generate_audio: true });
  expect(video.status, JSON.stringify(video.body)).toBe(200);
  seeded.video = video.body.id;
  const job = await t.caller.http.post('/v1/queue/submit').send({ model: 'my-queue', payload: { n: 1 } });
  seeded.queueJob = job.body.requestId;
  const pid = t.caller.identity.projectId;
  const deploy = await t.caller.http
    .post(`/v2/projects/${pid}/deploy`)
    .send({ endpointName: 'console-endpoint', model: 'meta-llama/Meta-Llama-3.1-8B-Instruct', config: 'cr_llama_3_1_8b_h100', minReplicas: 1, maxReplicas: 1 });
  expect(deploy.status, JSON.stringify(deploy.body)).toBe(202);
  seeded.deployment = deploy.body.deployment.id;
  const upload = await t.caller.http.post('/v1/models').send({ model_name: 'console-model', model_source: 'acme/Meta-Llama-3.1-8B-console' });
  expect(upload.status, JSON.stringify(upload.body)).toBe(200);
  seeded.uploadedModel = upload.body.data.model_id;
  await t.advance(0);
  await t.advance(Math.max(1000, PROVISION_MS));
  expect((await t.caller.http.get(`/v1/fine-tunes/${seeded.fineTune}`)).body.status).toBe('completed');
  expect((await t.caller.http.get(`/v2/videos/${seeded.video}`)).body.status).toBe('completed');
  // Left in progress (the runner only moves it when the clock does).
  seeded.pendingVideo = (await t.caller.http.post('/v2/videos').send({ model: T2V, prompt: 'not yet', width: 64, height: 64, seconds: '1' })).body.id;
  const { data: rule } = await control.POST('/_control/faults', { body: { match: { path: '/v1/never-called' }, status: 500 } });
  seeded.fault = rule!.id;
  // A fixture document, as a test suite seeds one: an organization with a project, a fixed key and a failed job.
  const { data: applied } = await control.POST('/_control/fixtures', {
    body: {
      organizations: [
        {
          name: 'Fixture Org',
          projects: [
            {
              name: 'Fixture project',
              slug: 'console-fixture',
              api_keys: [{ name: 'ci', secret: FIXTURE_SECRET }],
              queue_jobs: [{ model: 'fixture-queue', payload: { n: 2 }, status: 'failed', error: { message: 'The worker gave up.', code: 'worker_gave_up' } }],
            },
          ],
        },
      ],
    },
  });
  seeded.fixtureProject = applied!.projects[0]!;
  seeded.fixtureJob = applied!.queue_jobs[0]!;
  for (let i = 0; i < 3; i++) expect((await t.caller.http.post('/v1/chat/completions').send(chat)).status).toBe(200);
  expect((await t.other.http.post('/v1/chat/completions').send(chat)).status).toBe(200);
}, 120_000);
afterAll(() => t?.close());

describe('the console operations (typed client, control key)', () => {
  test('the overview: every project with its keys masked, resources with state timelines, the queue, endpoints', async () => {
    const { data, response } = await control.GET('/_control/overview');
    expect(response.status).toBe(200);
    const project = data!.projects.find((p) => p.id === t.caller.identity.projectId)!;
    expect(data!.projects.map((p) => p.id)).toContain(t.other.identity.projectId);
    expect(project.keys.length).toBeGreaterThan(0);
    for (const k of project.keys) expect(k.masked).toMatch(/^.{10}…$/);
    // No key's secret appears anywhere.
    const text = JSON.stringify(data);
    expect(text).not.toContain(t.caller.key);
    expect(text).not.toContain(t.other.key);
    const ft = data!.resources.find((r) => r.id === seeded.fineTune)!;
    expect(ft).toMatchObject({ kind: 'fine_tune', state: 'completed', project_id: t.caller.identity.projectId });
    expect(ft.timeline.map((s) => s.event)).toEqual(expect.arrayContaining(['job_pending', 'job_start', 'job_complete']));
    expect(data!.resources.find((r) => r.id === seeded.video)).toMatchObject({ kind: 'video', state: 'completed' });
    expect(data!.resources.find((r) => r.id === seeded.video)!.timeline.map((s) => s.event)).toEqual(['in_progress', 'completed']);
    expect(data!.resources.find((r) => r.id === seeded.queueJob)).toMatchObject({ kind: 'queue_job', state: 'pending', label: 'my-queue' });
    expect(data!.queue).toContainEqual({ model: 'my-queue', depth: 1, claimed: 0, done: 0, retries: 0 });
    const endpoint = data!.endpoints.find((e) => e.name.endsWith('console-endpoint'))!;
    expect(endpoint.deployments).toEqual([expect.objectContaining({ id: seeded.deployment, state: 'DEPLOYMENT_STATE_READY' })]);
    expect(data!.resources.filter((r) => r.kind === 'endpoint').length).toBeGreaterThan(0);
    const upload = data!.resources.find((r) => r.kind === 'model_upload' && r.label === seeded.uploadedModel)!;
    expect(upload.timeline[0]).toMatchObject({ event: 'Queued', message: 'Upload job queued.' });
    expect(upload.timeline.at(-1)!.event).toBe(upload.state);
  });

  test('limit keeps the newest of each kind; out of range is 400 naming limit', async () => {
    const { data } = await control.GET('/_control/overview', { params: { query: { limit: 1 } } });
    expect(data!.resources.filter((r) => r.kind === 'video').map((r) => r.id)).toEqual([seeded.pendingVideo]);
    expectError(await t.http.get('/_control/overview?limit=0').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`), 400, { param: 'limit' });
  });

  test("a fine-tune's metrics, whatever its project; unknown is 404 naming fineTuneId", async () => {
    const { data } = await control.GET('/_control/fine-tunes/{fineTuneId}/metrics', { params: { path: { fineTuneId: seeded.fineTune } } });
    expect(data!.metrics.length).toBeGreaterThan(0);
    expect(data!.metrics.every((m) => typeof m['train/loss'] === 'number')).toBe(true);
    expect((await t.caller.http.get(`/v1/fine-tunes/${seeded.fineTune}/metrics`)).body.metrics).toEqual(data!.metrics);
    expectError(await t.http.get('/_control/fine-tunes/ft-nope/metrics').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`), 404, {
      code: 'not_found',
      param: 'fineTuneId',
    });
  });

  test("a video's file: the bytes the platform serves its project, with Range; 404, 409 video_not_ready, 416", async () => {
    const auth = ['Authorization', `Bearer ${TEST_CONTROL_KEY}`] as const;
    const bytes = (res: { body: Buffer }) => Buffer.from(res.body);
    const raw = <T extends { buffer: (b: boolean) => T }>(r: T) => r.buffer(true);
    const own = await raw(t.caller.http.get(`/v2/videos/${seeded.video}/content`));
    const res = await raw(t.http.get(`/_control/videos/${seeded.video}/content`).set(...auth));
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('video/webm');
    expect(bytes(res).equals(bytes(own))).toBe(true);
    const part = await raw(
      t.http
        .get(`/_control/videos/${seeded.video}/content`)
        .set(...auth)
        .set('Range', 'bytes=0-9'),
    );
    expect(part.status).toBe(206);
    expect(bytes(part).equals(bytes(own).subarray(0, 10))).toBe(true);
    expectError(
      await t.http
        .get(`/_control/videos/${seeded.video}/content`)
        .set(...auth)
        .set('Range', 'bytes=99999999-'),
      416,
      {},
    );
    expectError(await t.http.get('/_control/videos/video_nope/content').set(...auth), 404, { param: 'videoId' });
    expectError(await t.http.get(`/_control/videos/${seeded.pendingVideo}/content`).set(...auth), 409, { code: 'video_not_ready', param: 'videoId' });
  });

  test('the page and its assets come from this server, locked to it; CONTROL_API=off: no console', async () => {
    const html = await t.http.get('/console');
    expect(html.status).toBe(200);
    expect(html.headers['content-security-policy']).toContain("default-src 'self'");
    expect(html.text).not.toMatch(/https?:\/\//);
    for (const asset of ['console.js', 'console.css', 'uplot.js', 'uplot.css']) expect((await t.http.get(`/console/assets/${asset}`)).status).toBe(200);
    expect((await t.http.get('/console/assets/package.json')).status).toBe(404);
    const off = await startTestPlatform({ config: { control: { enabled: false, journalSize: 500 } } });
    try {
      expect((await off.http.get('/console')).status).toBe(404);
      expect((await off.http.get('/console/assets/console.js')).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});

describe.skipIf(!existsSync(CHROMIUM))(`the console in headless Chromium (${CHROMIUM}; skipped when it is not installed)`, () => {
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--autoplay-policy=no-user-gesture-required'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (err) => errors.push(err.message));
    // A script or style the page's CSP refuses shows here (refused requests, which the tests make on purpose, do not count).
    page.on('console', (m) => m.type() === 'error' && !m.text().startsWith('Failed to load resource') && errors.push(m.text()));
    page.on('dialog', (d) => void d.accept());
    await page.goto(`${t.url}/console`);
    await page.fill('#control-key', TEST_CONTROL_KEY);
    await page.click('#sign-in button[type=submit]');
    await ready();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    expect(errors).toEqual([]);
  });

  /** Opens a page of the console and waits until it has drawn its data. */
  async function open(name: string) {
    await page.evaluate((hash) => {
      location.hash = hash;
    }, name);
    await ready(name);
  }
  const ready = (name = 'projects') => page.waitForSelector(`#page[data-page="${name}"][data-ready="true"]`);
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

  test('a wrong key is refused and asked again; the key never appears in a URL', async () => {
    const other = await browser.newPage();
    try {
      await other.goto(`${t.url}/console`);
      await other.fill('#control-key', t.caller.key);
      await other.click('#sign-in button[type=submit]');
      await other.waitForSelector('#sign-in:not([hidden])');
      expect(await other.textContent('#sign-in-error')).toContain('not valid');
    } finally {
      await other.close();
    }
    expect(page.url()).not.toContain(TEST_CONTROL_KEY);
  });

  test('projects: both projects, keys masked, no secret on the page', async () => {
    await open('projects');
    await shot('projects');
    const text = (await page.textContent('#page'))!;
    expect(text).toContain(t.caller.identity.projectId);
    expect(text).toContain(t.other.identity.projectId);
    expect(text).toContain(`${t.caller.key.slice(0, 10)}…`);
    expect(text).not.toContain(t.caller.key);
  });

  test('a seeded fixture document: its project with its key masked, its failed job, its queue', async () => {
    await open('projects');
    const projects = (await page.textContent('#page'))!;
    expect(projects).toContain(seeded.fixtureProject);
    expect(projects).toContain('Fixture project');
    expect(projects).toContain(`${FIXTURE_SECRET.slice(0, 10)}…`);
    expect(projects).not.toContain(FIXTURE_SECRET);
    await open('resources');
    expect(await page.textContent(`tr[data-resource="${seeded.fixtureJob}"] .state`)).toBe('failed');
    await open('queue');
    expect(await page.textContent('tr[data-model="fixture-queue"]')).toContain('fixture-queue');
  });

  test('resources: the seeded jobs with their states and timelines', async () => {
    await open('resources');
    await shot('resources');
    expect(await page.textContent(`tr[data-resource="${seeded.fineTune}"] .state`)).toBe('completed');
    expect(await page.textContent(`tr[data-resource="${seeded.fineTune}"] .timeline`)).toContain('job_complete');
    expect(await page.textContent(`tr[data-resource="${seeded.video}"] .state`)).toBe('completed');
    expect(await page.textContent(`tr[data-resource="${seeded.deployment}"] .state`)).toBe('DEPLOYMENT_STATE_READY');
  });

  test('queue and endpoints', async () => {
    await open('queue');
    await shot('queue');
    expect(await page.textContent('tr[data-model="my-queue"]')).toMatch(/my-queue\s*1\s*0\s*0\s*0/);
    await open('endpoints');
    await shot('endpoints');
    expect(await page.textContent('#page')).toContain('console-endpoint');
    expect(await page.textContent('#page')).toContain('DEPLOYMENT_STATE_READY');
  });

  test('rate limits: requests per organization x model, plotted', async () => {
    await open('rate-limits');
    await page.waitForFunction(() => (window as any).consolePlots?.['rate-limits']);
    await shot('rate-limits');
    const text = (await page.textContent('#page'))!;
    expect(text).toContain(`Other Organization x ${CHAT}`);
    // Only rate-limited operations count (not the fine-tune, video or queue requests).
    expect(
      await page.$$eval('tr[data-series]', (trs) =>
        trs.map((tr) =>
          [...tr.children]
            .slice(0, 3)
            .map((td) => td.textContent)
            .join(''),
        ),
      ),
    ).toEqual([`Default Organization x ${CHAT}30`, `Other Organization x ${CHAT}10`]);
    expect(await page.evaluate(() => (window as any).consolePlots['rate-limits'].series.length)).toBeGreaterThan(2);
  });

  test('fine-tunes: the loss plot draws (its canvas has coloured pixels) with train and eval series', async () => {
    await open('fine-tunes');
    const name = `loss ${seeded.fineTune}`;
    await page.waitForFunction((n) => (window as any).consolePlots?.[n], name);
    await shot('fine-tunes');
    expect(await page.evaluate((n) => (window as any).consolePlots[n].series.map((s: { label: string }) => s.label), name)).toEqual([
      'Value',
      'train/loss',
      'eval/loss',
    ]);
    const coloured = await page.evaluate((id) => {
      const canvas = document.querySelector(`[data-fine-tune="${id}"] canvas`) as HTMLCanvasElement;
      const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height);
      let n = 0;
      // The train series' blue (#1f77b4), give or take antialiasing.
      for (let i = 0; i < data.length; i += 4) if (data[i + 3]! > 0 && data[i + 2]! > 150 && data[i]! < 80) n++;
      return n;
    }, seeded.fineTune);
    expect(coloured).toBeGreaterThan(50);
  });

  test('videos: the completed video plays (its currentTime advances)', async () => {
    await open('videos');
    const selector = `[data-video="${seeded.video}"] video`;
    await page.waitForFunction((s) => ((document.querySelector(s) as HTMLVideoElement | null)?.currentTime ?? 0) > 0.2, selector, { timeout: 20_000 });
    await shot('videos');
    const first = await page.$eval(selector, (v) => (v as HTMLVideoElement).currentTime);
    await page.waitForFunction(([s, t0]) => (document.querySelector(s as string) as HTMLVideoElement).currentTime !== t0, [selector, first] as const);
    expect(await page.$eval(selector, (v) => (v as HTMLVideoElement).src)).toMatch(/^blob:/);
    expect(await page.textContent(`[data-video="${seeded.pendingVideo}"]`)).toContain('in_progress');
  });

  test('journal: the API requests, newest first', async () => {
    await open('journal');
    await shot('journal');
    const rows = await page.$$eval('tr[data-entry]', (trs) => trs.map((tr) => tr.textContent));
    expect(rows.filter((r) => r!.includes('createChatCompletion')).length).toBe(4);
  });

  test('faults: a rule added in the page answers the next API call; removed in the page, it is gone', async () => {
    await open('faults');
    expect(await page.textContent(`tr[data-fault="${seeded.fault}"]`)).toContain('/v1/never-called');
    await page.fill('#add-fault input[name=operations]', 'createChatCompletion');
    await page.fill('#add-fault input[name=status]', '503');
    await page.fill('#add-fault input[name=count]', '1');
    await page.click('#add-fault button[type=submit]');
    await page.waitForFunction(() => document.querySelectorAll('tr[data-fault]').length === 2);
    await shot('faults');
    const res = await t.caller.http.post('/v1/chat/completions').send(chat);
    expectError(res, 503, { code: 'model_overloaded' });
    expect((await t.caller.http.post('/v1/chat/completions').send(chat)).status).toBe(200);
    // A refused rule says why, in the page.
    await open('faults');
    await page.fill('#add-fault input[name=code]', 'no_status');
    await page.click('#add-fault button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#page [role=alert]')?.textContent);
    expect(await page.textContent('#page [role=alert]')).toContain('needs something to do');
    await page.click(`tr[data-fault="${seeded.fault}"] button.remove`);
    await page.waitForFunction(() => document.querySelectorAll('tr[data-fault]').length === 0);
    expect((await control.GET('/_control/faults')).data!.data).toEqual([]);
  });

  test("reset: one project's resources go, from the page", async () => {
    await open('reset');
    await page.selectOption('#reset-form select', t.other.identity.projectId);
    await page.click('#reset-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#reset-result')?.textContent);
    await shot('reset');
    expect(await page.textContent('#reset-result')).toMatch(/^Reset project: \d+ rows deleted/);
    // The seeded project is untouched.
    expect((await control.GET('/_control/overview')).data!.resources.some((r) => r.id === seeded.video)).toBe(true);
  });

  test('rate limits: the limit in force beside requests and 429s; a limit set in the page refuses the next call', async () => {
    const org = t.caller.identity.organizationId;
    const name = `Default Organization x ${CHAT}`;
    const read = async () => (await control.GET('/_control/rate-limits', { params: { query: { organization_id: org, model: CHAT } } })).data!;
    await open('rate-limits');
    await page.waitForFunction(() => (window as any).consolePlots?.['rate-limits']);
    const before = await read();
    expect(await page.textContent(`tr[data-series="${name}"] .limit`)).toContain(`${before.limit.requests} requests, ${before.limit.tokens} tokens per`);
    // The limit is a series of the plot (requests per second: per window over the window's seconds), beside the counts.
    const limitLine = await page.evaluate((n) => {
      const plot = (window as any).consolePlots['rate-limits'];
      const i = plot.series.findIndex((s: { label: string }) => s.label === `${n}: limit`);
      return plot.data[i];
    }, name);
    expect(new Set(limitLine)).toEqual(new Set([before.limit.requests / before.window.seconds]));
    await page.selectOption('#set-limit select[name=organization_id]', org);
    await page.fill('#set-limit input[name=model]', CHAT);
    await page.fill('#set-limit input[name=limit_requests]', '1');
    await page.fill('#set-limit input[name=usage_requests]', '1');
    await page.fill('#set-limit input[name=resets_in_ms]', '60000');
    await page.click('#set-limit button[type=submit]');
    await page.waitForSelector('#notice');
    expect(await page.textContent('#notice')).toContain(`Default Organization x ${CHAT}: 1 requests,`);
    expect(await read()).toMatchObject({ set_limit: { requests: 1, tokens: null }, usage: { requests: 1 } });
    expectError(await t.caller.http.post('/v1/chat/completions').send(chat), 429, { code: 'dynamic_request_limited' });
    await open('projects');
    await open('rate-limits');
    await page.waitForFunction(() => (window as any).consolePlots?.['rate-limits']);
    await shot('rate-limits-set');
    expect(await page.textContent(`tr[data-series="${name}"] .limit`)).toMatch(/^1 requests, .* \(set\); counted 1 requests/);
    expect(Number(await page.textContent(`tr[data-series="${name}"] td:nth-child(3)`))).toBe(1);
    // A refusal says why, in the page (a body setting nothing).
    await page.fill('#set-limit input[name=model]', CHAT);
    await page.click('#set-limit button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#page [role=alert]')?.textContent);
    expect(await page.textContent('#page [role=alert]')).toContain('Give something to set');
    // Back to the dynamic limit, from the page, for the tests that follow.
    await page.check('#set-limit input[name=dynamic]');
    await page.fill('#set-limit input[name=usage_requests]', '0');
    await page.click('#set-limit button[type=submit]');
    await page.waitForSelector('#notice');
    expect(await read()).toMatchObject({ set_limit: { requests: null, tokens: null }, usage: { requests: 0 } });
    expect((await t.caller.http.post('/v1/chat/completions').send(chat)).status).toBe(200);
  });

  test('scripts: a rule added in the page (JSON) answers the next chat with x-scripted; removed in the page, it is gone', async () => {
    await open('scripts');
    const text = 'Scripted from the console.';
    await page.fill('#add-script textarea', 'not json');
    await page.click('#add-script button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#page [role=alert]')?.textContent);
    expect(await page.textContent('#page [role=alert]')).toContain('not JSON');
    // A rule the platform refuses says why.
    await page.fill('#add-script textarea', JSON.stringify({ answers: [{}] }));
    await page.click('#add-script button[type=submit]');
    await page.waitForFunction(() => !document.querySelector('#page [role=alert]')?.textContent?.includes('not JSON'));
    await page.waitForFunction(() => document.querySelector('#page [role=alert]')?.textContent);
    expect((await control.GET('/_control/scripts')).data!.data).toEqual([]);
    await page.fill('#add-script textarea', JSON.stringify({ match: { message_contains: 'from the console' }, answers: [{ content: text }] }));
    await page.click('#add-script button[type=submit]');
    await page.waitForSelector('tr[data-script]');
    await shot('scripts');
    const [rule] = (await control.GET('/_control/scripts')).data!.data;
    const res = await t.caller.http.post('/v1/chat/completions').send({ ...chat, messages: [{ role: 'user', content: 'Hi from the console' }] });
    expect(res.status).toBe(200);
    expect(res.headers['x-scripted']).toBe(rule!.id);
    expect(res.body.choices[0].message.content).toBe(text);
    await open('projects');
    await open('scripts');
    expect(await page.textContent(`tr[data-script="${rule!.id}"] .hits`)).toBe('1');
    await page.click(`tr[data-script="${rule!.id}"] button.remove`);
    await page.waitForFunction(() => document.querySelectorAll('tr[data-script]').length === 0);
    expect((await control.GET('/_control/scripts')).data!.data).toEqual([]);
    expect((await t.caller.http.post('/v1/chat/completions').send(chat)).headers['x-scripted']).toBeUndefined();
  });

  test('snapshots: taken in the page, a restore in the page brings back a deleted resource; deleted in the page', async () => {
    const file = await uploadFile(t.caller, 'eval', [{ text: 'kept by the snapshot' }], 'snap.jsonl');
    await open('snapshots');
    await page.fill('#take-snapshot input[name=name]', 'console-snap');
    await page.click('#take-snapshot button[type=submit]');
    await page.waitForSelector('tr[data-snapshot="console-snap"]');
    expect(await page.textContent('#notice')).toMatch(/^Took console-snap: \d+ rows/);
    expect((await control.GET('/_control/snapshots')).data!.data.map((s) => s.name)).toEqual(['console-snap']);
    expect((await t.caller.http.delete(`/v1/files/${file}`)).status).toBe(200);
    expect((await t.caller.http.get(`/v1/files/${file}`)).status).toBe(404);
    await page.click('tr[data-snapshot="console-snap"] button.restore');
    await page.waitForFunction(() => document.querySelector('#notice')?.textContent?.startsWith('Restored'));
    await shot('snapshots');
    expect(await page.textContent('#notice')).toMatch(/^Restored console-snap: \d+ rows and \d+ files written back/);
    expect((await t.caller.http.get(`/v1/files/${file}`)).body).toMatchObject({ id: file, filename: 'snap.jsonl' });
    await page.click('tr[data-snapshot="console-snap"] button.remove');
    await page.waitForFunction(() => document.querySelectorAll('tr[data-snapshot]').length === 0);
    expect((await control.GET('/_control/snapshots')).data!.data).toEqual([]);
  });

  test("time: the clock and its offset; a job's next / terminal buttons, a 409 shown as the platform's message; advance", async () => {
    await open('time');
    const clock = (await control.GET('/_control/time')).data!;
    expect(await page.textContent('#clock-now')).toBe(clock.now);
    expect(await page.textContent('#clock-offset')).toBe(`${clock.offset_ms} ms`);
    // A queue job is claimed only by a worker: the platform's 409, its message in the job's row.
    const refused = await control.POST('/_control/jobs/{kind}/{id}/transition', {
      params: { path: { kind: 'queue_job', id: seeded.queueJob } },
      body: { to: 'next' },
    });
    expect(refused.response.status).toBe(409);
    await page.click(`tr[data-resource="${seeded.queueJob}"] button.next`);
    await page.waitForFunction((id) => document.querySelector(`tr[data-resource="${id}"] [role=alert]`)?.textContent, seeded.queueJob);
    expect(await page.textContent(`tr[data-resource="${seeded.queueJob}"] [role=alert]`)).toBe(refused.error!.error.message);
    // The video left in progress: "terminal" renders it to completed.
    expect(await page.textContent(`tr[data-resource="${seeded.pendingVideo}"] .state`)).toBe('in_progress');
    await page.click(`tr[data-resource="${seeded.pendingVideo}"] button.terminal`);
    await page.waitForFunction((id) => document.querySelector(`tr[data-resource="${id}"] .state`)?.textContent === 'completed', seeded.pendingVideo, {
      timeout: 20_000,
    });
    expect((await t.caller.http.get(`/v2/videos/${seeded.pendingVideo}`)).body.status).toBe('completed');
    // A completed job cannot move: 409 in the page.
    await page.click(`tr[data-resource="${seeded.fineTune}"] button.next`);
    await page.waitForFunction((id) => document.querySelector(`tr[data-resource="${id}"] [role=alert]`)?.textContent, seeded.fineTune);
    expect(await page.textContent(`tr[data-resource="${seeded.fineTune}"] [role=alert]`)).toContain('completed');
    await page.fill('#advance-time input[name=seconds]', '30');
    await page.click('#advance-time button[type=submit]');
    await page.waitForSelector('#notice');
    await shot('time');
    expect(await page.textContent('#notice')).toMatch(/^Advanced 30000 ms: \d+ timed steps run\.$/);
    const after = (await control.GET('/_control/time')).data!;
    expect(after.offset_ms).toBe(clock.offset_ms + 30_000);
    expect(await page.textContent('#clock-offset')).toBe(`${after.offset_ms} ms`);
  });
});
