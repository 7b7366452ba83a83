// Tag Volumes: the seeded volume, create/get/update/delete, versions, mounting by deployments, the official client.
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { attachVolumes, detachVolumes } from '../server/modules/volumes/rows.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const auth = (key = t.caller.key) => ({ Authorization: `Bearer ${key}` });
const VOLUMES = '/v1/deployments/storage/volumes';
const createVolume = (body: object, key?: string) => t.http.post(VOLUMES).set(auth(key)).send(body);
const content = (source_prefix: string) => ({ type: 'files', source_prefix });
const mount = (deploymentId: string, refs: string[], projectId = t.caller.identity.projectId) =>
  t.services.db.write((tx) => attachVolumes(tx, projectId, deploymentId, refs));

describe('volumes', () => {
  test('the seed has one volume with its files (GET /v1/deployments/storage/volumes)', async () => {
    const res = await t.http.get(VOLUMES).set(auth());
    expect(res.status).toBe(200);
    expect(res.body.object).toBe('list');
    const [v] = res.body.data;
    expect(v).toMatchObject({
      object: 'volume',
      name: 'model-weights',
      type: 'readOnly',
      current_version: 1,
      mounted_by: [],
      content: { type: 'files', source_prefix: 's3://default-project-artifacts/weights/' },
    });
    expect(v.content.files.map((f: any) => f.name)).toEqual(['config.json', 'model.safetensors']);
    expect(v.version_history).toEqual({
      '1': { version: 1, content: { type: 'files', source_prefix: 's3://default-project-artifacts/weights/' }, mounted_by: [] },
    });
  });

  test('create, then get by id and by name; names are unique per project', async () => {
    const res = await createVolume({ name: 'tokenizers', type: 'readOnly', content: content('s3://bucket/tok/') });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'volume', name: 'tokenizers', current_version: 1, content: { files: [] } });
    expect(res.body.id).toMatch(/^vol_/);
    expect((await t.http.get(`${VOLUMES}/${res.body.id}`).set(auth())).body).toEqual(res.body);
    expect((await t.http.get(`${VOLUMES}/tokenizers`).set(auth())).body.id).toBe(res.body.id);
    expectError(await createVolume({ name: 'tokenizers', type: 'readOnly', content: content('s3://x/') }), 409, { code: 'volume_name_taken', param: 'name' });
    // Another project may use the same name.
    expect((await createVolume({ name: 'tokenizers', type: 'readOnly', content: content('s3://x/') }, t.other.key)).status).toBe(200);
  });

  test('bad input is refused naming the field', async () => {
    expectError(await createVolume({ name: 'v', type: 'readWrite', content: content('s3://x/') }), 400, { param: 'type' });
    expectError(await createVolume({ name: 'v', type: 'readOnly', content: { type: 'dir', source_prefix: 'models/' } }), 400, { param: 'content.type' });
    expectError(await createVolume({ name: 'v', type: 'readOnly' }), 400, { param: 'content' });
    expectError(await createVolume({ name: '', type: 'readOnly', content: content('models/') }), 400, { param: 'name' });
    expectError(await createVolume({ name: 'n'.repeat(101), type: 'readOnly', content: content('models/') }), 400, { param: 'name' });
    expectError(await t.http.get(`${VOLUMES}/nope`).set(auth()), 404, { code: 'not_found', param: 'id' });
  });

  test("source_prefix: a path prefix in the project's files (the platform's meaning), an object-storage URL, or absent (the empty prefix)", async () => {
    const byPath = await createVolume({ name: 'from-files', type: 'readOnly', content: content('models/llama/') });
    expect(byPath.status, JSON.stringify(byPath.body)).toBe(200);
    expect(byPath.body.content).toEqual({ type: 'files', source_prefix: 'models/llama/', files: [] });
    expect((await createVolume({ name: 'from-bucket', type: 'readOnly', content: content('gs://bucket/w/') })).body.content.source_prefix).toBe(
      'gs://bucket/w/',
    );
    const bare = await createVolume({ name: 'everything', type: 'readOnly', content: {} });
    expect(bare.status, JSON.stringify(bare.body)).toBe(200);
    expect(bare.body.content).toEqual({ type: 'files', source_prefix: '', files: [] });
    expect(bare.body.version_history['1'].content).toEqual({ type: 'files', source_prefix: '' });
    // A content is replaced whole: the same (defaulted) content makes no version; a path prefix instead does.
    expect(
      (
        await t.http
          .patch(`${VOLUMES}/everything`)
          .set(auth())
          .send({ content: { type: 'files' } })
      ).body.current_version,
    ).toBe(1);
    const moved = await t.http
      .patch(`${VOLUMES}/everything`)
      .set(auth())
      .send({ content: { source_prefix: 'datasets/' } });
    expect(moved.body).toMatchObject({ current_version: 2, content: { type: 'files', source_prefix: 'datasets/' } });
    // Leaving source_prefix out of a new content is the empty prefix again: a change, so a version.
    expect((await t.http.patch(`${VOLUMES}/everything`).set(auth()).send({ content: {} })).body).toMatchObject({
      current_version: 3,
      content: { source_prefix: '' },
    });
  });

  test("names: any characters, 1 to 100 on create (the platform's only limits) and on a rename (an index holds them here); an empty rename changes nothing", async () => {
    const name = 'Weights (v2) / fp8 é';
    const v = await createVolume({ name, type: 'readOnly', content: content('models/') });
    expect(v.status, JSON.stringify(v.body)).toBe(200);
    expect((await t.http.get(`${VOLUMES}/${encodeURIComponent(name)}`).set(auth())).body.id).toBe(v.body.id);
    const same = await t.http.patch(`${VOLUMES}/${v.body.id}`).set(auth()).send({ name: '' });
    expect(same.status).toBe(200);
    expect(same.body).toMatchObject({ name, current_version: 1 });
    expectError(
      await t.http
        .patch(`${VOLUMES}/${v.body.id}`)
        .set(auth())
        .send({ name: 'l'.repeat(101) }),
      400,
      { code: 'maxLength', param: 'name' },
    );
    const long = 'l'.repeat(100);
    expect((await t.http.patch(`${VOLUMES}/${v.body.id}`).set(auth()).send({ name: long })).body.name).toBe(long);
    expect((await t.http.get(`${VOLUMES}/${long}`).set(auth())).body.id).toBe(v.body.id);
    // Path ids of any length are looked up; a version the volume never had (0, negative, huge) is a 404 naming it.
    expectError(await t.http.get(`${VOLUMES}/${'z'.repeat(300)}`).set(auth()), 404, { code: 'not_found', param: 'id' });
    for (const version of [0, -1, 2_000_000])
      expectError(await t.http.get(`${VOLUMES}/${v.body.id}?version=${version}`).set(auth()), 404, { param: 'version' });
  });

  test('a content change makes a new version; the same content or a rename does not; get ?version= reads history', async () => {
    const v = (await createVolume({ name: 'weights-v', type: 'readOnly', content: content('s3://b/w1/') })).body;
    const renamed = await t.http
      .patch(`${VOLUMES}/${v.id}`)
      .set(auth())
      .send({ name: 'weights-renamed', content: content('s3://b/w1/') });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'weights-renamed', current_version: 1 });
    const changed = await t.http
      .patch(`${VOLUMES}/weights-renamed`)
      .set(auth())
      .send({ content: content('s3://b/w2/') });
    expect(changed.body.current_version).toBe(2);
    expect(changed.body.content.source_prefix).toBe('s3://b/w2/');
    expect(Object.keys(changed.body.version_history)).toEqual(['1', '2']);
    expect(changed.body.version_history['1'].content.source_prefix).toBe('s3://b/w1/');
    const old = await t.http.get(`${VOLUMES}/${v.id}?version=1`).set(auth());
    expect(old.body).toMatchObject({ current_version: 2, content: { source_prefix: 's3://b/w1/' } });
    expectError(await t.http.get(`${VOLUMES}/${v.id}?version=3`).set(auth()), 404, { param: 'version' });
    expectError(await t.http.patch(`${VOLUMES}/${v.id}`).set(auth()).send({ name: 'model-weights' }), 409, { code: 'volume_name_taken', param: 'name' });
    expectError(await t.http.patch(`${VOLUMES}/nope`).set(auth()).send({ name: 'x' }), 404, { param: 'id' });
  });

  test('mounted_by names the deployments; a mounted volume cannot be deleted until detached', async () => {
    const v = (await createVolume({ name: 'mounted', type: 'readOnly', content: content('s3://b/m1/') })).body;
    expect(await mount('dep_a', [v.id])).toEqual([v.id]);
    await t.http
      .patch(`${VOLUMES}/${v.id}`)
      .set(auth())
      .send({ content: content('s3://b/m2/') });
    await mount('dep_b', ['mounted']);
    const got = (await t.http.get(`${VOLUMES}/${v.id}`).set(auth())).body;
    expect(got.mounted_by).toEqual(['dep_a', 'dep_b']);
    expect(got.version_history['1'].mounted_by).toEqual(['dep_a']);
    expect(got.version_history['2'].mounted_by).toEqual(['dep_b']);

    const refused = await t.http.delete(`${VOLUMES}/${v.id}`).set(auth());
    expectError(refused, 409, { code: 'volume_in_use' });
    expect(refused.body.error.message).toMatch(/dep_a, dep_b/);
    await t.services.db.write((tx) => detachVolumes(tx, 'dep_a'));
    await t.services.db.write((tx) => detachVolumes(tx, 'dep_b'));
    const deleted = await t.http.delete(`${VOLUMES}/${v.id}`).set(auth());
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({});
    expectError(await t.http.get(`${VOLUMES}/${v.id}`).set(auth()), 404, { param: 'id' });
    expectError(await t.http.delete(`${VOLUMES}/${v.id}`).set(auth()), 404, { param: 'id' });
  });

  test("attachVolumes refuses an unknown volume and another project's volume, writing nothing", async () => {
    const theirs = (await createVolume({ name: 'theirs', type: 'readOnly', content: content('s3://o/') }, t.other.key)).body;
    await expect(mount('dep_c', ['model-weights', 'nope'])).rejects.toMatchObject({ status: 404, param: 'volumes' });
    await expect(mount('dep_c', [theirs.id])).rejects.toMatchObject({ status: 404 });
    expect((await t.http.get(`${VOLUMES}/model-weights`).set(auth())).body.mounted_by).toEqual([]);
  });
});

