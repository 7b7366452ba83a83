// The durable runner in-process, on SQLite and (TEST_DATABASE_URL) PostgreSQL, with a manual clock: scheduling,
// multi-step items, retries with backoff and giving up, fencing by attempt number, heartbeats, kinds without a
// handler, and enqueue's transactional behaviour. Every test uses its own kinds, so they share one database.

import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../server/core/clock.ts';
import type { RunnerConfig } from '../server/core/config.ts';
import { createLogger } from '../server/core/log.ts';
import { defineMachine } from '../server/core/machine.ts';
import { type Database, openDatabase, type Tx } from '../server/db/index.ts';
import { enter, type Progression, progressionWork, stored } from '../server/runner/progress.ts';
import { type ClaimedItem, enqueue, Fenced, Runner } from '../server/runner/runner.ts';
import { type ScratchDatabase, scratchDatabase } from './support/database.ts';

let scratch: ScratchDatabase;
let db: Database;
const logs: string[] = [];
const log = createLogger(
  'warn',
  new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  }),
);

beforeAll(async () => {
  scratch = await scratchDatabase();
  db = await openDatabase(scratch.url);
});
afterAll(async () => {
  await db?.close();
  await scratch?.drop();
});

// A long lease by default: its heartbeat (every lease/3 of real time) never fires during a test unless one asks.
const LEASE_MS = 60_000;
function newRunner(clock: ManualClock, config: Partial<RunnerConfig> = {}, database = db): Runner {
  return new Runner(database, clock, { enabled: false, pollMs: 10, leaseMs: LEASE_MS, batch: 8, maxFailures: 3, ...config }, log);
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const row = (id: string) => db.prisma.workItem.findUniqueOrThrow({ where: { id } });
const add = (clock: ManualClock, kind: string, extra: { delayMs?: number; payload?: unknown } = {}) =>
  db.write((tx) => enqueue(tx, clock, { kind, subjectId: `subject-${kind}`, ...extra }));
// A write a handler's `apply` (or `giveUp`) makes, to tell whether it was committed: an item of a kind nobody runs.
const mark = (tx: Tx, clock: ManualClock, name: string) => enqueue(tx, clock, { kind: 'marker', subjectId: name }).then(() => {});
const marks = (name: string) => db.prisma.workItem.count({ where: { kind: 'marker', subjectId: name } });

describe('scheduling', () => {
  test('a scheduled item does not run before its time and runs once the clock reaches it', async () => {
    const clock = new ManualClock();
    const ranAt: number[] = [];
    const runner = newRunner(clock).register('scheduled', {
      run: async () => {
        ranAt.push(clock.now());
        return {};
      },
    });
    const start = clock.now();
    const id = await add(clock, 'scheduled', { delayMs: 5000 });

    expect(await runner.drain()).toBe(0);
    clock.advance(4999);
    expect(await runner.drain()).toBe(0);
    expect(await row(id)).toMatchObject({ state: 'queued', attempt: 0 });

    clock.advance(1);
    expect(await runner.drain()).toBe(1);
    expect(ranAt).toEqual([start + 5000]);
    expect(await row(id)).toMatchObject({ state: 'done', attempt: 1, leaseOwner: null, leaseUntil: null });
    clock.advance(60_000);
    expect(await runner.drain()).toBe(0);
  });

  test('a multi-step item walks its steps, each at its own time, carrying its payload', async () => {
    const clock = new ManualClock();
    const seen: Array<{ step: number; at: number; attempt: number }> = [];
    const start = clock.now();
    const runner = newRunner(clock).register('steps', {
      run: async (item) => {
        const step: number = item.payload.step;
        seen.push({ step, at: clock.now() - start, attempt: item.attempt });
        const apply = (tx: Tx) => mark(tx, clock, `steps-${item.id}-${step}`);
        return step < 2 ? { apply, againInMs: 1000 * (step + 1), payload: { step: step + 1 } } : { apply };
      },
    });
    const id = await add(clock, 'steps', { payload: { step: 0 } });

    await runner.drain();
    expect(seen.map((s) => s.step)).toEqual([0]);
    expect(await row(id)).toMatchObject({ state: 'queued', payload: JSON.stringify({ step: 1 }), runAt: BigInt(start + 1000) });
    expect(await marks(`steps-${id}-0`)).toBe(1);

    clock.advance(999);
    expect(await runner.drain()).toBe(0);
    clock.advance(1);
    expect(await runner.drain()).toBe(1);
    clock.advance(1999);
    expect(await runner.drain()).toBe(0);
    clock.advance(1);
    expect(await runner.drain()).toBe(1);

    expect(seen).toEqual([
      { step: 0, at: 0, attempt: 1 },
      { step: 1, at: 1000, attempt: 2 },
      { step: 2, at: 3000, attempt: 3 },
    ]);
    expect(await row(id)).toMatchObject({ state: 'done', attempt: 3, failures: 0 });
    for (const step of [0, 1, 2]) expect(await marks(`steps-${id}-${step}`)).toBe(1);
  });

  test('an item made due "now" by a step runs in the same drain', async () => {
    const clock = new ManualClock();
    let runs = 0;
    const runner = newRunner(clock).register('chain', { run: async () => (++runs < 3 ? { againInMs: 0 } : {}) });
    const id = await add(clock, 'chain');
    expect(await runner.drain()).toBe(3);
    expect(await row(id)).toMatchObject({ state: 'done', attempt: 3 });
  });
});

describe('failures', () => {
  test('a failing handler is retried with exponential backoff, then given up after maxFailures, giveUp in the same transaction', async () => {
    const clock = new ManualClock();
    let calls = 0;
    const gaveUp: Array<{ error: string; failures: number }> = [];
    const runner = newRunner(clock, { maxFailures: 3 }).register('flaky', {
      run: async () => {
        throw new Error(`boom ${++calls}`);
      },
      giveUp: async (item, error, tx) => {
        gaveUp.push({ error, failures: item.failures });
        // Inside the runner's transaction: the item is already marked failed there.
        expect(await tx.workItem.findUniqueOrThrow({ where: { id: item.id } })).toMatchObject({ state: 'failed', failures: 3 });
        await mark(tx, clock, `gave-up-${item.id}`);
      },
    });
    const start = clock.now();
    const id = await add(clock, 'flaky');

    await runner.drain();
    expect(calls).toBe(1);
    expect(await row(id)).toMatchObject({ state: 'queued', failures: 1, lastError: 'boom 1', runAt: BigInt(start + 1000), leaseOwner: null });

    clock.advance(999);
    expect(await runner.drain()).toBe(0);
    clock.advance(1);
    await runner.drain();
    expect(calls).toBe(2);
    expect(await row(id)).toMatchObject({ state: 'queued', failures: 2, lastError: 'boom 2', runAt: BigInt(start + 1000 + 2000) });

    clock.advance(1999);
    expect(await runner.drain()).toBe(0);
    expect(gaveUp).toEqual([]);
    clock.advance(1);
    await runner.drain();
    expect(calls).toBe(3);
    expect(await row(id)).toMatchObject({ state: 'failed', failures: 3, lastError: 'boom 3', attempt: 3 });
    expect(gaveUp).toEqual([{ error: 'boom 3', failures: 2 }]);
    expect(await marks(`gave-up-${id}`)).toBe(1);

    clock.advance(3_600_000);
    expect(await runner.drain()).toBe(0);
    expect(calls).toBe(3);
  });

  test('when giveUp throws, the item is not marked failed either (one transaction); it is given up on a later attempt', async () => {
    const clock = new ManualClock();
    let giveUps = 0;
    const runner = newRunner(clock, { maxFailures: 1 }).register('give-up-fails', {
      run: async () => {
        throw new Error('always');
      },
      giveUp: async (item, _error, tx) => {
        await mark(tx, clock, `give-up-fails-${item.id}`);
        if (++giveUps === 1) throw new Error('giveUp broke');
      },
    });
    const id = await add(clock, 'give-up-fails');
    await runner.drain();
    expect(giveUps).toBe(1);
    // Nothing of that transaction stayed: not failed, no marker; the item waits for its lease to run out.
    expect(await row(id)).toMatchObject({ state: 'running', failures: 0, attempt: 1 });
    expect(await marks(`give-up-fails-${id}`)).toBe(0);

    clock.advance(LEASE_MS + 1);
    await runner.drain();
    expect(giveUps).toBe(2);
    expect(await row(id)).toMatchObject({ state: 'failed', failures: 1, attempt: 2 });
    expect(await marks(`give-up-fails-${id}`)).toBe(1);
  });

  test('an apply that throws is a failure: none of its writes stay, and the item is retried', async () => {
    const clock = new ManualClock();
    let calls = 0;
    const runner = newRunner(clock).register('apply-throws', {
      run: async (item) => ({
        apply: async (tx) => {
          await mark(tx, clock, `apply-throws-${item.id}-${item.attempt}`);
          if (++calls === 1) throw new Error('apply broke');
        },
      }),
    });
    const id = await add(clock, 'apply-throws');
    await runner.drain();
    expect(await row(id)).toMatchObject({ state: 'queued', failures: 1, lastError: 'apply broke' });
    expect(await marks(`apply-throws-${id}-1`)).toBe(0);

    clock.advance(1000);
    await runner.drain();
    // A success resets the failure count.
    expect(await row(id)).toMatchObject({ state: 'done', failures: 0, attempt: 2 });
    expect(await marks(`apply-throws-${id}-2`)).toBe(1);
  });
});

describe('fencing', () => {
  test('a worker whose lease ran out cannot commit: the newer attempt wins and the stale writes roll back', async () => {
    const clock = new ManualClock();
    const handler = { run: async () => ({}) };
    const a = newRunner(clock).register('fenced', handler);
    const b = newRunner(clock).register('fenced', handler);
    expect(a.owner).not.toBe(b.owner);
    const id = await add(clock, 'fenced');

    const [itemA] = await a.claim(8);
    expect(itemA).toMatchObject({ id, attempt: 1 });
    expect(await row(id)).toMatchObject({ state: 'running', leaseOwner: a.owner, leaseUntil: BigInt(clock.now() + LEASE_MS) });
    // Within A's lease nobody else gets it.
    clock.advance(LEASE_MS);
    expect(await b.claim(8)).toEqual([]);

    // A never heartbeats; once the lease has run out B takes the item over with the next attempt.
    clock.advance(1);
    const [itemB] = await b.claim(8);
    expect(itemB).toMatchObject({ id, attempt: 2 });
    expect(await row(id)).toMatchObject({ state: 'running', attempt: 2, leaseOwner: b.owner });

    // A comes back before B commits: refused, and what A's apply would have written is not there.
    await expect(a.commit(itemA, { apply: (tx) => mark(tx, clock, `fenced-A-${id}`) })).rejects.toBeInstanceOf(Fenced);
    expect(await marks(`fenced-A-${id}`)).toBe(0);
    expect(await row(id)).toMatchObject({ state: 'running', attempt: 2, leaseOwner: b.owner });

    await b.commit(itemB, { apply: (tx) => mark(tx, clock, `fenced-B-${id}`) });
    expect(await row(id)).toMatchObject({ state: 'done', attempt: 2, leaseOwner: null });
    expect(await marks(`fenced-B-${id}`)).toBe(1);

    // ...and after B has committed, still refused: A cannot complete (or re-queue) the item.
    await expect(a.commit(itemA, { apply: (tx) => mark(tx, clock, `fenced-A-${id}`), againInMs: 0 })).rejects.toBeInstanceOf(Fenced);
    expect(await marks(`fenced-A-${id}`)).toBe(0);
    expect(await row(id)).toMatchObject({ state: 'done', attempt: 2 });
  });

  test('through process(): a slow worker taken over finishes late, and its outcome (success or failure) is discarded', async () => {
    const clock = new ManualClock();
    const gates = { a: deferred(), b: deferred() };
    let outcome: 'succeed' | 'throw' = 'succeed';
    const a = newRunner(clock).register('fenced-slow', {
      run: async (item) => {
        await gates.a.promise;
        if (outcome === 'throw') throw new Error('late failure');
        return { apply: (tx) => mark(tx, clock, `slow-A-${item.id}`) };
      },
    });
    const b = newRunner(clock).register('fenced-slow', {
      run: async (item) => {
        await gates.b.promise;
        return { apply: (tx) => mark(tx, clock, `slow-B-${item.id}`) };
      },
    });

    for (const o of ['succeed', 'throw'] as const) {
      outcome = o;
      Object.assign(gates, { a: deferred(), b: deferred() });
      const id = await add(clock, 'fenced-slow');
      const [itemA] = await a.claim(1);
      const runningA = a.process(itemA);
      clock.advance(LEASE_MS + 1);
      const [itemB] = await b.claim(1);
      expect(itemB).toMatchObject({ id, attempt: 2 });
      const runningB = b.process(itemB);

      // A finishes first, while B is still at work on the newer attempt: A's outcome is refused.
      const warnings = logs.length;
      gates.a.resolve();
      await runningA;
      expect(await marks(`slow-A-${id}`)).toBe(0);
      expect(await row(id)).toMatchObject({ state: 'running', attempt: 2, leaseOwner: b.owner, failures: 0, lastError: null });
      expect(logs.slice(warnings).join('')).toContain(o === 'succeed' ? 'lost its lease' : 'work item failure not recorded');

      gates.b.resolve();
      await runningB;
      expect(await marks(`slow-B-${id}`)).toBe(1);
      // Completed once, by B, and A's late failure was not counted against it.
      expect(await row(id)).toMatchObject({ state: 'done', attempt: 2, failures: 0, lastError: null });
    }
  });

  test('heartbeats extend the lease, so a slow handler is not taken over', async () => {
    const clock = new ManualClock();
    const leaseMs = 300; // heartbeat every 100 ms of real time
    const gate = deferred();
    const a = newRunner(clock, { leaseMs }).register('heartbeat', {
      run: async () => {
        await gate.promise;
        return {};
      },
    });
    const b = newRunner(clock, { leaseMs }).register('heartbeat', { run: async () => ({}) });
    const id = await add(clock, 'heartbeat');
    const [itemA] = await a.claim(1);
    const running = a.process(itemA);

    // Four times the lease passes on the clock; after each step a heartbeat has had time to run.
    for (let i = 0; i < 6; i++) {
      clock.advance(200);
      await sleep(250);
      expect(await b.claim(8)).toEqual([]);
      const r = await row(id);
      expect(r).toMatchObject({ state: 'running', attempt: 1, leaseOwner: a.owner });
      expect(Number(r.leaseUntil)).toBeGreaterThan(clock.now());
    }
    gate.resolve();
    await running;
    expect(await row(id)).toMatchObject({ state: 'done', attempt: 1, leaseOwner: null });
  });

  test('two runners claiming at the same time never get the same item', async () => {
    const clock = new ManualClock();
    // On PostgreSQL a second connection pool, like a second process. On SQLite one process has one Database: a second
    // writer connection in the same process would block the event loop in SQLite's busy wait (better-sqlite3 is
    // synchronous) while the first waits for that loop to commit; other processes are covered in persistence.test.ts.
    const other = db.provider === 'postgresql' ? await openDatabase(scratch.url, { migrate: false }) : db;
    try {
      const runners = [newRunner(clock), newRunner(clock, {}, other)].map((r) => r.register('race', { run: async () => ({}) }));
      const ids = await db.write(async (tx) => {
        const out: string[] = [];
        for (let i = 0; i < 300; i++) out.push(await enqueue(tx, clock, { kind: 'race', subjectId: `race-${i}` }));
        return out;
      });
      const claimed: ClaimedItem[][] = [[], []];
      // Four concurrent claim loops per runner, each taking small batches until nothing is left.
      await Promise.all(
        runners.flatMap((runner, r) =>
          [0, 1, 2, 3].map(async () => {
            for (;;) {
              const got = await runner.claim(5);
              if (got.length === 0) return;
              claimed[r].push(...got);
            }
          }),
        ),
      );
      const all = claimed.flat().map((c) => c.id);
      expect(new Set(all).size).toBe(all.length);
      expect(all.sort()).toEqual([...ids].sort());
      expect(claimed.flat().every((c) => c.attempt === 1)).toBe(true);
      expect(await db.prisma.workItem.count({ where: { kind: 'race', state: 'running', attempt: 1 } })).toBe(300);
    } finally {
      if (other !== db) await other.close();
    }
  });
});

describe('what a runner claims', () => {
  test('items of kinds a runner has no handler for are not claimed', async () => {
    const clock = new ManualClock();
    const known = await add(clock, 'known-kind');
    const unknown = await add(clock, 'unknown-kind');
    expect(await newRunner(clock).claim(8)).toEqual([]); // no handlers at all
    const runner = newRunner(clock).register('known-kind', { run: async () => ({}) });
    expect(await runner.drain()).toBe(1);
    expect(await row(known)).toMatchObject({ state: 'done' });
    clock.advance(LEASE_MS * 10);
    expect(await runner.drain()).toBe(0);
    expect(await row(unknown)).toMatchObject({ state: 'queued', attempt: 0, leaseOwner: null });
  });

  test('enqueue inside a transaction that rolls back leaves no item; one that commits leaves exactly one', async () => {
    const clock = new ManualClock();
    await expect(
      db.write(async (tx) => {
        await enqueue(tx, clock, { kind: 'rolled-back', subjectId: 'rb' });
        await tx.organization.create({ data: { id: `org_rb_${clock.now()}`, name: 'rolled back', createdAt: BigInt(clock.now()) } });
        throw new Error('the resource could not be created');
      }),
    ).rejects.toThrow('the resource could not be created');
    expect(await db.prisma.workItem.count({ where: { kind: 'rolled-back' } })).toBe(0);
    expect(await db.prisma.organization.count({ where: { name: 'rolled back' } })).toBe(0);

    await db.write((tx) => enqueue(tx, clock, { kind: 'rolled-back', subjectId: 'rb', projectId: 'proj_x', payload: { a: 1 } }));
    const items = await db.prisma.workItem.findMany({ where: { kind: 'rolled-back' } });
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ subjectId: 'rb', projectId: 'proj_x', payload: '{"a":1}', state: 'queued', attempt: 0, runAt: BigInt(clock.now()) });
  });
});

