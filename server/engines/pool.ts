// Work that would hold the event loop, run on worker threads instead (piscina): a local image's pictures at the
// limits (2048x2048 is about a second of CPU each), and the compiling and sampling of a caller's JSON Schema (Ajv
// compiles a schema to code, in time that grows with it). While a thread works, the event loop goes on answering
// every other request (/healthz among them). Each kind of task has a pool of its own, so a schema never waits behind
// a queue of pictures; a pool has a thread per core but one (at least one: one on a 2-core machine), started on first
// use and stopped when idle, at a lower priority than the event loop; its threads are unreferenced, so they never
// keep a process alive. The tasks themselves are pool-tasks.ts, loaded in each thread through pool-worker.js (which
// registers tsx, so the TypeScript runs as it does on the main thread, under node, tsx or vitest alike). A thread
// that cannot start (its file missing from a broken install, or no thread to be had) fails the pool's tasks, which
// then answer 500, and the next task starts a new pool: left unheard, piscina's `error` event ended the process, and
// with a listener alone the tasks waited forever.
import { availableParallelism } from 'node:os';
import type { Piscina } from 'piscina';
import { onFirstUse } from '../core/packages.ts';

/** The tasks of pool-tasks.ts, by name (their inputs and outputs are typed where they are called). */
export type TaskName = 'image' | 'schema';

// piscina is loaded with the first pool, not at start.
const piscina = onFirstUse<typeof import('piscina')>('piscina');
/** A pool, and the signal its tasks are aborted with when a thread of it cannot start. */
type Pool = { pool: Piscina; failed: AbortSignal };
const pools = new Map<TaskName, Pool>();
let completed = 0;

/** The file each thread loads (the suite points it at one that is missing, to see a thread that cannot start). */
export const worker = { file: new URL('./pool-worker.js', import.meta.url).href };

function poolFor(kind: TaskName): Pool {
  let entry = pools.get(kind);
  if (!entry) {
    const failure = new AbortController();
    const pool = new (piscina().Piscina)({
      filename: worker.file,
      name: kind,
      minThreads: 0,
      // A core is left to the event loop (measured: with every core rendering, /healthz waited twice as long).
      maxThreads: Math.max(1, availableParallelism() - 1),
      // A thread stays ready for the next request for a while (starting one loads the tasks' libraries).
      idleTimeout: 30_000,
      // Below the event loop's priority: when the machine is busy, the operating system runs the event loop first.
      niceIncrement: 10,
    });
    pool.on('error', (err: unknown) => {
      failure.abort(err);
      if (pools.get(kind) === entry) pools.delete(kind);
      pool.destroy().catch(() => {});
    });
    entry = { pool, failed: failure.signal };
    pools.set(kind, entry);
  }
  return entry;
}

/**
 * Runs `kind` on a worker thread with `input` (structured-cloned; `transfer` moves buffers instead of copying); `Out`
 * is the task's result (pool-tasks.ts, which this module does not import: it imports what calls it).
 */
export async function offLoop<Out>(kind: TaskName, input: unknown, transfer?: ArrayBuffer[]): Promise<Out> {
  const { pool, failed } = poolFor(kind);
  let out: Out;
  try {
    out = (await pool.run(input, { transferList: transfer, signal: failed })) as Out;
  } catch (err) {
    // The pool's failure (in the log, with the words of the thread's error), not the abort that carried it.
    throw failed.aborted ? new Error(`a worker thread for '${kind}' tasks could not start`, { cause: failed.reason }) : err;
  }
  completed++;
  return out;
}

/** Tasks the pools have finished since the process started (the suite checks that work ran off the event loop). */
export const offLoopCompleted = (): number => completed;

/** Stops the pools' threads (a process that shuts down need not: they are unreferenced). */
export async function closePools(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((p) => p.pool.destroy()));
}
