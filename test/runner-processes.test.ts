// The durable runner across real OS processes on PostgreSQL (skipped without TEST_DATABASE_URL): two worker processes
// (test/support/runner-worker.ts) share the work without completing any item twice, and a worker killed with SIGKILL
// mid-item loses nothing: the survivor takes its items over once their lease has run out.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { systemClock } from '../server/core/clock.ts';
import { root } from '../server/core/paths.ts';
import { type Database, openDatabase } from '../server/db/index.ts';
import { enqueue } from '../server/runner/runner.ts';
import { type ScratchDatabase, scratchDatabase, usingPostgres } from './support/database.ts';

const LEASE_MS = 1500;

interface Worker {
  child: ChildProcess;
  owner: string;
  out: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  go(): void;
  ids(): string[];
}

let scratch: ScratchDatabase;
let db: Database;
let dir: string;
const workers: Worker[] = [];

async function startWorker(name: string, env: Record<string, string>): Promise<Worker> {
  const out = join(dir, `${name}.txt`);
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/runner-worker.ts'], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: scratch.url, OUT: out, LEASE_MS: String(LEASE_MS), ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const owner = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (d) => {
      stdout += d;
      const m = /ready (\S+)/.exec(stdout);
      if (m) resolve(m[1]);
    });
    void exited.then(({ code, signal }) => reject(new Error(`worker ${name} exited (${code ?? signal}) before ready: ${stderr}`)));
  });
  const worker: Worker = {
    child,
    owner,
    out,
    exited,
    go: () => child.stdin!.write('go\n'),
    ids: () => (existsSync(out) ? readFileSync(out, 'utf8').split('\n').filter(Boolean) : []),
  };
  workers.push(worker);
  return worker;
}

async function enqueueProbes(count: number): Promise<string[]> {
  return db.write(async (tx) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push(await enqueue(tx, systemClock, { kind: 'probe', subjectId: `probe-${i}` }));
    return ids;
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Completions recorded in the commits' own transactions: item id -> the owners that completed it. */
async function completions(): Promise<Map<string, string[]>> {
  const rows = await db.prisma.workItem.findMany({ where: { kind: 'probe-done' }, select: { subjectId: true, payload: true } });
  const byItem = new Map<string, string[]>();
  for (const r of rows) byItem.set(r.subjectId, [...(byItem.get(r.subjectId) ?? []), JSON.parse(r.payload).owner]);
  return byItem;
}

async function terminate(worker: Worker): Promise<void> {
  worker.child.kill('SIGTERM');
  expect(await worker.exited).toEqual({ code: 0, signal: null });
}

describe.skipIf(!usingPostgres)('runner across processes (PostgreSQL)', () => {
  beforeAll(async () => {
    scratch = await scratchDatabase('postgresql');
    db = await openDatabase(scratch.url);
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
    await db.write((tx) => tx.workItem.deleteMany({}));
  });
  afterAll(async () => {
    await db?.close();
    await scratch?.drop();
  });

  test('two worker processes work through 2,000 items, none completed twice', async () => {
    dir = mkdtempSync(join(tmpdir(), 'runner-processes-'));
    const ids = await enqueueProbes(2000);
    const env = { POLL_MS: '10', BATCH: '16' };
    const [a, b] = await Promise.all([startWorker('a', env), startWorker('b', env)]);
    a.go();
    b.go();
    await waitFor('every probe done', async () => (await db.prisma.workItem.count({ where: { kind: 'probe', state: 'done' } })) === 2000, 60_000);
    await Promise.all([terminate(a), terminate(b)]);

    expect(await db.prisma.workItem.count({ where: { kind: 'probe', state: { not: 'done' } } })).toBe(0);
    // The workers' own records: every id exactly once across both files, and both did some.
    const fromA = a.ids();
    const fromB = b.ids();
    const all = [...fromA, ...fromB];
    expect(all.length).toBe(2000);
    expect(new Set(all).size).toBe(2000);
    expect([...all].sort()).toEqual([...ids].sort());
    expect(fromA.length).toBeGreaterThan(0);
    expect(fromB.length).toBeGreaterThan(0);
    // The database's record, written in each commit's transaction: one completion per item, by the worker that says so.
    const done = await completions();
    expect(done.size).toBe(2000);
    for (const id of ids) expect(done.get(id)!.length, id).toBe(1);
    for (const id of fromA) expect(done.get(id)).toEqual([a.owner]);
    for (const id of fromB) expect(done.get(id)).toEqual([b.owner]);
  }, 90_000);

  test('a worker killed with SIGKILL mid-item loses nothing: the other takes its items over after the lease', async () => {
    dir = mkdtempSync(join(tmpdir(), 'runner-processes-'));
    const ids = await enqueueProbes(40);
    const env = { POLL_MS: '50', BATCH: '4', WORK_MIN_MS: '300', WORK_MAX_MS: '800' };
    const [victim, survivor] = await Promise.all([startWorker('victim', env), startWorker('survivor', env)]);
    victim.go();
    survivor.go();
    const heldByVictim = () => db.prisma.workItem.findMany({ where: { kind: 'probe', state: 'running', leaseOwner: victim.owner } });
    await waitFor('the victim to hold items', async () => (await heldByVictim()).length > 0, 20_000);
    victim.child.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');
    // What the victim held when it died (nothing of it can change any more).
    const orphaned = await heldByVictim();
    expect(orphaned.length).toBeGreaterThan(0);
    const killedAt = Date.now();

    await waitFor('every probe done', async () => (await db.prisma.workItem.count({ where: { kind: 'probe', state: 'done' } })) === 40, 30_000);
    // Its items could only be taken over once their lease (1.5 s, never renewed) had run out.
    expect(Date.now() - killedAt).toBeGreaterThan(LEASE_MS - 500);
    await terminate(survivor);

    const rows = await db.prisma.workItem.findMany({ where: { kind: 'probe' } });
    expect(rows.every((r) => r.state === 'done')).toBe(true);
    const done = await completions();
    for (const id of ids) expect(done.get(id)?.length, id).toBe(1);
    for (const o of orphaned) {
      const now = rows.find((r) => r.id === o.id)!;
      expect(now.attempt, o.id).toBeGreaterThan(o.attempt);
      expect(done.get(o.id)).toEqual([survivor.owner]);
      expect(survivor.ids()).toContain(o.id);
    }
    const fromVictim = victim.ids();
    const fromSurvivor = survivor.ids();
    expect(new Set([...fromVictim, ...fromSurvivor]).size).toBe(fromVictim.length + fromSurvivor.length);
    // The survivor exited cleanly, so its file is complete; the victim's may lack a last line it had no time to write.
    expect([...fromSurvivor].sort()).toEqual(ids.filter((id) => done.get(id)![0] === survivor.owner).sort());
    for (const id of fromVictim) expect(done.get(id)).toEqual([victim.owner]);
  }, 60_000);
});
