// A worker process for test/runner-processes.test.ts: the real Runner, polling, on the database at DATABASE_URL.
// It runs `probe` items (each taking WORK_MIN_MS..WORK_MAX_MS), records every completion in the same transaction as
// the item's commit (a `probe-done` item nobody runs, naming the item and this worker), and after each successful
// commit appends the item's id to its own file OUT. It prints `ready <owner>`, starts on a `go` line on stdin, and
// on SIGTERM stops the runner (waiting for the items in hand) and exits 0.
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemClock } from '../../server/core/clock.ts';
import { createLogger } from '../../server/core/log.ts';
import { openDatabase } from '../../server/db/index.ts';
import { type ClaimedItem, enqueue, Runner, type Step } from '../../server/runner/runner.ts';

const env = (name: string, fallback?: string) => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};
const out = env('OUT');
const workMin = Number(env('WORK_MIN_MS', '0'));
const workMax = Number(env('WORK_MAX_MS', '0'));

class RecordingRunner extends Runner {
  override async commit(item: ClaimedItem, step: Step): Promise<void> {
    await super.commit(item, step);
    appendFileSync(out, `${item.id}\n`);
  }
}

const db = await openDatabase(env('DATABASE_URL'), { migrate: false });
const log = createLogger(env('LOG_LEVEL', 'warn'), process.stderr);
const runner = new RecordingRunner(
  db,
  systemClock,
  {
    enabled: true,
    pollMs: Number(env('POLL_MS', '20')),
    leaseMs: Number(env('LEASE_MS', '1500')),
    batch: Number(env('BATCH', '8')),
    maxFailures: 5,
  },
  log,
);
runner.register('probe', {
  run: async (item) => {
    if (workMax > 0) await sleep(workMin + Math.random() * (workMax - workMin));
    return {
      apply: async (tx) => {
        await enqueue(tx, systemClock, { kind: 'probe-done', subjectId: item.id, payload: { owner: runner.owner, attempt: item.attempt } });
      },
    };
  },
});

process.once('SIGTERM', () => {
  runner
    .stop()
    .then(() => db.close())
    .then(
      () => process.exit(0),
      (err) => {
        console.error(err);
        process.exit(1);
      },
    );
});

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim() === 'go') runner.start();
});
console.log(`ready ${runner.owner}`);
