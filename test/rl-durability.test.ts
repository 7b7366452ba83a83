// RL operations are durable and run exactly once, against real server processes (`node server/main.ts`): a chain of
// training operations is killed with SIGKILL twice while an operation is in a worker's hands, the server started
// again on the same database, and the chain must end with every operation COMPLETED once (each commit moved the
// session's state once, each operation's step was scheduled once) and the session's model byte for byte the one an
// uninterrupted run computes (the local engine called in this process, on the same inputs). On PostgreSQL, two
// server processes share the chain the same way.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, test } from 'vitest';
import { type Database, openDatabase } from '../server/db/index.ts';
import type { OptimizerStep, TrainingSample } from '../server/engines/rl/engine.ts';
import { localRlEngine } from '../server/engines/rl/local.ts';
import { encode } from '../server/engines/tokens.ts';
import { type ScratchDatabase, scratchDatabase, usingPostgres } from './support/database.ts';
import { type ServerProcess, startServerProcess } from './support/server-process.ts';

const BASE = 'Qwen/Qwen2.5-7B-Instruct';
// Batches large enough (about 3,000 positions) that a forward-backward is in a worker's hands for a while.
const LINES = Array.from({ length: 12 }, (_, i) => encode(`Line ${i}: ${'the quick brown fox jumps over the lazy dog '.repeat(24)}`).slice(0, 250));
const SAMPLES: TrainingSample[] = LINES.map((l) => ({ tokens: l.slice(0, -1), targets: l.slice(1) }));
const WIRE_SAMPLES = LINES.map((l) => ({
  model_input: { chunks: [{ encoded_text: { tokens: l.slice(0, -1) } }] },
  loss_inputs: { target_tokens: { data: l.slice(1) } },
}));
const STEPS = 2;
const ADAM: OptimizerStep = { kind: 'adamw', adam: { learningRate: 0.02, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, gradClipNorm: 1 } };

