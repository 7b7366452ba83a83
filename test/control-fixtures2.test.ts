// Fixtures, second part (spec/tags/control.yaml applyFixtures): contents put into projects that exist already,
// fine-tunes in given states, videos; used as a CI suite would, through the typed and the official clients.
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError } from './support/expect.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const ulid = (tail: string) => `01jr${'0'.repeat(22 - tail.length)}${tail}`;

let t: TestPlatform;
let control: PlatformClient;
const auth = { Authorization: `Bearer ${TEST_CONTROL_KEY}` };

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
});
afterAll(() => t?.close());

describe('contents of projects that exist already', () => {
  test('a key and a file put into the default project (by slug) and into one made by the same document (by id)', async () => {
    const defaultProject = await t.services.db.prisma.project.findUniqueOrThrow({ where: { slug: 'default' } });
    const before = await t.services.db.prisma.project.count();
    const secret = 'default-project-key-0123456789';
    const { data, error } = await control.POST('/_control/fixtures', {
      body: {
        organizations: [{ name: 'Made here', projects: [{ id: `proj_${ulid('a1')}`, name: 'Target' }] }],
        projects: [
          {
            project: 'default',
            api_keys: [{ name: 'ci', secret }],
            files: [{ id: `file-${ulid('a2')}`, filename: 'rows.jsonl', purpose: 'eval', content: '{"text": "x"}\n' }],
          },
          { project: `proj_${ulid('a1')}`, api_keys: [{ id: `key_${ulid('a3')}`, name: 'second', secret: 'target-project-key-0123456789' }] },
        ],
      },
    });
    expect(error).toBeUndefined();
    // Only the document's own project is made; the others are filled.
    expect(data!.projects).toEqual([`proj_${ulid('a1')}`]);
    expect(await t.services.db.prisma.project.count()).toBe(before + 1);
    expect(data!.api_keys).toEqual([expect.stringMatching(/^key_/), `key_${ulid('a3')}`]);
    const who = await t.http.get('/v1/whoami').set('Authorization', `Bearer ${secret}`);
    expect(who.body).toMatchObject({ project_id: defaultProject.id, project_slug: 'default' });
    const client = new Together({ apiKey: secret, baseURL: `${t.url}/v1` });
    expect((await client.files.list()).data.map((f) => f.id)).toContain(`file-${ulid('a2')}`);
    const target = await t.http.get('/v1/whoami').set('Authorization', 'Bearer target-project-key-0123456789');
    expect(target.body).toMatchObject({ project_id: `proj_${ulid('a1')}`, organization_name: 'Made here' });
  });

  test('a project found nowhere: 404 naming the reference, nothing made', async () => {
    const before = await t.services.db.prisma.apiKey.count();
    const res = await t.http
      .post('/_control/fixtures')
      .set(auth)
      .send({ projects: [{ project: 'default', api_keys: [{ name: 'k', secret: 'never-made-key-0123456789' }] }, { project: 'no-such-project' }] });
    expectError(res, 404, { code: 'not_found', param: 'projects.1.project' });
    expect(await t.services.db.prisma.apiKey.count()).toBe(before);
  });
});

