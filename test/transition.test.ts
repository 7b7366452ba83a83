// The kit's one transition (server/runner/progress.ts), on a real database: a move is a compare-and-set on the
// state (and epoch, and any fence) that answers the moved row, with the machine's stamps and hooks in the same
// transaction; what the table or the row no longer allows is the one 409 (param null), naming the state the row is
// in now, and writes nothing. A test machine over the queue's table: its `retries` column stands in for an epoch.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { QueueJob } from '../generated/prisma/sqlite/client/client.ts';
import { newId } from '../server/core/ids.ts';
import { defineMachine } from '../server/core/machine.ts';
import { stored, transition, transitionIfStill } from '../server/runner/progress.ts';
import { TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await TestPlatform.start();
});
afterAll(() => t?.close());

const ping = defineMachine({
  name: 'ping',
  kind: 'test_ping',
  states: ['a', 'b', 'z'],
  events: ['go', 'back', 'end'],
  terminal: ['z'],
  transitions: { a: { go: 'b', end: 'z' }, b: { back: 'a' } },
});
const entered: string[] = [];
const pings = stored<QueueJob>()({
  machine: ping,
  table: (c) => c.queueJob,
  field: 'status',
  epoch: 'retries',
  stamp: (_row, move, now) => ({ updatedAt: now, ...(ping.isTerminal(move.to) ? { doneAt: now } : {}) }),
  onEnter: {
    b: async (_tx, row) => {
      entered.push(row.id);
      if (row.info.includes('explode')) throw new Error('the hook failed');
    },
  },
});

async function row(info = '{}'): Promise<QueueJob> {
  const now = BigInt(t.clock.now());
  return t.services.db.write((tx) =>
    tx.queueJob.create({
      data: {
        id: newId('req', t.clock.now()),
        projectId: t.caller.identity.projectId,
        model: 'm',
        status: 'a',
        inputs: '{}',
        info,
        createdAt: now,
        updatedAt: now,
      },
    }),
  );
}
const reread = (id: string) => t.services.db.prisma.queueJob.findUniqueOrThrow({ where: { id } });
const move = (r: QueueJob, event: (typeof ping.events)[number], options = {}) =>
  t.services.db.write((tx) => transition(tx, t.services, pings, r, event, options));

describe('transition', () => {
  test('writes the state, the data, the stamps and the epoch, runs the hook, and answers the moved row', async () => {
    const r = await row();
    t.clock.advance(1000);
    const moved = await move(r, 'go', { data: { priority: 7 } });
    expect(moved).toMatchObject({ status: 'b', priority: 7, retries: 1, updatedAt: BigInt(t.clock.now()), doneAt: null });
    expect(await reread(r.id)).toEqual(moved);
    expect(entered).toContain(r.id);
    const ended = await move(await move(moved, 'back'), 'end');
    expect(ended).toMatchObject({ status: 'z', retries: 3, doneAt: BigInt(t.clock.now()) });
  });

  test('a move the table does not allow is the one 409, param null, and writes nothing', async () => {
    const r = await row();
    await expect(move(r, 'back')).rejects.toMatchObject({ status: 409, code: 'invalid_state_transition', param: null, type: 'invalid_request_error' });
    expect(await reread(r.id)).toEqual(r);
  });

  test('a row that moved meanwhile is refused naming the state it is in now', async () => {
    const r = await row();
    await move(r, 'go');
    await expect(move(r, 'end')).rejects.toMatchObject({ status: 409, message: expect.stringMatching(/in state b cannot end/) });
    expect((await reread(r.id)).status).toBe('b');
  });

  test('the epoch fences a step made for an earlier visit of the same state', async () => {
    const r = await row();
    const back = await move(await move(r, 'go'), 'back'); // a again, one epoch on
    expect(back.status).toBe('a');
    // `r` is in state a too, but of an earlier visit: its move is refused and nothing changes.
    await expect(move(r, 'go')).rejects.toMatchObject({ status: 409 });
    expect(await reread(r.id)).toEqual(back);
  });

  test("a fence that no longer holds answers the caller's refusal; transitionIfStill answers null", async () => {
    const r = await row();
    const lost = new Error('the claim no longer holds');
    await expect(move(r, 'go', { where: { claimToken: 'not-this-one' }, refused: () => lost })).rejects.toBe(lost);
    expect(await t.services.db.write((tx) => transitionIfStill(tx, t.services, pings, r, 'go', { where: { claimToken: 'x' } }))).toBeNull();
    expect(await reread(r.id)).toEqual(r);
  });

  test("a hook that fails rolls the move back with the caller's transaction", async () => {
    const r = await row('{"explode": true}');
    await expect(move(r, 'go')).rejects.toThrow('the hook failed');
    expect(await reread(r.id)).toEqual(r);
  });
});
