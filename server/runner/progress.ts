// A declared machine's timed steps, run by the durable runner. Every move into a state that has a timed step
// (each module's one `move` function, whether a handler or a step makes it) calls `enter`, which schedules a work
// item (kind: the machine's `kind`) for after the state's duration. When it comes due, the module's step for that
// state runs inside the runner's fenced commit. An item whose subject has moved on in the meantime (another
// state, or another `epoch` of the same state) does nothing: the move that left the state scheduled what follows.
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Machine } from '../core/machine.ts';
import type { Tx } from '../db/index.ts';
import { enqueue, type WorkHandler } from './runner.ts';

/** What the runner needs to know of a subject: who it is and where it stands. */
export interface Subject {
  id: string;
  projectId: string | null;
  state: string;
  /** For machines with cycles: bumped by every move a caller makes, so a step scheduled for an earlier visit of a state is skipped. */
  epoch?: number;
}

export interface Progression<S extends string> {
  machine: Machine<S, string>;
  /** The subject as the step's transaction sees it; null when it no longer exists. */
  load(tx: Tx, id: string): Promise<Subject | null>;
  /** The timed step out of each timed state: it moves the subject (its module's `move`), or answers `wait` to try again after the same delay. */
  steps: { [F in S]?: (tx: Tx, id: string) => Promise<void | 'wait'> };
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
export function progressionWork<S extends string>(p: Progression<S>, timing: Timing): WorkHandler {
  return {
    run: async (item) => ({
      apply: async (tx) => {
        const before = await p.load(tx, item.subjectId);
        if (!current(before, item.payload)) return;
        const step = p.steps[before!.state as S];
        if (!step) return;
        if ((await step(tx, before!.id)) === 'wait') await enter(tx, timing, p.machine, before!);
      },
    }),
    giveUp: async (item, error, tx) => {
      if (p.giveUp && current(await p.load(tx, item.subjectId), item.payload)) await p.giveUp(tx, item.subjectId, error);
    },
  };
}
