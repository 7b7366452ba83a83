// Work that would hold the event loop, run on worker threads instead (piscina): a local image's pixels at the limits
// (2048x2048 is about a second of CPU), and the compiling and sampling of a caller's JSON Schema (Ajv compiles a
// schema to code, in time that grows with it). While a thread works, the event loop goes on answering every other
// request (/healthz among them). The pool has a thread per core the machine offers (at least one), started on first
// use and stopped when idle; its threads are unreferenced, so they never keep a process alive. The tasks themselves
// are pool-tasks.ts, loaded in each thread through pool-worker.js (which registers tsx, so the TypeScript runs as it
// does on the main thread, under node, tsx or vitest alike).
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { Tasks } from './pool-tasks.ts';

let pool: Piscina | undefined;

function thePool(): Piscina {
  pool ??= new Piscina({
    filename: new URL('./pool-worker.js', import.meta.url).href,
    minThreads: 0,
    maxThreads: Math.max(1, availableParallelism()),
    // A thread stays ready for the next request for a while (starting one loads the tasks' libraries).
    idleTimeout: 30_000,
  });
  return pool;
}

/** Runs `kind` on a worker thread with `input` (structured-cloned; `transfer` moves buffers instead of copying). */
export function offLoop<K extends keyof Tasks>(kind: K, input: Parameters<Tasks[K]>[0], transfer?: ArrayBuffer[]): Promise<Awaited<ReturnType<Tasks[K]>>> {
  return thePool().run(input, { name: kind, transferList: transfer });
}

/** Tasks the pool has finished since the process started (the suite checks that work ran off the event loop). */
export const offLoopCompleted = (): number => pool?.completed ?? 0;

/** Stops the pool's threads (a process that shuts down need not: they are unreferenced). */
export async function closePool(): Promise<void> {
  const p = pool;
  pool = undefined;
  await p?.destroy();
}
