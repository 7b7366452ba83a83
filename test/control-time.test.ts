// Time on the control plane (spec/tags/control.yaml: getTime, advanceTime, transitionJob, a fault rule's fail_job),
// used as an application's test suite would: the typed client with the control key beside the official together-ai
// client. The tests' base clock stands still (ManualClock): only the control plane moves the platform's time.
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import Together from 'together-ai';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { storeFile } from '../server/modules/files/store.ts';
import { expectError } from './support/expect.ts';
import { uploadFile } from './support/files.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
const T2V = 'Wan-AI/Wan2.2-T2V-A14B';
const SMALL = { width: 128, height: 72, seconds: '1', fps: 12 } as const;
let t: TestPlatform;
let control: PlatformClient;
let together: Together;
let trainingFile: string;

const rows = Array.from({ length: 12 }, (_, i) => ({ prompt: `Q${i}: what is ${i} + ${i}?`, completion: ` ${2 * i}` }));
const ms = (at: string) => Date.parse(at);

async function advance(seconds: number) {
  const { data, error } = await control.POST('/_control/time/advance', { body: { seconds } });
  expect(error).toBeUndefined();
  return data!;
}

async function move(
  kind: 'video' | 'fine_tune' | 'evaluation' | 'model_upload' | 'remote_upload' | 'remediation' | 'deployment' | 'queue_job',
  id: string,
  body: { to: string; error?: { code: string; message?: string } },
) {
  return control.POST('/_control/jobs/{kind}/{id}/transition', { params: { path: { kind, id } }, body });
}

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
  together = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
  trainingFile = await uploadFile(t.caller, 'fine-tune', rows, 'sums.jsonl');
  await advance(0); // its validation
});
afterAll(() => t?.close());
beforeEach(async () => {
  await control.DELETE('/_control/faults');
});

