// A declared machine's timed steps, run by the durable runner. Every move into a state that has a timed step
// (each module's one `move` function, whether a handler or a step makes it) calls `enter`, which schedules a work
// item (kind: the machine's `kind`) for after the state's duration. When it comes due, the module's step for that
// state runs inside the runner's fenced commit. An item whose subject has moved on in the meantime (another
// state, or another `epoch` of the same state) does nothing: the move that left the state scheduled what follows.
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import { withoutPaths } from '../core/errors.ts';
import type { Machine } from '../core/machine.ts';
import type { Database, Db, Tx } from '../db/index.ts';
import { enqueue, type WorkHandler } from './runner.ts';

/** What the runner needs to know of a subject: who it is and where it stands. */
export interface Subject {
  id: string;
  projectId: string | null;
  state: string;
  /** For machines with cycles: bumped by every move a caller makes, so a step scheduled for an earlier visit of a state is skipped. */
  epoch?: number;
}

/** A step made inside the runner's fenced commit: it moves the subject (its module's `move`), or answers `wait` to try again after the same delay. */
// biome-ignore lint/suspicious/noConfusingVoidType: a step that returns nothing (void) moved its subject; only 'wait' means more.
export type Step = (tx: Tx, id: string) => Promise<void | 'wait'>;

/**
 * A step with long work (rendering, training): `work` runs outside any transaction while the runner's heartbeat
 * keeps the item's lease, and must be safe to repeat (after a crash another worker takes the item over and runs it
 * again); `apply` then commits its outcome, fenced, like a plain step.
 */
export interface LongStep<T> {
  work(id: string): Promise<T>;
  // biome-ignore lint/suspicious/noConfusingVoidType: as Step.
  apply(tx: Tx, id: string, result: T): Promise<void | 'wait'>;
}

export interface Progression<S extends string> {
  machine: Machine<S, string>;
  /** The subject as the given reader (a transaction, or the database for a look before long work) sees it; null when it no longer exists. */
  load(tx: Tx | Db, id: string): Promise<Subject | null>;
  /** The timed step out of each timed state. */
  // biome-ignore lint/suspicious/noExplicitAny: each long step has its own result type.
  steps: { [F in S]?: Step | LongStep<any> };
  /** When the runner gives up on a step that keeps failing: typically the machine's failure event. */
  giveUp?(tx: Tx, id: string, error: string): Promise<void>;
}

/** What scheduling needs: the clock, and the configured durations. */
export interface Timing {
  clock: Clock;
  config: Pick<Config, 'durations'>;
}

/** Schedules the timed step of the state `subject` is now in (nothing when the state has none), in the caller's transaction. */
export async function enter(tx: Tx, timing: Timing, machine: Machine<string, string>, subject: Subject): Promise<void> {
  const delayMs = machine.delayMs(subject.state, timing.config);
  if (delayMs === undefined) return;
  await enqueue(tx, timing.clock, {
    kind: machine.kind,
    subjectId: subject.id,
    projectId: subject.projectId,
    payload: { state: subject.state, epoch: subject.epoch ?? 0 },
    delayMs,
  });
}

const current = (s: Subject | null, payload: { state?: string; epoch?: number }) => !!s && s.state === payload.state && (s.epoch ?? 0) === (payload.epoch ?? 0);

/** The runner's handler for a machine's timed steps. */
export function progressionWork<S extends string>(p: Progression<S>, services: Timing & { db: Database }): WorkHandler {
  return {
    run: async (item) => {
      const step = p.steps[item.payload.state as S];
      // Long work only for a subject still where the item found it; the commit below checks again.
      const long = step && typeof step !== 'function' && current(await p.load(services.db.prisma, item.subjectId), item.payload);
      const result = long ? await (step as LongStep<unknown>).work(item.subjectId) : undefined;
      return {
        apply: async (tx) => {
          const before = await p.load(tx, item.subjectId);
          if (!current(before, item.payload) || !step) return;
          if (typeof step !== 'function' && !long) return;
          const outcome = typeof step === 'function' ? await step(tx, before!.id) : await step.apply(tx, before!.id, result);
          if (outcome === 'wait') await enter(tx, services, p.machine, before!);
        },
      };
    },
    giveUp: async (item, error, tx) => {
      // The error becomes the subject's message to its owner: whatever failed (fs, ffmpeg) must not name server paths.
      if (p.giveUp && current(await p.load(tx, item.subjectId), item.payload)) await p.giveUp(tx, item.subjectId, withoutPaths(error));
    },
  };
}
