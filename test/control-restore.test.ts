// A snapshot restore (control/snapshots.ts) puts back every row exactly as it was read: each column type the tables
// use (strings, integers, BigInt instants, floats, booleans, nulls) round-trips through its multi-row INSERTs, and
// tables emptied since the snapshot are filled again while tables filled since are emptied.
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Prisma } from '../generated/prisma/sqlite/client/client.ts';
import { uploadFile } from './support/files.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
let t: TestPlatform;
let control: PlatformClient;

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
});
afterAll(() => t?.close());

// The control plane's own tables are not platform state (a snapshot neither keeps nor restores them).
const CONTROL = ['ControlSnapshot', 'ControlRule', 'ControlJournalEntry', 'ControlSetting', 'ControlProcess'];

/** Every row of every platform table, each table's rows in id order. */
async function everything() {
  const tx = t.services.db.prisma as unknown as Record<string, { findMany(): Promise<Record<string, unknown>[]> }>;
  const out: Record<string, Record<string, unknown>[]> = {};
  for (const model of Object.values(Prisma.ModelName).filter((m) => !CONTROL.includes(m))) {
    const rows = await tx[model[0]!.toLowerCase() + model.slice(1)]!.findMany();
    out[model] = rows.sort((a, b) => JSON.stringify(a, big).localeCompare(JSON.stringify(b, big)));
  }
  return out;
}
const big = (_k: string, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v);

test('every row comes back as it was, column for column; rows made since are gone', async () => {
  const owner = await t.newCaller();
  const file = await uploadFile(
    owner,
    'fine-tune',
    Array.from({ length: 12 }, (_, i) => ({ prompt: `Q${i}?`, completion: ` A${i}` })),
  );
  await owner.http.post('/v1/fine-tunes').send({ model: BASE, training_file: file }).expect(200);
  await owner.http.post('/v1/deployments/secrets').send({ name: 'S', value: 'v' }).expect(200);
  await t.advance(1);
  const before = await everything();
  expect((await control.POST('/_control/snapshots', { body: { name: 'all' } })).data).toMatchObject({ name: 'all' });
  // Changes since: a table emptied (the secrets), rows added (another file), a project reset.
  await t.services.db.write((tx) => tx.secret.deleteMany());
  await uploadFile(owner, 'fine-tune', [{ text: 'later' }]);
  const { data, error } = await control.POST('/_control/snapshots/{name}/restore', { params: { path: { name: 'all' } } });
  expect(error).toBeUndefined();
  expect(data!.rows).toBe(Object.values(before).reduce((n, rows) => n + rows.length, 0) - before.ServerKey!.length);
  expect(await everything()).toEqual(before);
  expect((await owner.http.get('/v1/files')).body.data.map((f: { id: string }) => f.id)).toEqual([file]);
});