describe('the clock', () => {
  test('reads now and the offset; an advance moves both forward by exactly what it was given', async () => {
    const before = (await control.GET('/_control/time')).data!;
    const after = await advance(1.5);
    expect(after.offset_ms).toBe(before.offset_ms + 1500);
    expect(after.advanced_ms).toBe(1500);
    expect(ms(after.now) - ms(before.now)).toBe(1500);
    expect((await control.GET('/_control/time')).data).toEqual({ now: after.now, offset_ms: after.offset_ms });
  });

  test('never runs back: a negative or oversized advance is a 400 naming seconds, and changes nothing', async () => {
    const before = (await control.GET('/_control/time')).data!;
    for (const seconds of [-1, 31_536_001]) {
      const res = await t.http.post('/_control/time/advance').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`).send({ seconds });
      expectError(res, 400, { param: 'seconds' });
    }
    expect((await control.GET('/_control/time')).data).toEqual(before);
  });

  test('a reset and a restart keep the offset (the clock never runs back)', async () => {
    const p = await startTestPlatform();
    try {
      const other = () => createPlatformClient({ baseUrl: p.url, apiKey: TEST_CONTROL_KEY });
      await other().POST('/_control/time/advance', { body: { seconds: 30 } });
      await other().POST('/_control/reset', { body: {} });
      expect((await other().GET('/_control/time')).data!.offset_ms).toBe(30_000);
      await p.restart();
      expect((await other().GET('/_control/time')).data!.offset_ms).toBe(30_000);
    } finally {
      await p.close();
    }
  });
});

describe('advancing time', () => {
  test('a fine-tune completes with its checkpoints, each step at its own due time', async () => {
    const job = await together.fineTuning.create({ model: BASE, training_file: trainingFile, n_epochs: 2, batch_size: 8 });
    expect(job.status).toBe('pending');
    const t0 = ms((await control.GET('/_control/time')).data!.now);
    const after = await advance(60);
    expect(after.steps).toBeGreaterThanOrEqual(5); // pending, queued, running, compressing, uploading
    const done = await together.fineTuning.retrieve(job.id);
    expect(done.status).toBe('completed');
    // Started at once; trained after the 1 s its running state lasts: not at the end of the minute.
    expect(ms(done.started_at!)).toBe(t0);
    const checkpoints = await together.fineTuning.listCheckpoints(job.id);
    expect(checkpoints.data.map((c) => c.checkpoint_type)).toContain('Final');
    expect(checkpoints.data.every((c) => ms(c.created_at) === t0 + 1000)).toBe(true);
    const events = (await together.fineTuning.listEvents(job.id)).data!;
    expect(events.map((e) => e.type)).toContain('job_complete');
    const times = events.map((e) => ms(e.created_at!));
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  test('runs the due steps in order, and only those due by the target', async () => {
    const a = await together.fineTuning.create({ model: BASE, training_file: trainingFile });
    await advance(0.5); // a is running, its training due 1 s after it started
    expect((await together.fineTuning.retrieve(a.id)).status).toBe('running');
    const b = await together.fineTuning.create({ model: BASE, training_file: trainingFile });
    await advance(0.6); // a's training came due (1 s after it started), b's not (1 s after b started, 0.4 s ahead)
    expect((await together.fineTuning.retrieve(a.id)).status).toBe('completed');
    expect((await together.fineTuning.retrieve(b.id)).status).toBe('running');
    await advance(1);
    const [doneA, doneB] = await Promise.all([together.fineTuning.retrieve(a.id), together.fineTuning.retrieve(b.id)]);
    expect(doneB.status).toBe('completed');
    expect(ms(doneA.updated_at!)).toBeLessThan(ms(doneB.updated_at!));
    expect(ms(doneB.updated_at!) - ms(doneA.updated_at!)).toBe(500);
  });
});

describe('a fault rule that fails the created job', () => {
  test('createVideo succeeds; the video fails at its first step with the given code', async () => {
    const { data: rule } = await control.POST('/_control/faults', {
      body: { match: { operations: ['createVideo'] }, fail_job: { code: 'content_policy_violation', message: 'Blocked by the test.' }, count: 1 },
    });
    expect(rule!.fail_job).toEqual({ code: 'content_policy_violation', message: 'Blocked by the test.' });
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, maxRetries: 0 });
    const job = await client.videos.create({ model: T2V, prompt: 'doomed', ...SMALL, output_format: 'MP4' });
    expect(job.status).toBe('in_progress');
    await advance(0);
    const failed = await client.videos.retrieve(job.id);
    expect(failed.status).toBe('failed');
    expect(failed.error).toEqual({ code: 'content_policy_violation', message: 'Blocked by the test.' });
    // Used up: the next video renders.
    const next = await client.videos.create({ model: T2V, prompt: 'fine', ...SMALL, output_format: 'MP4' });
    await advance(0);
    expect((await client.videos.retrieve(next.id)).status).toBe('completed');
  });

  test('createFineTune: the job ends in error with the message, its default naming the code', async () => {
    await control.POST('/_control/faults', { body: { match: { operations: ['createFineTune'] }, fail_job: { code: 'dataset_rejected' } } });
    const job = await together.fineTuning.create({ model: BASE, training_file: trainingFile });
    expect(job.status).toBe('pending');
    await advance(0);
    const failed = await together.fineTuning.retrieve(job.id);
    expect(failed.status).toBe('error');
    expect(JSON.stringify(failed)).toContain('dataset_rejected');
  });

  test('is refused (400) without creating operations, or with a status; nothing is added', async () => {
    const post = (body: object) => t.http.post('/_control/faults').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`).send(body);
    expectError(await post({ fail_job: { code: 'x' } }), 400, { param: 'match.operations' });
    expectError(await post({ match: { operations: ['createChatCompletion'] }, fail_job: { code: 'x' } }), 400, { param: 'match.operations' });
    expectError(await post({ match: { operations: ['createVideo'] }, fail_job: { code: 'x' }, status: 500 }), 400, { param: 'fail_job' });
    expect((await control.GET('/_control/faults')).data!.data).toEqual([]);
  });
});