describe('polling', () => {
  test('start() works through due items on its own; stop() waits for the items in hand and claims no more', async () => {
    const clock = new ManualClock();
    const done: string[] = [];
    const runner = newRunner(clock, { enabled: true, pollMs: 5, batch: 4 }).register('polled', {
      run: async (item) => {
        await sleep(20);
        return { apply: async () => void done.push(item.id) };
      },
    });
    const ids = await Promise.all(Array.from({ length: 10 }, () => add(clock, 'polled')));
    runner.start();
    const deadline = Date.now() + 10_000;
    while (done.length < 10 && Date.now() < deadline) await sleep(10);
    expect(done.sort()).toEqual([...ids].sort());

    // Stopped while items are in hand: stop() resolves only once they are committed.
    const slow = await Promise.all(Array.from({ length: 12 }, () => add(clock, 'polled')));
    while ((await db.prisma.workItem.count({ where: { id: { in: slow }, state: 'running' } })) === 0) await sleep(2);
    await runner.stop();
    const states = await db.prisma.workItem.findMany({ where: { id: { in: slow } } });
    expect(states.filter((r) => r.state === 'running')).toEqual([]);
    const finished = states.filter((r) => r.state === 'done').map((r) => r.id);
    expect(finished.length).toBeGreaterThan(0);
    expect(finished.every((id) => done.includes(id))).toBe(true);
    const left = states.filter((r) => r.state === 'queued').length;
    expect(left).toBeGreaterThan(0);
    clock.advance(1000);
    await sleep(50);
    expect(await db.prisma.workItem.count({ where: { id: { in: slow }, state: 'queued' } })).toBe(left);
  });

  test('a backlog is drained as items finish, not `batch` items per poll period; once it is gone, the runner waits its period', async () => {
    const clock = new ManualClock();
    let claims = 0;
    const done: string[] = [];
    // A poll period far longer than the test: only a runner that refills freed places at once drains the backlog.
    const runner = new (class extends Runner {
      override claim(limit: number) {
        claims++;
        return super.claim(limit);
      }
    })(db, clock, { enabled: true, pollMs: 600_000, leaseMs: LEASE_MS, batch: 3, maxFailures: 3 }, log).register('backlog', {
      run: async (item) => {
        await sleep(5);
        return { apply: async () => void done.push(item.id) };
      },
    });
    const ids = await Promise.all(Array.from({ length: 20 }, () => add(clock, 'backlog')));
    runner.start();
    try {
      while (done.length < 20) await sleep(10);
      expect(done.sort()).toEqual([...ids].sort());
      // No claim loop once nothing is due: the claims made stay as they are until the next period.
      await sleep(100);
      const after = claims;
      await sleep(300);
      expect(claims).toBe(after);
    } finally {
      await runner.stop();
    }
  });

  test('a step without writes of its own is committed fenced too', async () => {
    const clock = new ManualClock();
    const a = newRunner(clock).register('fenced-plain', { run: async () => ({}) });
    const b = newRunner(clock).register('fenced-plain', { run: async () => ({}) });
    const id = await add(clock, 'fenced-plain');
    const [itemA] = await a.claim(8);
    clock.advance(LEASE_MS + 1);
    const [itemB] = await b.claim(8);
    await expect(a.commit(itemA!, {})).rejects.toBeInstanceOf(Fenced);
    expect(await row(id)).toMatchObject({ state: 'running', attempt: 2, leaseOwner: b.owner });
    await b.commit(itemB!, {});
    expect(await row(id)).toMatchObject({ state: 'done', attempt: 2, leaseOwner: null });
    await expect(a.commit(itemA!, { againInMs: 0 })).rejects.toBeInstanceOf(Fenced);
    expect(await row(id)).toMatchObject({ state: 'done', attempt: 2 });
  });
});

