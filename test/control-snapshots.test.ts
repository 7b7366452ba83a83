// Named snapshots (spec/tags/control.yaml), used as a suite would: seed once, snapshot, restore before each case.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import Together from 'together-ai';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { expectError } from './support/expect.ts';
import { uploadFile } from './support/files.ts';
import { type Caller, startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let control: PlatformClient;
let seeded: { file: string; secret: string; owner: Caller; rows: number };
const files = (c: Caller) => c.http.get('/v1/files').then((r) => r.body.data.map((f: { id: string }) => f.id).sort());

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
  // The seed: a project with a key, a file with its bytes, a secret.
  const owner = await t.newCaller();
  const file = await uploadFile(owner, 'fine-tune', [{ text: 'seeded' }]);
  const secret = (await owner.http.post('/v1/deployments/secrets').send({ name: 'seeded-secret', value: 'v' })).body.id;
  const { data } = await control.POST('/_control/snapshots', { body: { name: 'seeded' } });
  expect(data).toMatchObject({ object: 'snapshot', name: 'seeded', files: 1 });
  seeded = { file, secret, owner, rows: data!.rows };
});
afterAll(() => t?.close());

describe('restore between cases', () => {
  beforeEach(async () => {
    const { data, error } = await control.POST('/_control/snapshots/{name}/restore', { params: { path: { name: 'seeded' } } });
    expect(error).toBeUndefined();
    expect(data).toMatchObject({ object: 'snapshot.restore', name: 'seeded', rows: seeded.rows, files: 1 });
  });

  test('a case that changes everything: deletes the seeded file, adds its own, a project and its key', async () => {
    const { owner } = seeded;
    expect((await owner.http.delete(`/v1/files/${seeded.file}`)).status).toBe(200);
    await uploadFile(owner, 'fine-tune', [{ text: 'mine' }]);
    const newcomer = await t.newCaller();
    // Used once, so this process's key cache holds it.
    expect((await newcomer.http.get('/v1/whoami')).status).toBe(200);
    expect((await owner.http.delete(`/v1/deployments/secrets/${seeded.secret}`)).status).toBe(200);
    const { data } = await control.POST('/_control/snapshots/{name}/restore', { params: { path: { name: 'seeded' } } });
    expect(data!.ms).toBeGreaterThanOrEqual(0);
    // What the case made is gone, the key at once.
    expectError(await newcomer.http.get('/v1/whoami'), 401, { code: 'invalid_api_key' });
    expect(await files(owner)).toEqual([seeded.file]);
  });

  test('the next case sees the seed exactly: same ids, the same key (official client), the bytes on disk', async () => {
    const { owner } = seeded;
    const client = new Together({ apiKey: owner.key, baseURL: `${t.url}/v1` });
    expect((await client.files.list()).data.map((f) => f.id)).toEqual([seeded.file]);
    const content = await owner.http.get(`/v1/files/${seeded.file}/content`).buffer(true);
    expect(content.status).toBe(200);
    expect(content.text || JSON.stringify(content.body)).toContain('seeded');
    expect((await owner.http.get(`/v1/deployments/secrets/${seeded.secret}`)).body).toMatchObject({ id: seeded.secret, name: 'seeded-secret' });
    expect(readdirSync(join(t.config.dataDir, 'files', owner.identity.projectId))).toHaveLength(1);
  });

  test('a platform reset, then a restore: the seed is back', async () => {
    expect((await seeded.owner.http.get('/v1/whoami')).status).toBe(200);
    await control.POST('/_control/reset', {});
    // The key was cached by the request above: the reset takes it away at once all the same.
    expectError(await seeded.owner.http.get('/v1/whoami'), 401, { code: 'invalid_api_key' });
    expect(await files(t.caller)).toEqual([]);
    await control.POST('/_control/snapshots/{name}/restore', { params: { path: { name: 'seeded' } } });
    expect((await seeded.owner.http.get('/v1/whoami')).status).toBe(200);
    expect(await files(seeded.owner)).toEqual([seeded.file]);
    expect(existsSync(join(t.config.dataDir, 'files', seeded.owner.identity.projectId))).toBe(true);
  });

  test('a restore that fails changes nothing (one transaction)', async () => {
    const mine = await uploadFile(seeded.owner, 'fine-tune', [{ text: 'kept' }]);
    // A snapshot whose rows cannot all go back: two keys with one id.
    const db = t.services.db;
    const row = await db.prisma.controlSnapshot.findUniqueOrThrow({ where: { name: 'seeded' } });
    const rows = JSON.parse(row.rows);
    rows.tables.ApiKey.push(rows.tables.ApiKey[0]);
    await db.write((tx) => tx.controlSnapshot.create({ data: { ...row, name: 'broken', rows: JSON.stringify(rows) } }));
    const res = await t.http.post('/_control/snapshots/broken/restore').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`);
    expectError(res, 500, { code: 'internal_error' });
    expect(await files(seeded.owner)).toEqual([seeded.file, mine].sort());
    expect((await t.caller.http.get('/v1/whoami')).status).toBe(200);
    expect((await seeded.owner.http.get(`/v1/files/${mine}/content`)).status).toBe(200);
    await control.DELETE('/_control/snapshots/{name}', { params: { path: { name: 'broken' } } });
  });
});

describe('the snapshots themselves', () => {
  test('are listed, replaced by name, deleted; an unknown name is 404 naming name', async () => {
    t.clock.advance(1000);
    await control.POST('/_control/snapshots', { body: { name: 'other' } });
    const again = await control.POST('/_control/snapshots', { body: { name: 'other' } });
    expect(again.data!.name).toBe('other');
    expect((await control.GET('/_control/snapshots')).data!.data.map((s) => s.name)).toEqual(['seeded', 'other']);
    expect((await control.DELETE('/_control/snapshots/{name}', { params: { path: { name: 'other' } } })).data).toEqual({
      object: 'snapshot',
      name: 'other',
      deleted: true,
    });
    const auth = { Authorization: `Bearer ${TEST_CONTROL_KEY}` };
    expectError(await t.http.post('/_control/snapshots/other/restore').set(auth), 404, { code: 'not_found', param: 'name' });
    expectError(await t.http.delete('/_control/snapshots/other').set(auth), 404, { param: 'name' });
    expectError(await t.http.post('/_control/snapshots').set(auth).send({ name: '../up' }), 400, { param: 'name' });
    expect((await control.GET('/_control/snapshots')).data!.data.map((s) => s.name)).toEqual(['seeded']);
  });
});