describe('moving one job', () => {
  const newVideo = async () => (await t.caller.http.post('/v2/videos').send({ model: T2V, prompt: 'steered', ...SMALL })).body.id as string;

  test("'next' takes the runner's step (the video is rendered); a terminal job cannot move on (409)", async () => {
    const id = await newVideo();
    const { data } = await move('video', id, { to: 'next' });
    expect(data).toEqual({
      kind: 'video',
      id,
      project_id: t.caller.identity.projectId,
      state: 'completed',
      terminal: true,
      moves: [{ from: 'in_progress', event: 'render', to: 'completed' }],
    });
    const done = (await t.caller.http.get(`/v2/videos/${id}`)).body;
    expect(done.outputs.video_url).toBeTruthy();
    const { error, response } = await move('video', id, { to: 'next' });
    expect(response.status).toBe(409);
    expect(error).toMatchObject({ error: { code: 'invalid_state_transition', param: null } });
  });

  test('to a failure state with an error: retrieve shows error.code; a move the table does not allow is the standard 409', async () => {
    const id = await newVideo();
    const { data } = await move('video', id, { to: 'failed', error: { code: 'gpu_lost' } });
    expect(data).toMatchObject({ state: 'failed', moves: [{ from: 'in_progress', event: 'fail', to: 'failed' }] });
    expect((await t.caller.http.get(`/v2/videos/${id}`)).body.error).toEqual({ code: 'gpu_lost', message: 'The video failed with gpu_lost.' });
    const refused = await move('video', id, { to: 'completed' });
    expect(refused.response.status).toBe(409);
    expect(refused.error).toMatchObject({ error: { code: 'invalid_state_transition', type: 'invalid_request_error' } });
    // The runner's step for the state it left finds it moved on and does nothing.
    await advance(0);
    expect((await t.caller.http.get(`/v2/videos/${id}`)).body.status).toBe('failed');
  });

  test("'terminal' takes every step: a fine-tune of another project completes with its checkpoints", async () => {
    const file = await uploadFile(t.other, 'fine-tune', rows);
    await advance(0);
    const job = (await t.other.http.post('/v1/fine-tunes').send({ model: BASE, training_file: file })).body;
    const { data } = await move('fine_tune', job.id, { to: 'terminal' });
    expect(data!.project_id).toBe(t.other.identity.projectId);
    expect(data!.moves.map((m) => m.to)).toEqual(['queued', 'running', 'compressing', 'uploading', 'completed']);
    const checkpoints = (await t.other.http.get(`/v1/fine-tunes/${job.id}/checkpoints`)).body.data;
    expect(checkpoints.map((c: { checkpoint_type: string }) => c.checkpoint_type)).toContain('Final');
  });

  test('a step that waits (its file not yet validated) answers 409 job_waiting, and the job stays', async () => {
    const file = await uploadFile(t.caller, 'fine-tune', rows);
    const job = (await t.caller.http.post('/v1/fine-tunes').send({ model: BASE, training_file: file })).body;
    const { error, response } = await move('fine_tune', job.id, { to: 'next' });
    expect(response.status).toBe(409);
    expect(error).toMatchObject({ error: { code: 'job_waiting' } });
    expect((await t.caller.http.get(`/v1/fine-tunes/${job.id}`)).body.status).toBe('pending');
    await advance(0);
  });

  test('a step a worker is taking at that moment answers 409 job_waiting; the worker finishes it', async () => {
    await advance(0);
    const id = await newVideo();
    const held = await t.services.runner.claim(8); // a worker takes the render
    expect(held.map((i) => i.subjectId)).toEqual([id]);
    const { error, response } = await move('video', id, { to: 'next' });
    expect(response.status).toBe(409);
    expect(error).toMatchObject({ error: { code: 'job_waiting', message: expect.stringContaining('a worker is taking its step now') } });
    await Promise.all(held.map((i) => t.services.runner.process(i)));
    expect((await t.caller.http.get(`/v2/videos/${id}`)).body.status).toBe('completed');
  });

  test('refusals: an unknown id 404, an unknown state or an error without a failure move 400', async () => {
    const missing = await move('evaluation', 'eval-missing', { to: 'next' });
    expect(missing.response.status).toBe(404);
    expect(missing.error).toMatchObject({ error: { param: 'id' } });
    const id = await newVideo();
    const unknown = await move('video', id, { to: 'rendering' });
    expect(unknown.response.status).toBe(400);
    expect(unknown.error).toMatchObject({ error: { param: 'to' } });
    const stray = await move('video', id, { to: 'next', error: { code: 'x' } });
    expect(stray.error).toMatchObject({ error: { param: 'error' } });
    const wrong = await move('video', id, { to: 'completed', error: { code: 'x' } });
    expect(wrong.error).toMatchObject({ error: { param: 'error' } });
    expect((await t.caller.http.get(`/v2/videos/${id}`)).body.status).toBe('in_progress');
    await advance(0);
  });
});

