// Lists the contract does not page (secrets, files) are answered whole, however long (issue 17): so they are read
// in the order of an index (no sort of the whole list), select only what the wire shape shows (a secret's value,
// even encrypted, is never read for a listing), and keep their wire shape. Instants are formatted exactly as
// Date#toISOString would, by arithmetic rather than a Date per instant.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { iso } from '../server/core/clock.ts';
import { storeFile } from '../server/modules/files/index.ts';
import { fileWire } from '../server/modules/files/wire.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });

/**
 * The query plan of `sql`. On PostgreSQL with sequential scans and sorts discouraged: on a table of a few rows the
 * planner would rather scan and sort, but only a sort that no index can spare appears now.
 */
async function plan(sql: string, projectId: string): Promise<string> {
  const { db } = t.services;
  if (db.provider === 'postgresql') {
    return db.write(async (tx) => {
      await tx.$executeRawUnsafe('SET LOCAL enable_seqscan = off');
      await tx.$executeRawUnsafe('SET LOCAL enable_sort = off');
      const rows = await tx.$queryRawUnsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN ${sql.replace(/\?/g, '$1')}`, projectId);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
  }
  const rows = await db.prisma.$queryRawUnsafe<{ detail: string }[]>(`EXPLAIN QUERY PLAN ${sql}`, projectId);
  return rows.map((r) => r.detail).join('\n');
}

describe('long lists', () => {
  test('the secret list reads no value (not even encrypted), and its wire shape is unchanged', async () => {
    for (const [name, description] of [
      ['LIST_A', 'first'],
      ['LIST_B', undefined],
    ]) {
      const res = await t.http
        .post('/v1/deployments/secrets')
        .set(auth())
        .send({ name, value: `value of ${name}`, ...(description && { description }) });
      expect(res.status).toBe(200);
    }
    const findMany = vi.spyOn(t.services.db.prisma.secret, 'findMany');
    try {
      const res = await t.http.get('/v1/deployments/secrets').set(auth());
      expect(res.status).toBe(200);
      expect(res.body.data.map((s: { name: string }) => s.name)).toEqual(['LIST_A', 'LIST_B']);
      expect(Object.keys(res.body.data[0]).sort()).toEqual(
        ['object', 'id', 'name', 'description', 'created_at', 'updated_at', 'created_by', 'last_updated_by'].sort(),
      );
      expect(res.body.data[1]).not.toHaveProperty('description');
      expect(findMany).toHaveBeenCalledTimes(1);
      const args = findMany.mock.calls[0]![0] as { select?: Record<string, boolean> };
      // A select naming the columns read, the value not among them; and no row handed back carries it.
      expect(args.select).toBeDefined();
      expect(args.select).not.toHaveProperty('valueEncrypted');
      const rows = (await findMany.mock.results[0]!.value) as object[];
      for (const row of rows) expect(row).not.toHaveProperty('valueEncrypted');
    } finally {
      findMany.mockRestore();
    }
  });

  test("the secret list is read in the order of an index on the project's secrets", async () => {
    const p = await plan(`SELECT "id" FROM "Secret" WHERE "projectId" = ? ORDER BY "createdAt" ASC, "id" ASC`, t.caller.identity.projectId);
    expect(p).toMatch(/Secret_projectId_createdAt_id_idx/);
    expect(p).not.toMatch(/TEMP B-TREE|Sort/);
  });

  test("the file list is read in the order of an index on the project's files", async () => {
    const p = await plan(`SELECT "id" FROM "File" WHERE "projectId" = ? AND "status" <> 'UPLOADING' ORDER BY "id" DESC`, t.caller.identity.projectId);
    expect(p).toMatch(/File_projectId_id_idx/);
    expect(p).not.toMatch(/TEMP B-TREE|Sort/);
  });

  test('the file list answers each file as retrieving it does; a report is parsed once, not per listing', async () => {
    const dataset = `${JSON.stringify({
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello.' },
      ],
    })}\n`;
    const f = await storeFile(t.services, { projectId: t.caller.identity.projectId, purpose: 'fine-tune', filename: 'list.jsonl', fileType: 'jsonl' }, dataset);
    await t.services.runner.drain();
    const findMany = vi.spyOn(t.services.db.prisma.file, 'findMany');
    try {
      const list = await t.http.get('/v1/files').set(auth());
      expect(list.status).toBe(200);
      const one = await t.http.get(`/v1/files/${f.id}`).set(auth());
      expect(one.body).toMatchObject({ processing_status: 'COMPLETED', validation_report: { valid: true } });
      expect(list.body.data.find((x: { id: string }) => x.id === f.id)).toEqual(one.body);
      // The listing selects what the wire shape shows (not where the bytes are kept).
      const args = findMany.mock.calls[0]![0] as { select?: Record<string, boolean> };
      expect(args.select).toBeDefined();
      expect(args.select).not.toHaveProperty('path');
    } finally {
      findMany.mockRestore();
    }
    const row = await t.services.db.prisma.file.findUniqueOrThrow({ where: { id: f.id } });
    expect(fileWire(row).validation_report).toBe(fileWire({ ...row }).validation_report);
  });

  test('instants are formatted exactly as Date#toISOString formats them', () => {
    const cases = [0, 1, 999, 86_399_999, 86_400_000, 951_782_400_000, 1_709_164_799_999, 253_402_300_799_999];
    for (const ms of cases) expect(iso(ms)).toBe(new Date(ms).toISOString());
    fc.assert(fc.property(fc.integer({ min: -62_000_000_000_000, max: 8_000_000_000_000_000 }), (ms) => iso(BigInt(ms)) === new Date(ms).toISOString()));
  });
});