describe('the official together-ai client (beta.jig.volumes)', () => {
  test("create with a path prefix in the files (the SDK's documented source), and without one", async () => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const created = await client.beta.jig.volumes.create({ name: 'sdk-files', type: 'readOnly', content: { type: 'files', source_prefix: 'models/' } });
    expect(created.content).toEqual({ type: 'files', source_prefix: 'models/', files: [] });
    const bare = await client.beta.jig.volumes.create({ name: 'sdk-bare', type: 'readOnly', content: {} });
    expect(bare.content!.source_prefix).toBe('');
    const renamed = await client.beta.jig.volumes.update(created.id!, { name: 'sdk-files-2', type: 'readOnly' });
    expect(renamed).toMatchObject({ name: 'sdk-files-2', current_version: 1 });
  });

  test('list, create, retrieve with version, update, delete', async () => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const created = await client.beta.jig.volumes.create({ name: 'sdk-volume', type: 'readOnly', content: { type: 'files', source_prefix: 's3://sdk/1/' } });
    expect(created.current_version).toBe(1);
    const list = await client.beta.jig.volumes.list();
    expect(list.data!.map((v) => v.name)).toContain('sdk-volume');
    const updated = await client.beta.jig.volumes.update(created.id!, { content: { type: 'files', source_prefix: 's3://sdk/2/' } });
    expect(updated.current_version).toBe(2);
    const v1 = await client.beta.jig.volumes.retrieve(created.id!, { version: 1 });
    expect(v1.content!.source_prefix).toBe('s3://sdk/1/');
    expect(await client.beta.jig.volumes.delete(created.id!)).toEqual({});
    await expect(client.beta.jig.volumes.retrieve(created.id!)).rejects.toMatchObject({ status: 404 });
  });
});