describe('fine-tunes in given states', () => {
  const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
  const dataset = `${Array.from({ length: 16 }, (_, i) => JSON.stringify({ text: `sample number ${i}` })).join('\n')}\n`;
  const secret = 'fine-tune-fixture-key-0123456789';
  const TRAIN = `file-${ulid('f1')}`;

  test('completed with checkpoints and metrics, running, queued, pending, cancelled, error: on a file of the same document', async () => {
    const request = { model: BASE, training_file: TRAIN, n_epochs: 2, n_checkpoints: 2, batch_size: 8 };
    const { data, error } = await control.POST('/_control/fixtures', {
      body: {
        organizations: [
          {
            name: 'Tuning',
            projects: [
              {
                name: 'Tunes',
                api_keys: [{ name: 'ci', secret }],
                files: [{ id: TRAIN, filename: 'train.jsonl', purpose: 'fine-tune', content: dataset }],
                fine_tunes: [
                  { id: `ft-${ulid('f2')}`, request: request as never, status: 'completed' },
                  { request: request as never, status: 'running' },
                  { request: request as never, status: 'queued' },
                  { request: request as never },
                  { request: request as never, status: 'cancelled' },
                  { request: request as never, status: 'error', error: 'The GPU fell over.' },
                ],
              },
            ],
          },
        ],
      },
    });
    expect(error).toBeUndefined();
    const ids = data!.fine_tunes;
    expect(ids[0]).toBe(`ft-${ulid('f2')}`);
    const client = new Together({ apiKey: secret, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const states = await Promise.all(ids.map(async (id) => (await client.fineTuning.retrieve(id)).status));
    expect(states).toEqual(['completed', 'running', 'queued', 'pending', 'cancelled', 'error']);
    const done = await client.fineTuning.retrieve(ids[0]!);
    expect(done).toMatchObject({ training_file: TRAIN, user_id: 'fixtures', model_output_name: expect.any(String) });
    const checkpoints = await client.fineTuning.listCheckpoints(ids[0]!);
    expect(checkpoints.data.map((c) => c.checkpoint_type)).toContain('Final');
    const metrics = (await t.http.get(`/v1/fine-tunes/${ids[0]}/metrics`).set('Authorization', `Bearer ${secret}`)).body.metrics;
    expect(metrics.length).toBeGreaterThan(0);
    expect(metrics[0]).toHaveProperty(['train/loss']);
    // The fine-tuned model is in the project's catalogue, as after any completed job.
    const { outputModelId } = await t.services.db.prisma.fineTune.findUniqueOrThrow({ where: { id: ids[0]! } });
    expect((await client.models.list()).map((m) => m.id)).toContain(outputModelId);
    expect(await client.fineTuning.retrieve(ids[5]!)).toMatchObject({ error: 'The GPU fell over.' });
    // The running job is left to the runner: it completes in its own time, as any.
    await t.advance(2000);
    expect((await client.fineTuning.retrieve(ids[1]!)).status).toBe('completed');
  });

  test('a training file the module refuses, a taken id: the field inside the document, nothing made', async () => {
    const before = await t.services.db.prisma.fineTune.count();
    const body = (training_file: string, id?: string) => ({
      projects: [
        {
          project: 'default',
          files: [{ filename: 'eval.jsonl', purpose: 'eval', content: '{"text": "x"}\n' }],
          fine_tunes: [{ ...(id && { id }), request: { model: BASE, training_file } }],
        },
      ],
    });
    expectError(await t.http.post('/_control/fixtures').set(auth).send(body('file-nope')), 404, {
      code: 'file_not_found',
      param: 'projects.0.fine_tunes.0.request.training_file',
    });
    // Another project's file is not this project's.
    expectError(await t.http.post('/_control/fixtures').set(auth).send(body(TRAIN)), 404, { param: 'projects.0.fine_tunes.0.request.training_file' });
    expectError(
      await t.http
        .post('/_control/fixtures')
        .set(auth)
        .send(body(TRAIN, `ft-${ulid('f2')}`)),
      409,
      {
        code: 'id_taken',
        param: 'projects.0.fine_tunes.0.id',
      },
    );
    expect(await t.services.db.prisma.fineTune.count()).toBe(before);
  });
});

describe('videos completed', () => {
  test('rendered by the runner right after the commit: the answer comes with the file there', async () => {
    const secret = 'video-completed-key-0123456789';
    const { data, error } = await control.POST('/_control/fixtures', {
      body: {
        projects: [
          {
            project: 'default',
            api_keys: [{ name: 'videos', secret }],
            videos: [
              {
                id: `video_${ulid('v1')}`,
                request: { model: 'Wan-AI/Wan2.2-T2V-A14B', prompt: 'a lighthouse', width: 128, height: 72, seconds: '1', fps: 12 },
                status: 'completed',
              },
            ],
          },
        ],
      },
    });
    expect(error).toBeUndefined();
    expect(data!.videos).toEqual([`video_${ulid('v1')}`]);
    const client = new Together({ apiKey: secret, baseURL: `${t.url}/v2`, maxRetries: 0 });
    expect(await client.videos.retrieve(`video_${ulid('v1')}`)).toMatchObject({ status: 'completed', outputs: { video_url: expect.any(String) } });
    const content = await t.http
      .get(`/v2/videos/video_${ulid('v1')}/content`)
      .set('Authorization', `Bearer ${secret}`)
      .buffer(true);
    expect(content.status).toBe(200);
    expect(content.headers['content-type']).toBe('video/mp4');
    expect(Number(content.headers['content-length'])).toBeGreaterThan(0);
  });
});

describe('v1 endpoints in given states', () => {
  const HW = '1x_nvidia_h100_80gb_sxm';
  const MODEL = 'meta-llama/Meta-Llama-3.1-8B-Instruct';
  const ID = 'endpoint-0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0';

  test('STARTED (holding its replicas) and STOPPED, in the default project, with a given id', async () => {
    const before = await t.services.db.prisma.hardwareReservation.count();
    const { data, error } = await control.POST('/_control/fixtures', {
      body: {
        projects: [
          {
            project: 'default',
            v1_endpoints: [
              { id: ID, display_name: 'Fixture v1', model: MODEL, hardware: HW, min_replicas: 2, max_replicas: 3, inactive_timeout: 30 },
              { display_name: 'Stopped v1', model: MODEL, hardware: HW, state: 'STOPPED' },
            ],
          },
        ],
      },
    });
    expect(error).toBeUndefined();
    expect(data!.v1_endpoints).toEqual([ID, expect.stringMatching(/^endpoint-/)]);
    const started = await t.caller.http.get(`/v1/endpoints/${ID}`);
    expect(started.body).toMatchObject({
      id: ID,
      display_name: 'Fixture v1',
      model: MODEL,
      hardware: HW,
      state: 'STARTED',
      name: expect.stringMatching(/^default\/Meta-Llama-3\.1-8B-Instruct-[0-9a-f]{6}$/),
    });
    expect((await t.caller.http.get(`/v1/endpoints/${data!.v1_endpoints[1]}`)).body.state).toBe('STOPPED');
    expect(await t.services.db.prisma.hardwareReservation.count()).toBe(before + 2);
    // It moves as any v1 endpoint: stopped by its owner.
    expect((await t.caller.http.patch(`/v1/endpoints/${ID}`).send({ state: 'STOPPED' })).body.state).toBe('STOPPED');
  });

  test('unknown hardware, max below min, a taken id: the field inside the document, nothing made', async () => {
    const before = await t.services.db.prisma.v1Endpoint.count();
    const send = (endpoint: Record<string, unknown>) =>
      t.http
        .post('/_control/fixtures')
        .set(auth)
        .send({ projects: [{ project: 'default', v1_endpoints: [{ display_name: 'x', model: MODEL, hardware: HW, ...endpoint }] }] });
    expectError(await send({ hardware: 'no_such_hardware' }), 404, { code: 'hardware_not_found', param: 'projects.0.v1_endpoints.0.hardware' });
    expectError(await send({ model: 'no/such-model' }), 404, { code: 'model_not_found', param: 'projects.0.v1_endpoints.0.model' });
    expectError(await send({ min_replicas: 3, max_replicas: 2 }), 400, { param: 'projects.0.v1_endpoints.0.max_replicas' });
    expectError(await send({ id: ID }), 409, { code: 'id_taken', param: 'projects.0.v1_endpoints.0.id' });
    expect(await t.services.db.prisma.v1Endpoint.count()).toBe(before);
  });
});
