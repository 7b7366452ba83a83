// The work the runner does per item (issue 17: a backlog drained at ~25 items/s), counted rather than timed: the
// claim and a commit without writes of its own are single statements (no transaction), a built-in queue job is
// finished in one statement from the row its claim answered, and a file validation reads its file's row once.
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { storeFile } from '../server/modules/files/index.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const DATASET = `${JSON.stringify({
  messages: [
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'Hello.' },
  ],
})}\n`;

/** Counts the write transactions (`write`) and the single write statements (`writeStatement`) `fn` makes. */
async function counting(fn: () => Promise<unknown>): Promise<{ transactions: number; statements: number }> {
  const { db } = t.services;
  const transactions = vi.spyOn(db, 'write');
  const statements = vi.spyOn(db, 'writeStatement');
  try {
    await fn();
    return { transactions: transactions.mock.calls.length, statements: statements.mock.calls.length };
  } finally {
    transactions.mockRestore();
    statements.mockRestore();
  }
}

describe('per item', () => {
  test('a built-in queue job is claimed, run, finished and committed without a write transaction (one on SQLite: the job claim)', async () => {
    const res = await t.http
      .post('/v1/queue/submit')
      .set({ Authorization: `Bearer ${t.caller.key}` })
      .send({
        model: CHAT,
        payload: { messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8 },
      });
    expect(res.status).toBe(200);
    const counts = await counting(() => t.services.runner.drain());
    const job = await t.services.db.prisma.queueJob.findUniqueOrThrow({ where: { id: res.body.requestId } });
    expect(job.status).toBe('done');
    // A statement each: the runner's claims (the one that takes the item, and the one that finds nothing more), the
    // job's claim (on SQLite a serialized transaction with its timeout check), its completion, the runner's commit.
    const pg = t.services.db.provider === 'postgresql';
    expect(counts.statements).toBe(pg ? 5 : 4);
    expect(counts.transactions).toBe(pg ? 0 : 1);
  });

  test("a file validation reads its file's row once before the work, and once in the commit", async () => {
    const f = await storeFile(t.services, { projectId: t.caller.identity.projectId, purpose: 'fine-tune', filename: 'd.jsonl', fileType: 'jsonl' }, DATASET);
    const outside = {
      findUnique: vi.spyOn(t.services.db.prisma.file, 'findUnique'),
      findUniqueOrThrow: vi.spyOn(t.services.db.prisma.file, 'findUniqueOrThrow'),
    };
    try {
      await t.services.runner.drain();
      expect(outside.findUnique.mock.calls.length + outside.findUniqueOrThrow.mock.calls.length).toBe(1);
    } finally {
      outside.findUnique.mockRestore();
      outside.findUniqueOrThrow.mockRestore();
    }
    const after = await t.services.db.prisma.file.findUniqueOrThrow({ where: { id: f.id } });
    expect(after.status).toBe('COMPLETED');
    expect(JSON.parse(after.report!)).toMatchObject({ valid: true, nlines: 1 });
  });
});
