// Tag Deployments (custom containers) and DeploymentsStorage: the lifecycle through the runner's timed steps,
// updates (new revision, rescale, rename), queue-fed autoscaling, volumes and secrets by reference (values never
// shown), logs of what the server did, delete, scoping, bad input changing nothing, storage reads by signed URL,
// and the official client's beta.jig deployment calls.
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { containerProgression } from '../server/modules/containers/machine.ts';
import { storeFile } from '../server/modules/files/index.ts';
import { expectError } from './support/expect.ts';
import { expectSignedReadFailures } from './support/outage-error.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const ROLLOUT = 30_000;
const SCALE = 10_000;
const AUTOSCALE = 30_000;
const D = '/v1/deployments';
let n = 0;
const base = (over: object = {}) => ({ name: `app-${++n}`, image: 'registry.example/app:1', gpu_type: 'h100-80gb', ...over });
const create = (body: object, http = t.caller.http) => http.post(D).send(body);
const get = (id: string, http = t.caller.http) => http.get(`${D}/${encodeURIComponent(id)}`);
const patch = (id: string, body: object, http = t.caller.http) => http.patch(`${D}/${encodeURIComponent(id)}`).send(body);
const logs = async (id: string, query = '') => {
  const res = await t.caller.http.get(`${D}/${id}/logs${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.lines as string[];
};
const listCount = async () => (await t.caller.http.get(D)).body.data.length;

describe('lifecycle', () => {
  test('create: Updating with its replicas scheduled, then Ready after DURATION_CONTAINER_ROLLOUT_MS; logs say what the server did', async () => {
    const res = await create(base({ name: 'web', description: 'a web app', port: 8080 }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const d = res.body;
    expect(d).toMatchObject({
      object: 'deployment',
      name: 'web',
      description: 'a web app',
      image: 'registry.example/app:1',
      status: 'Updating',
      gpu_type: 'h100-80gb',
      gpu_count: 1,
      min_replicas: 1,
      max_replicas: 1,
      desired_replicas: 1,
      ready_replicas: 0,
      port: 8080,
      health_check_path: '/health',
      environment_variables: [],
      volumes: [],
    });
    expect(d.id).toMatch(/^cdep_/);
    expect(d.replica_events).toEqual({
      [`${d.id}-r1-1`]: expect.objectContaining({ replica_status: 'Scheduled', replica_status_reason: 'RolloutInProgress', revision_id: '1' }),
    });
    await t.advance(ROLLOUT - 1);
    expect((await get(d.id)).body.status).toBe('Updating');
    await t.advance(1);
    const ready = (await get('web')).body;
    expect(ready).toMatchObject({ id: d.id, status: 'Ready', ready_replicas: 1, desired_replicas: 1 });
    expect(ready.replica_events[`${d.id}-r1-1`]).toMatchObject({
      replica_status: 'Ready',
      replica_status_reason: 'Simulated',
      image: 'registry.example/app:1',
    });
    expect(ready.replica_events[`${d.id}-r1-1`].replica_ready_since).toBe(new Date(t.clock.now()).toISOString());
    const lines = await logs(d.id);
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\S+Z \[deployment\] deployment 'web' accepted: revision 1, image registry.example\/app:1/);
    expect(lines.join('\n')).toMatch(/no container runs on this server/);
    expect(lines.some((l) => l.includes(`[${d.id}-r1-1] replica scheduled (revision 1)`))).toBe(true);
    expect(lines.some((l) => l.includes(`[${d.id}-r1-1] replica ready (simulated`))).toBe(true);
    expect(lines.at(-1)).toMatch(/status Ready: 1 replica\(s\) of revision 1 ready$/);
  });

  test('update the image: a new revision rolls out, the old replicas stop; replicas alone rescale; a rename moves nothing', async () => {
    const d = (await create(base({ name: 'roll' }))).body;
    await t.advance(ROLLOUT);
    const updated = await patch(d.id, { image: 'registry.example/app:2', environment_variables: [{ name: 'MODE', value: 'fast' }] });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body).toMatchObject({
      status: 'Updating',
      image: 'registry.example/app:2',
      ready_replicas: 1,
      environment_variables: [{ name: 'MODE', value: 'fast' }],
    });
    // The old revision's replica still serves while the new one is scheduled.
    expect(updated.body.replica_events[`${d.id}-r1-1`]).toMatchObject({ replica_status: 'Ready', image: 'registry.example/app:1' });
    expect(updated.body.replica_events[`${d.id}-r2-1`]).toMatchObject({ replica_status: 'Scheduled', image: 'registry.example/app:2', revision_id: '2' });
    await t.advance(ROLLOUT);
    const rolled = (await get(d.id)).body;
    expect(rolled.status).toBe('Ready');
    expect(Object.keys(rolled.replica_events)).toEqual([`${d.id}-r2-1`]);
    expect((await logs(d.id, `?replica_id=${d.id}-r1-1`)).at(-1)).toMatch(/replica stopped \(replaced by revision 2\)$/);

    const scaled = await patch(d.id, { min_replicas: 3, max_replicas: 4 });
    expect(scaled.body).toMatchObject({ status: 'Scaling', desired_replicas: 3, ready_replicas: 1, min_replicas: 3, max_replicas: 4 });
    expect(Object.keys(scaled.body.replica_events).sort()).toEqual([`${d.id}-r2-1`, `${d.id}-r2-2`, `${d.id}-r2-3`]);
    await t.advance(SCALE);
    expect((await get(d.id)).body).toMatchObject({ status: 'Ready', ready_replicas: 3 });

    const renamed = await patch(d.id, { name: 'roll-renamed', description: 'new words' });
    expect(renamed.body).toMatchObject({ status: 'Ready', name: 'roll-renamed', description: 'new words', ready_replicas: 3 });
    // The same spec again is no new revision.
    expect((await patch(d.id, { image: 'registry.example/app:2' })).body.status).toBe('Ready');

    // Logs of one revision, by `revision` or `version`.
    expect((await logs(d.id, '?revision=1')).every((l) => !l.includes('-r2-'))).toBe(true);
    expect(await logs(d.id, '?version=2')).toEqual(await logs(d.id, '?revision=2'));
    expect(await logs(d.id, '?revision=9')).toEqual([]);
    expect(await logs(d.id, '?replica_id=nope')).toEqual([]);
    expectError(await t.caller.http.get(`${D}/${d.id}/logs?revision=abc`), 400, { param: 'revision' });
    expectError(await t.caller.http.get(`${D}/${d.id}/logs?revision=1&version=2`), 400, { param: 'version' });
  });

  test('min_replicas 0: ScaledToZero after the rollout; raising it scales up', async () => {
    const d = (await create(base({ min_replicas: 0, max_replicas: 2 }))).body;
    expect(d).toMatchObject({ desired_replicas: 0, replica_events: {} });
    await t.advance(ROLLOUT);
    expect((await get(d.id)).body).toMatchObject({ status: 'ScaledToZero', ready_replicas: 0 });
    expect((await patch(d.id, { min_replicas: 1 })).body).toMatchObject({ status: 'Scaling', desired_replicas: 1 });
    await t.advance(SCALE);
    expect((await get(d.id)).body).toMatchObject({ status: 'Ready', ready_replicas: 1 });
  });

  test('queue autoscaling: the backlog of the queue sets the replicas (target per replica), within min and max', async () => {
    const model = 'acme/containers-queue';
    const d = (await create(base({ min_replicas: 0, max_replicas: 3, autoscaling: { metric: 'QueueBacklogPerWorker', model, target: 2 } }))).body;
    expect(d.autoscaling).toEqual({ metric: 'QueueBacklogPerWorker', model, target: 2 });
    await t.advance(ROLLOUT);
    expect((await get(d.id)).body.status).toBe('ScaledToZero');
    for (let i = 0; i < 5; i++) expect((await t.caller.http.post('/v1/queue/submit').send({ model, payload: { i } })).status).toBe(200);
    await t.advance(AUTOSCALE);
    expect((await get(d.id)).body).toMatchObject({ status: 'Scaling', desired_replicas: 3 });
    await t.advance(SCALE);
    expect((await get(d.id)).body).toMatchObject({ status: 'Ready', ready_replicas: 3 });
    expect((await logs(d.id)).join('\n')).toMatch(/autoscaler: 0 -> 3 replica\(s\) \(queue 'acme\/containers-queue' holds 5 job\(s\), target 2 per replica/);
    // The jobs are the Queue tag's: a caller's worker takes them; no container does.
    expect((await t.caller.http.post('/v1/queue/clear').send({ model })).body).toEqual({ canceled_count: 5 });
    await t.advance(AUTOSCALE);
    expect((await get(d.id)).body).toMatchObject({ status: 'Scaling', desired_replicas: 0 });
    await t.advance(SCALE);
    expect((await get(d.id)).body).toMatchObject({ status: 'ScaledToZero', ready_replicas: 0 });
    // HTTP metrics read 0 here: min_replicas.
    const http = (await create(base({ min_replicas: 2, max_replicas: 5, autoscaling: { metric: 'HTTPTotalRequests', target: 10 } }))).body;
    expect(http.desired_replicas).toBe(2);
  });
});

describe('Failed', () => {
  test("a rollout step the runner gives up on: Failed, with the log's reason; an update rolls out a new revision", async () => {
    const d = (await create(base())).body;
    // The runner's give-up for this machine's step (what it calls after RUNNER_MAX_FAILURES failed attempts).
    const progression = containerProgression(t.services);
    await t.services.db.write((tx) => progression.giveUp!(tx, d.id, 'the step failed (injected by the test)'));
    expect((await get(d.id)).body).toMatchObject({ status: 'Failed', ready_replicas: 0 });
    expect((await logs(d.id)).slice(-2).map((l) => l.replace(/^\S+ /, ''))).toEqual([
      '[deployment] the server gave up on this step: the step failed (injected by the test)',
      '[deployment] status Failed',
    ]);
    // Its scheduled rollout step finds it moved on and does nothing.
    await t.advance(ROLLOUT);
    expect((await get(d.id)).body.status).toBe('Failed');
    const retried = (await patch(d.id, { description: 'try again' })).body;
    expect(retried).toMatchObject({ status: 'Updating', description: 'try again' });
    expect(Object.keys(retried.replica_events)).toEqual([`${d.id}-r2-1`]);
    await t.advance(ROLLOUT);
    expect((await get(d.id)).body).toMatchObject({ status: 'Ready', ready_replicas: 1 });
  });
});

describe('volumes and secrets by reference', () => {
  test('mounted volumes and variables from secrets: shown by name, the value never; in use, neither can be deleted', async () => {
    const vol = (
      await t.caller.http
        .post('/v1/deployments/storage/volumes')
        .send({ name: 'weights-c', type: 'readOnly', content: { type: 'files', source_prefix: 'models/' } })
    ).body;
    await t.caller.http.patch(`/v1/deployments/storage/volumes/${vol.id}`).send({ content: { source_prefix: 'models/v2/' } });
    const secretValue = 'hf_super-secret-value-1234';
    const sec = (await t.caller.http.post('/v1/deployments/secrets').send({ name: 'HF_TOKEN_C', value: secretValue })).body;
    const res = await create(
      base({
        name: 'with-refs',
        volumes: [
          { name: 'weights-c', mount_path: '/models' },
          { name: 'model-weights', mount_path: '/base', version: 1 },
        ],
        environment_variables: [
          { name: 'HF_TOKEN', value_from_secret: sec.id },
          { name: 'PLAIN', value: 'shown' },
        ],
      }),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.volumes).toEqual([
      { name: 'weights-c', mount_path: '/models', version: 2 },
      { name: 'model-weights', mount_path: '/base', version: 1 },
    ]);
    expect(res.body.environment_variables).toEqual([
      { name: 'HF_TOKEN', value_from_secret: 'HF_TOKEN_C' },
      { name: 'PLAIN', value: 'shown' },
    ]);
    expect(JSON.stringify(res.body)).not.toContain(secretValue);
    const lines = await logs(res.body.id);
    expect(lines.join('\n')).toContain("mounted volume 'weights-c' version 2 at /models");
    expect(lines.join('\n')).toContain("set environment variable HF_TOKEN from secret 'HF_TOKEN_C'");
    expect(lines.join('\n')).not.toContain(secretValue);
    const mounted = (await t.caller.http.get(`/v1/deployments/storage/volumes/${vol.id}`)).body;
    expect(mounted.mounted_by).toContain(res.body.id);
    expect(mounted.version_history['2'].mounted_by).toContain(res.body.id);
    // One volume is mounted at one version (at any number of paths).
    expectError(
      await patch(res.body.id, {
        volumes: [
          { name: vol.id, mount_path: '/a' },
          { name: vol.id, mount_path: '/b', version: 1 },
        ],
      }),
      400,
      {
        code: 'volume_version_conflict',
        param: 'volumes.1.version',
      },
    );
    expectError(await t.caller.http.delete(`/v1/deployments/storage/volumes/${vol.id}`), 409, { code: 'volume_in_use' });
    expectError(await t.caller.http.delete(`/v1/deployments/secrets/${sec.id}`), 409, { code: 'secret_in_use', param: 'id' });
    // A renamed secret is shown by its new name.
    await t.caller.http.patch(`/v1/deployments/secrets/${sec.id}`).send({ name: 'HF_TOKEN_RENAMED' });
    expect((await get(res.body.id)).body.environment_variables[0]).toEqual({ name: 'HF_TOKEN', value_from_secret: 'HF_TOKEN_RENAMED' });
    // Dropping the references (an update) frees them.
    expect((await patch(res.body.id, { volumes: [], environment_variables: [] })).status).toBe(200);
    expect((await t.caller.http.delete(`/v1/deployments/secrets/${sec.id}`)).status).toBe(200);
    expect((await t.caller.http.delete(`/v1/deployments/storage/volumes/${vol.id}`)).status).toBe(200);
  });

  test('an unknown volume, version or secret: 400 naming the field, nothing created', async () => {
    const before = await listCount();
    expectError(await create(base({ volumes: [{ name: 'no-such-volume', mount_path: '/m' }] })), 400, { code: 'volume_not_found', param: 'volumes.0.name' });
    expectError(await create(base({ volumes: [{ name: 'model-weights', mount_path: '/m', version: 7 }] })), 400, {
      code: 'volume_version_not_found',
      param: 'volumes.0.version',
    });
    expectError(
      await create(
        base({
          environment_variables: [
            { name: 'A', value: 'x' },
            { name: 'B', value_from_secret: 'NO_SUCH' },
          ],
        }),
      ),
      400,
      {
        code: 'secret_not_found',
        param: 'environment_variables.1.value_from_secret',
      },
    );
    expect(await listCount()).toBe(before);
    // Another project's volume is unknown here.
    const theirs = (
      await t.other.http.post('/v1/deployments/storage/volumes').send({ name: 'theirs-c', type: 'readOnly', content: { type: 'files', source_prefix: 'x/' } })
    ).body;
    expectError(await create(base({ volumes: [{ name: theirs.id, mount_path: '/m' }] })), 400, { param: 'volumes.0.name' });
  });
});

describe('names, scoping, bad input, delete', () => {
  test('names are unique per project (409 deployment_name_taken); another project may use the name', async () => {
    await create(base({ name: 'unique-c' })).expect(200);
    expectError(await create(base({ name: 'unique-c' })), 409, { code: 'deployment_name_taken', param: 'name' });
    expect((await create(base({ name: 'unique-c' }), t.other.http)).status).toBe(200);
    await create(base({ name: 'unique-d' })).expect(200);
    expectError(await patch('unique-d', { name: 'unique-c' }), 409, { code: 'deployment_name_taken', param: 'name' });
  });

  test("another project's deployment answers 404 as an absent one", async () => {
    const theirs = (await create(base(), t.other.http)).body;
    for (const res of [
      await get(theirs.id),
      await patch(theirs.id, { description: 'x' }),
      await t.caller.http.delete(`${D}/${theirs.id}`),
      await t.caller.http.get(`${D}/${theirs.id}/logs`),
      await get('cdep_missing'),
    ])
      expectError(res, 404, { code: 'not_found', param: 'id' });
    expect((await t.caller.http.get(D)).body.data.map((d: any) => d.id)).not.toContain(theirs.id);
    expect((await get(theirs.id, t.other.http)).body.description).toBe('');
  });

  test('bad input: 400 naming the field, and nothing changes', async () => {
    const before = await listCount();
    const cases: [object, string][] = [
      [{ gpu_type: 'a100' }, 'gpu_type'],
      [{ image: '' }, 'image'],
      [{ min_replicas: -1 }, 'min_replicas'],
      [{ min_replicas: 3, max_replicas: 2 }, 'max_replicas'],
      [{ max_replicas: 101 }, 'max_replicas'],
      [{ gpu_count: 0 }, 'gpu_count'],
      [{ port: 70000 }, 'port'],
      [{ cpu: 0.01 }, 'cpu'],
      [{ memory: 2000 }, 'memory'],
      [{ autoscaling: { target: 2 } }, 'autoscaling.metric'],
      [{ autoscaling: { metric: 'QueueBacklogPerWorker', target: 2 } }, 'autoscaling.model'],
      [{ autoscaling: { metric: 'QueueBacklogPerWorker', model: 'q', target: 0 } }, 'autoscaling.target'],
      [{ environment_variables: [{ name: 'A' }] }, 'environment_variables.0'],
      [{ environment_variables: [{ name: 'A', value: '1', value_from_secret: 'S' }] }, 'environment_variables.0'],
      [
        {
          environment_variables: [
            { name: 'A', value: '1' },
            { name: 'A', value: '2' },
          ],
        },
        'environment_variables.1.name',
      ],
      [{ volumes: [{ name: 'model-weights', mount_path: 'relative' }] }, 'volumes.0.mount_path'],
      [{ name: 'n'.repeat(101) }, 'name'],
      [{ name: 'secrets' }, 'name'],
      [{ name: 'storage' }, 'name'],
    ];
    for (const [over, param] of cases) expectError(await create(base(over)), 400, { param });
    expectError(await create({ image: 'x', gpu_type: 'h100-80gb' }), 400, { param: 'name' });
    expect(await listCount()).toBe(before);
    const d = (await create(base({ name: 'stays' }))).body;
    const lines = await logs(d.id);
    expectError(await patch(d.id, { max_replicas: 0 }), 400, { param: 'max_replicas' });
    expectError(await patch(d.id, { image: 'other:1', volumes: [{ name: 'nope', mount_path: '/x' }] }), 400, { param: 'volumes.0.name' });
    expect((await get(d.id)).body).toEqual(d);
    expect(await logs(d.id)).toEqual(lines);
  });

  test('delete: at once, in any status; the id then answers 404; its logs go with it', async () => {
    const d = (await create(base())).body;
    expect((await t.caller.http.delete(`${D}/${d.id}`)).body).toEqual({});
    expectError(await get(d.id), 404, { param: 'id' });
    expectError(await t.caller.http.get(`${D}/${d.id}/logs`), 404, { param: 'id' });
    expectError(await t.caller.http.delete(`${D}/${d.id}`), 404, { param: 'id' });
    // Its rollout's step finds nothing to do.
    await t.advance(ROLLOUT);
    expect(await t.services.db.prisma.containerDeploymentLog.count({ where: { deploymentId: d.id } })).toBe(0);
  });
});

describe('storage reads', () => {
  test("a file of the project's storage by name: 307 to a signed URL of this server, readable without a key; /url the same", async () => {
    const { projectId } = t.caller.identity;
    await storeFile(t.services, { projectId, filename: 'models/config.json', purpose: 'eval', fileType: 'jsonl' }, '{"old": true}\n');
    t.clock.advance(1);
    await storeFile(t.services, { projectId, filename: 'models/config.json', purpose: 'eval', fileType: 'jsonl' }, '{"layers": 32}\n');
    const name = encodeURIComponent('models/config.json');
    const res = await t.caller.http.get(`${D}/storage/${name}`).redirects(0);
    expect(res.status).toBe(307);
    const location = res.headers.location as string;
    expect(location.startsWith(`${t.url}/v1/deployments/storage/${name}/content?`)).toBe(true);
    expect(JSON.parse(res.text)).toBe(location);
    const url = (await t.caller.http.get(`${D}/storage/${name}/url`)).body.url;
    expect(url).toBe(location);
    const path = location.slice(t.url.length);
    const read = await t.http.get(path).buffer(true);
    expect(read.status).toBe(200);
    expect(read.body.toString()).toBe('{"layers": 32}\n');
    const range = await t.http.get(path).set('Range', 'bytes=0-4').buffer(true);
    expect(range.status).toBe(206);
    expectError(await t.http.get(path).set('Range', 'bytes=900-999'), 416, {});
    // A following client gets the bytes.
    expect((await t.caller.http.get(`${D}/storage/${name}`).redirects(1).buffer(true)).body.toString()).toBe('{"layers": 32}\n');
    // Tampered, or for another name: 403; expired: 403.
    expectError(await t.http.get(path.replace(/signature=[^&]+/, 'signature=forged')), 403, { code: 'invalid_signature', param: 'signature' });
    expectError(await t.http.get(path.replace(`/storage/${name}/`, '/storage/other.json/')), 403, { code: 'invalid_signature' });
    t.clock.advance(3_600_000);
    expectError(await t.http.get(path), 403, { code: 'signature_expired', param: 'expires' });
  });

  test("an unknown name, or another project's file: 404 naming filename; a deleted file's URL: 404", async () => {
    expectError(await t.caller.http.get(`${D}/storage/nothing.bin`), 404, { param: 'filename' });
    // The literal segment wins: a file named `logs` is storage's, not the logs of a deployment named `storage`.
    expectError(await t.caller.http.get(`${D}/storage/logs`), 404, { param: 'filename' });
    await storeFile(t.services, { projectId: t.other.identity.projectId, filename: 'theirs.jsonl', purpose: 'eval', fileType: 'jsonl' }, '{}\n');
    expectError(await t.caller.http.get(`${D}/storage/theirs.jsonl/url`), 404, { param: 'filename' });
    const f = await storeFile(t.services, { projectId: t.caller.identity.projectId, filename: 'gone.jsonl', purpose: 'eval', fileType: 'jsonl' }, '{}\n');
    const url: string = (await t.caller.http.get(`${D}/storage/gone.jsonl/url`)).body.url;
    await t.caller.http.delete(`/v1/files/${f.id}`).expect(200);
    expectError(await t.http.get(url.slice(t.url.length)), 404, { param: 'file_id' });
    expectError(await t.http.get(`${D}/storage/gone.jsonl/content?file_id=${f.id}&expires=1`), 403, { code: 'invalid_signature' });
  });
});

describe('storage reads when the database fails', () => {
  test('an unexpected failure during a signed read: the generic 500; a database outage: 503 with Retry-After', async () => {
    await storeFile(t.services, { projectId: t.caller.identity.projectId, filename: 'outage.jsonl', purpose: 'eval', fileType: 'jsonl' }, '{}\n');
    const url: string = (await t.caller.http.get(`${D}/storage/outage.jsonl/url`)).body.url;
    const path = url.slice(t.url.length);
    await expectSignedReadFailures(t, path);
  });
});

describe('the official client (beta.jig)', () => {
  test('deploy, list, retrieve, update, retrieveLogs, destroy', async () => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const d = await client.beta.jig.deploy({ name: 'sdk-app', image: 'registry.example/sdk:1', gpu_type: 'h200-140gb', min_replicas: 1, max_replicas: 2 });
    expect(d).toMatchObject({ object: 'deployment', name: 'sdk-app', status: 'Updating' });
    expect((await client.beta.jig.list()).data!.map((x) => x.id)).toContain(d.id);
    await t.advance(ROLLOUT);
    expect((await client.beta.jig.retrieve(d.id!)).status).toBe('Ready');
    expect((await client.beta.jig.update(d.id!, { image: 'registry.example/sdk:2' })).status).toBe('Updating');
    const lines = (await client.beta.jig.retrieveLogs(d.id!, { revision: '2' })).lines!;
    expect(lines[0]).toMatch(/update accepted: revision 2, image registry.example\/sdk:2/);
    expect(await client.beta.jig.destroy(d.id!)).toEqual({});
    await expect(client.beta.jig.retrieve(d.id!)).rejects.toBeInstanceOf(Together.NotFoundError);
  });
});