// Each test on a database of its own (its first server process makes the development key).
let scratch: ScratchDatabase;
let db: Database;
let dataDir: string;
async function fresh(provider?: 'postgresql') {
  scratch = await scratchDatabase(provider);
  dataDir = mkdtempSync(join(tmpdir(), 'rl-durability-'));
}
afterEach(async () => {
  await db?.close();
  await scratch?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

const ENV = () => ({ DATABASE_URL: scratch.url, DATA_DIR: dataDir, RUNNER_POLL_MS: '20', RUNNER_LEASE_MS: '1000' });

async function call(server: ServerProcess, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json: any = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Polls `check` until it answers true (or fails after `ms`): waiting for other processes, never a timing assertion. */
async function until(what: string, check: () => Promise<boolean>, ms = 60_000) {
  for (const deadline = Date.now() + ms; !(await check()); await sleep(20)) if (Date.now() > deadline) throw new Error(`${what} did not happen`);
}

/** Submits the chain: STEPS x (forward-backward, optim-step), then a weights-sync and a training checkpoint, each through the next server in turn. */
async function submitChain(servers: ServerProcess[], key: string, session: string) {
  const ops = `/v1/rl/training-sessions/${session}/operations`;
  const ids: string[] = [];
  for (let i = 0; i < STEPS; i++) {
    const s = servers[i % servers.length]!;
    ids.push((await call(s, key, 'POST', `${ops}/forward-backward`, { samples: WIRE_SAMPLES, loss: { type: 'LOSS_TYPE_CROSS_ENTROPY' } })).id);
    ids.push((await call(s, key, 'POST', `${ops}/optim-step`, { adam_params: { learning_rate: 0.02 } })).id);
  }
  ids.push((await call(servers[0]!, key, 'POST', `${ops}/weights-sync`, { weight_sync_type: 'WEIGHT_SYNC_TYPE_SYNCHRONOUS' })).id);
  ids.push((await call(servers.at(-1)!, key, 'POST', `${ops}/training-checkpoint`)).id);
  return ids;
}

/** What an uninterrupted run leaves: the local engine, called in this process on the same inputs. */
async function reference(lora: string) {
  let { trainer } = await localRlEngine.start({ baseModel: BASE, lora: JSON.parse(lora), optimizer: 'adamw' });
  for (let i = 0; i < STEPS; i++) {
    trainer = (await localRlEngine.forwardBackward(trainer, SAMPLES, { type: 'cross_entropy' }, `unused-${i}`)).trainer;
    trainer = (await localRlEngine.optimStep(trainer, ADAM)).trainer;
  }
  return Buffer.from(trainer);
}

/** Every operation COMPLETED once, each step scheduled once, the state moved once per commit, and the model the reference's. */
async function expectExactlyOnce(session: string, ids: string[]) {
  const ops = await db.prisma.rlOperation.findMany({ where: { sessionId: session }, orderBy: { seq: 'asc' } });
  expect(ops.map((o) => o.id)).toEqual(ids);
  expect(ops.filter((o) => o.status !== 'TRAINING_OPERATION_STATUS_COMPLETED').map((o) => `${o.kind} ${o.status} ${o.errorMessage}`)).toEqual([]);
  const items = await db.prisma.workItem.findMany({ where: { kind: 'rl_operation' } });
  expect(items.filter((i) => i.state !== 'done')).toEqual([]);
  expect(items.map((i) => i.subjectId).sort()).toEqual([...ids].sort());
  const s = await db.prisma.rlSession.findUniqueOrThrow({ where: { id: session } });
  // Started (1), then one move per forward-backward, optim-step and weights-sync.
  expect(s.stateVersion).toBe(1 + 2 * STEPS + 1);
  expect([s.step, s.weightsVersion]).toEqual([STEPS, STEPS]);
  expect(Buffer.from(s.trainer!, 'base64').equals(await reference(s.loraConfig!))).toBe(true);
  expect(await db.prisma.rlCheckpoint.count({ where: { sessionId: session } })).toBe(1);
}

async function startSession(server: ServerProcess, key: string) {
  const r = await call(server, key, 'POST', '/v1/rl/model-resources', { base_model: BASE });
  const s = await call(server, key, 'POST', '/v1/rl/training-sessions', { model_resources_id: r.id });
  return s.id as string;
}

describe('RL operations across real server processes', () => {
  test('kill -9 while operations are in hand, twice: every operation completes once, and the model is the uninterrupted one', {
    timeout: 240_000,
  }, async () => {
    await fresh();
    let server = await startServerProcess(ENV());
    const key = server.key!;
    db = await openDatabase(scratch.url, { migrate: false });
    try {
      const session = await startSession(server, key);
      const ids = await submitChain([server], key, session);
      let killedMidWork = 0;
      for (let kill = 0; kill < 2; kill++) {
        // The first moment this process's runner holds an operation (the killed one's lease has run out, and it took it over).
        const owner = `${server.child.pid}-`;
        await until(
          'an operation in hand',
          async () => (await db.prisma.workItem.count({ where: { kind: 'rl_operation', state: 'running', leaseOwner: { startsWith: owner } } })) > 0,
        );
        const done = await db.prisma.rlOperation.count({ where: { sessionId: session, status: 'TRAINING_OPERATION_STATUS_COMPLETED' } });
        if (done < ids.length) killedMidWork++;
        await server.stop('SIGKILL');
        server = await startServerProcess(ENV());
      }
      expect(killedMidWork).toBe(2);
      await until(
        'the chain to finish',
        async () =>
          (await db.prisma.rlOperation.count({
            where: { sessionId: session, status: { in: ['TRAINING_OPERATION_STATUS_PENDING', 'TRAINING_OPERATION_STATUS_RUNNING'] } },
          })) === 0,
      );
      await expectExactlyOnce(session, ids);
    } finally {
      await server.stop('SIGKILL');
    }
  });

  test.skipIf(!usingPostgres)(
    'two server processes on PostgreSQL share a session: its operations still run in order, once each',
    { timeout: 240_000 },
    async () => {
      await fresh('postgresql');
      const first = await startServerProcess(ENV());
      const second = await startServerProcess(ENV());
      db = await openDatabase(scratch.url, { migrate: false });
      try {
        const key = first.key!;
        const session = await startSession(first, key);
        const ids = await submitChain([first, second], key, session);
        await until(
          'the chain to finish',
          async () =>
            (await db.prisma.rlOperation.count({
              where: { sessionId: session, status: { in: ['TRAINING_OPERATION_STATUS_PENDING', 'TRAINING_OPERATION_STATUS_RUNNING'] } },
            })) === 0,
        );
        await expectExactlyOnce(session, ids);
      } finally {
        await Promise.all([first.stop('SIGKILL'), second.stop('SIGKILL')]);
      }
    },
  );
});