describe("progressions: a declared machine's timed steps", () => {
  // A subject kept in memory: the runner's side (scheduling, claiming, fencing) is what is under test here.
  const machine = defineMachine({
    name: 'render',
    kind: 'test_render',
    states: ['queued', 'rendering', 'done', 'gone'],
    events: ['start', 'finish'],
    terminal: ['done', 'gone'],
    transitions: { queued: { start: 'rendering' }, rendering: { finish: 'done' } },
    timed: { queued: { duration: 'test_queue', defaultMs: 1_000 }, rendering: { duration: 'test_render', defaultMs: 5_000 } },
  });
  const subjects = new Map<string, string>();
  const timing = (clock: ManualClock) => ({ clock, config: { durations: {} }, db });
  function progression(clock: ManualClock, work: (id: string) => Promise<string>): Progression<'queued' | 'rendering' | 'done' | 'gone'> {
    const move = async (tx: Tx, id: string, event: 'start' | 'finish') => {
      const to = machine.next(subjects.get(id)!, event);
      subjects.set(id, to);
      await mark(tx, clock, `${id}:${to}`);
      await enter(tx, timing(clock), machine, { id, projectId: null, state: to });
    };
    type Subject = { id: string; projectId: string | null; state: string };
    const find = async ({ where: { id } }: { where: { id: string } }): Promise<Subject | null> =>
      subjects.has(id) ? { id, projectId: null, state: subjects.get(id)! } : null;
    const table = { findUnique: find, findUniqueOrThrow: async (args: { where: { id: string } }) => (await find(args))!, updateManyAndReturn: async () => [] };
    return {
      stored: stored<Subject>()({ machine, table: () => table, field: 'state' }),
      steps: {
        queued: (tx, id) => move(tx, id, 'start'),
        rendering: {
          work,
          apply: async (tx, id, file: string) => {
            await mark(tx, clock, `${id}:${file}`);
            return move(tx, id, 'finish');
          },
        },
      },
    };
  }

  test('each timed state is left after its duration; a long step works outside the transaction, then commits', async () => {
    const clock = new ManualClock();
    const worked: string[] = [];
    const runner = newRunner(clock).register(
      machine.kind,
      progressionWork(
        progression(clock, async (id) => {
          worked.push(id);
          return `${id}.mp4`;
        }),
        timing(clock),
      ),
    );
    subjects.set('v1', 'queued');
    await db.write((tx) => enter(tx, timing(clock), machine, { id: 'v1', projectId: null, state: 'queued' }));
    clock.advance(999);
    expect(await runner.drain()).toBe(0);
    clock.advance(1);
    await runner.drain();
    expect(subjects.get('v1')).toBe('rendering');
    clock.advance(5_000);
    await runner.drain();
    expect(worked).toEqual(['v1']);
    expect(subjects.get('v1')).toBe('done');
    expect(await marks('v1:v1.mp4')).toBe(1);
  });

  test('a subject that moved on before its item came due is left alone, and no long work is done for it', async () => {
    const clock = new ManualClock();
    const worked: string[] = [];
    const runner = newRunner(clock).register(
      machine.kind,
      progressionWork(
        progression(clock, async (id) => {
          worked.push(id);
          return 'x';
        }),
        timing(clock),
      ),
    );
    subjects.set('v2', 'rendering');
    await db.write((tx) => enter(tx, timing(clock), machine, { id: 'v2', projectId: null, state: 'rendering' }));
    subjects.set('v2', 'gone');
    clock.advance(5_000);
    await runner.drain();
    expect(worked).toEqual([]);
    expect(subjects.get('v2')).toBe('gone');
  });

  test('long work whose lease was taken over meanwhile commits nothing (fenced)', async () => {
    const clock = new ManualClock();
    const started = deferred();
    const release = deferred();
    const slow = progression(clock, async () => {
      started.resolve();
      await release.promise;
      return 'late.mp4';
    });
    const first = newRunner(clock, { leaseMs: 1_000 }).register(machine.kind, progressionWork(slow, timing(clock)));
    subjects.set('v3', 'rendering');
    await db.write((tx) => enter(tx, timing(clock), machine, { id: 'v3', projectId: null, state: 'rendering' }));
    clock.advance(5_000);
    const [item] = await first.claim(1);
    const running = first.process(item);
    await started.promise;
    // The lease runs out (no heartbeat in this test) and another worker claims the same item.
    clock.advance(2_000);
    const [again] = await newRunner(clock, { leaseMs: 1_000 })
      .register(machine.kind, progressionWork(slow, timing(clock)))
      .claim(1);
    expect(again.id).toBe(item.id);
    release.resolve();
    await running;
    expect(subjects.get('v3')).toBe('rendering');
    expect(await marks('v3:late.mp4')).toBe(0);
  });
});