describe('the other kinds of job', () => {
  test('a queue job: claimed only by a worker (409), then failed with info.error, as a worker would', async () => {
    const model = 'steered-queue';
    const requestId = (await t.caller.http.post('/v1/queue/submit').send({ model, payload: { x: 1 } })).body.requestId as string;
    const refused = await move('queue_job', requestId, { to: 'next' });
    expect(refused.response.status).toBe(409);
    expect(refused.error).toMatchObject({ error: { code: 'invalid_state_transition' } });
    expect((await t.caller.http.post('/v1/queue/claim').send({ model })).body.data).toHaveLength(1);
    const { data } = await move('queue_job', requestId, { to: 'failed', error: { code: 'worker_crashed', message: 'Out of memory.' } });
    expect(data).toMatchObject({ state: 'failed', terminal: true, moves: [{ from: 'running', event: 'fail', to: 'failed' }] });
    const status = (await t.caller.http.get('/v1/queue/status').query({ model, request_id: requestId })).body;
    expect(status).toMatchObject({ status: 'failed', info: { error: { code: 'worker_crashed', message: 'Out of memory.' } } });
  });

  test('a v1 model upload: failed at its first step by a fault rule; another taken to Complete by its own steps', async () => {
    await control.POST('/_control/faults', {
      body: { match: { operations: ['uploadModel'] }, fail_job: { code: 'repository_gated', message: 'Gated.' }, count: 1 },
    });
    const doomed = (await t.caller.http.post('/v1/models').send({ model_name: 'steered-a', model_source: 'acme/Meta-Llama-3.1-8B-Instruct-a' })).body.data;
    await advance(2);
    const failed = (await t.caller.http.get(`/v1/jobs/${doomed.job_id}`)).body;
    expect(failed.status).toBe('Failed');
    expect(failed.status_updates.at(-1)).toMatchObject({ status: 'Failed', message: 'Gated.' });
    const next = (await t.caller.http.post('/v1/models').send({ model_name: 'steered-b', model_source: 'acme/Meta-Llama-3.1-8B-Instruct-b' })).body.data;
    const { data } = await move('model_upload', next.job_id, { to: 'terminal' });
    expect(data!.moves.map((m) => m.to)).toEqual(['Running', 'Complete']);
    expect((await t.caller.http.get('/v1/models')).body.map((m: { id: string }) => m.id)).toContain(next.model_id);
  });

  test('a remote upload of the v2 catalogue: failed with its status message', async () => {
    const base = `/v2/projects/${t.caller.identity.projectId}`;
    const model = (await t.caller.http.post(`${base}/models`).send({ type: 'model', baseModelId: 'meta-llama/Meta-Llama-3.1-8B-Instruct', name: 'steered-c' }))
      .body;
    const upload = (await t.caller.http.post(`${base}/models/uploads`).send({ modelId: model.id, remoteUrl: 'acme/Meta-Llama-3.1-8B-Instruct-c' })).body;
    const { data } = await move('remote_upload', upload.id, {
      to: 'REMOTE_UPLOAD_STATUS_FAILED',
      error: { code: 'source_gone', message: 'The bucket is gone.' },
    });
    expect(data!.state).toBe('REMOTE_UPLOAD_STATUS_FAILED');
    expect((await t.caller.http.get(`${base}/models/uploads/${upload.id}`)).body).toMatchObject({
      status: 'REMOTE_UPLOAD_STATUS_FAILED',
      statusMessage: 'The bucket is gone.',
    });
  });

  test("a deployment: 'next' provisions it now; it has no terminal state (409)", async () => {
    const base = `/v2/projects/${t.caller.identity.projectId}`;
    const deployed = await t.caller.http
      .post(`${base}/deploy`)
      .send({ endpointName: 'steered', model: 'meta-llama/Meta-Llama-3.1-8B-Instruct', config: 'cr_llama_3_1_8b_h100', minReplicas: 1, maxReplicas: 1 });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(202);
    const id = deployed.body.deployment.id as string;
    const { data } = await move('deployment', id, { to: 'next' });
    expect(data).toMatchObject({ state: 'DEPLOYMENT_STATE_READY', moves: [{ event: 'provisioned' }] });
    const refused = await move('deployment', id, { to: 'terminal' });
    expect(refused.response.status).toBe(409);
  });

  test('an evaluation: moved state by state by the table, then failed as a user error with its message', async () => {
    const rows = [{ prompt: 'Is water wet?', response: 'yes' }];
    const file = await storeFile(
      t.services,
      { projectId: t.caller.identity.projectId, filename: 'in.jsonl', purpose: 'eval', fileType: 'jsonl' },
      `${JSON.stringify(rows[0])}\n`,
    );
    const judge = { model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', model_source: 'serverless', system_template: 'Judge: {{ prompt }}' };
    const created = await t.caller.http.post('/v1/evaluation').send({
      type: 'classify',
      parameters: { judge, labels: ['yes', 'no'], pass_labels: ['yes'], model_to_evaluate: 'response', input_data_file_path: file.id },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.workflow_id as string;
    expect((await move('evaluation', id, { to: 'error' })).response.status).toBe(409); // pending cannot fail
    expect((await move('evaluation', id, { to: 'queued' })).data!.state).toBe('queued');
    expect((await move('evaluation', id, { to: 'running' })).data!.state).toBe('running');
    const { data } = await move('evaluation', id, { to: 'user_error', error: { code: 'bad_rows', message: 'Row 1 has no label.' } });
    expect(data).toMatchObject({ state: 'user_error', terminal: true });
    expect((await t.caller.http.get(`/v1/evaluation/${id}/status`)).body).toEqual({ status: 'user_error', results: { error: 'Row 1 has no label.' } });
    await advance(0); // the steps scheduled for the states it left find it moved on
    expect((await t.caller.http.get(`/v1/evaluation/${id}/status`)).body.status).toBe('user_error');
  });

  test("a remediation: 'terminal' runs its start and its run now; an unknown id is a 404", async () => {
    const cluster = (await t.caller.http.get('/v1/compute/clusters')).body.clusters[0].cluster_id as string;
    const instance = (await t.caller.http.get(`/v1/compute/clusters/${cluster}/instances`)).body.instances[0].instance_id as string;
    const path = `/v1/compute/clusters/${cluster}/instances/${instance}/remediations`;
    const created = await t.caller.http.post(path).send({ mode: 'REMEDIATION_MODE_REBOOT_VM' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const { data } = await move('remediation', created.body.id, { to: 'terminal' });
    expect(data!.moves.map((m) => m.to)).toEqual(['RUNNING', 'SUCCEEDED']);
    expect((await t.caller.http.get(`${path}/${created.body.id}`)).body.state).toBe('SUCCEEDED');
    expect((await move('remediation', 'rem-missing', { to: 'next' })).response.status).toBe(404);
  });
});
