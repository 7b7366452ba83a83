// A declared machine on the database: where its subjects are stored, the one `transition` every move makes, and its
// timed steps, run by the durable runner. A module declares its machine's table in core/machine.ts and binds it to
// its rows here once (`stored`): the table of rows, the state field, an epoch for machines with cycles, the stamps
// every move writes and the hooks of entering a state. `transition` is then the only way a state changes: it asks
// the table (a move it does not allow is the one 409), writes the move with a compare-and-set on the state (and
// epoch), runs the state's hooks and schedules its timed step, all in the caller's transaction. When a timed step
// comes due, the module's step for that state runs inside the runner's fenced commit. An item whose subject has
// moved on in the meantime (another state, or another `epoch` of the same state) does nothing: the move that left
// the state scheduled what follows.
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import { invalidTransition, withoutPaths } from '../core/errors.ts';
import type { Machine, Move } from '../core/machine.ts';
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
  /** `row`: the subject as the runner read it just before (no need to read it again). */
  // biome-ignore lint/suspicious/noExplicitAny: the row of the progression's table.
  work(id: string, row: any): Promise<T>;
  /** `row`: the subject as the transaction reads it, still where the item found it. */
  // biome-ignore lint/suspicious/noConfusingVoidType lint/suspicious/noExplicitAny: as Step; the row as in `work`.
  apply(tx: Tx, id: string, result: T, row: any): Promise<void | 'wait'>;
}

export interface Progression<S extends string> {
  // biome-ignore lint/suspicious/noExplicitAny: a progression runs the steps of any stored row type.
  stored: Stored<S, string, any>;
  /** The timed step out of each timed state. */
  // biome-ignore lint/suspicious/noExplicitAny: each long step has its own result type.
  steps: { [F in S]?: Step | LongStep<any> };
  /** When the runner gives up on a step that keeps failing: typically the machine's failure event. */
  giveUp?(tx: Tx, id: string, error: string): Promise<void>;
  /**
   * How the control plane fails a subject with a given error (a steered move, a fault rule's `fail_job`): the
   * failure events (`events[0]` is the one a `fail_job` makes), and the move by one of them that writes the error
   * where the subject keeps it.
   */
  // biome-ignore lint/suspicious/noExplicitAny: the row of the progression's table.
  failure?: { events: readonly string[]; fail(tx: Tx, row: any, event: string, error: JobError): Promise<unknown> };
}

/** An error a job is failed with by the control plane. */
export interface JobError {
  code: string;
  message: string;
}

/** What scheduling needs: the clock, and the configured durations. */
export interface Timing {
  clock: Clock;
  config: Pick<Config, 'durations'>;
}

/** The columns every stored subject has. */
export interface Row {
  id: string;
  projectId: string | null;
}

/** The slice of a Prisma model's client that moves need. */
export interface Table<R extends Row> {
  findUnique(args: { where: { id: string } }): Promise<R | null>;
  findUniqueOrThrow(args: { where: { id: string } }): Promise<R>;
  updateManyAndReturn(args: { where: Record<string, unknown>; data: Record<string, unknown> }): Promise<R[]>;
}

/** A machine bound to the rows it moves. */
export interface Stored<S extends string, E extends string, R extends Row> {
  machine: Machine<S, E>;
  /** The rows' table, on a transaction or the database. */
  table(client: Tx | Db): Table<R>;
  /** The column holding the state. */
  field: keyof R & string;
  /** A column every move bumps and compares (machines with cycles: a step scheduled for an earlier visit of a state is skipped). */
  epoch?: keyof R & string;
  /** Columns every move writes besides the state (times, history); `note` is the mover's message. */
  stamp?(row: R, move: Move<S, E>, now: bigint, note?: string): Partial<R>;
  /** Writes that follow entering a state, in the same transaction (another table's rows). */
  onEnter?: { [T in S]?: (tx: Tx, row: R) => Promise<void> };
}

/** Binds a machine to its rows: `stored<Video>()({ machine, table: (c) => c.video, field: 'status' })` (the row type first, the rest inferred). */
export const stored =
  <R extends Row>() =>
  <S extends string, E extends string>(spec: Stored<S, E, R>): Stored<S, E, R> =>
    spec;

export interface MoveOptions<R> {
  /** Columns written with the move. */
  data?: Partial<R>;
  /** Further conditions the row must still meet (a fence, e.g. the claim's token); unmet, the move is refused like any other. */
  where?: Record<string, unknown>;
  /** The mover's message, for stamps that keep a history. */
  note?: string;
}

/**
 * The one way a subject's state changes: `event` from where `row` stands, with `data`, as one compare-and-set on
 * the state (and epoch, and `where`) that answers the moved row. A move the table does not allow, or one the row no
 * longer allows because it moved meanwhile, is the machine's refusal (the one 409, or `refused`). Then the new
 * state's hooks run and its timed step is scheduled, in the caller's transaction (a state with neither needs no
 * transaction: the move is then one statement on any client).
 */
export async function transition<S extends string, E extends string, R extends Row>(
  client: Tx,
  timing: Timing,
  m: Stored<S, E, R>,
  row: R,
  event: E,
  options: MoveOptions<R> & { refused?: () => Error } = {},
): Promise<R> {
  const moved = await transitionIfStill(client, timing, m, row, event, options);
  if (moved) return moved;
  if (options.refused) throw options.refused();
  // It moved meanwhile: refused as the state it is in now.
  const now = await m.table(client).findUnique({ where: { id: row.id } });
  throw invalidTransition(m.machine.name, String((now ?? row)[m.field]), event);
}

/** `transition`, except that a row that moved meanwhile (or no longer meets `where`) answers null, not a refusal. */
export async function transitionIfStill<S extends string, E extends string, R extends Row>(
  client: Tx,
  timing: Timing,
  m: Stored<S, E, R>,
  row: R,
  event: E,
  options: MoveOptions<R> = {},
): Promise<R | null> {
  const from = row[m.field] as unknown as S;
  const to = m.machine.next(from, event);
  const now = BigInt(timing.clock.now());
  const where: Record<string, unknown> = { ...options.where, id: row.id, [m.field]: from };
  const data: Record<string, unknown> = { ...options.data, ...m.stamp?.(row, { from, event, to }, now, options.note), [m.field]: to };
  if (m.epoch) {
    where[m.epoch] = row[m.epoch];
    data[m.epoch] = Number(row[m.epoch]) + 1;
  }
  const [moved] = await m.table(client).updateManyAndReturn({ where, data });
  if (!moved) return null;
  await m.onEnter?.[to]?.(client, moved);
  await enter(client, timing, m.machine, subjectOf(m, moved));
  return moved;
}

/** What the runner needs to know of a stored row. */
export const subjectOf = <S extends string, E extends string, R extends Row>(m: Stored<S, E, R>, row: R): Subject => ({
  id: row.id,
  projectId: row.projectId,
  state: String(row[m.field]),
  epoch: m.epoch ? Number(row[m.epoch]) : undefined,
});

/** The subject (and its row) as the given reader (a transaction, or the database for a look before long work) sees it; null when it no longer exists. */
async function load<S extends string, E extends string, R extends Row>(
  m: Stored<S, E, R>,
  client: Tx | Db,
  id: string,
): Promise<(Subject & { row: R }) | null> {
  const row = await m.table(client).findUnique({ where: { id } });
  return row && { ...subjectOf(m, row), row };
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
      // A fault rule's `fail_job` marked this item: the subject fails here instead of taking its step.
      const doomed = item.payload.fail as JobError | undefined;
      if (doomed && p.failure)
        return {
          apply: async (tx) => {
            const before = await load(p.stored, tx, item.subjectId);
            if (!current(before, item.payload)) return;
            await p.failure!.fail(tx, before!.row, p.failure!.events[0]!, doomed);
          },
        };
      const step = p.steps[item.payload.state as S];
      // Long work only for a subject still where the item found it; the commit below checks again.
      const found = step && typeof step !== 'function' ? await load(p.stored, services.db.prisma, item.subjectId) : null;
      const long = current(found, item.payload);
      const result = long ? await (step as LongStep<unknown>).work(item.subjectId, found!.row) : undefined;
      return {
        apply: async (tx) => {
          const before = await load(p.stored, tx, item.subjectId);
          if (!current(before, item.payload) || !step) return;
          if (typeof step !== 'function' && !long) return;
          const outcome = typeof step === 'function' ? await step(tx, before!.id) : await step.apply(tx, before!.id, result, before!.row);
          if (outcome === 'wait') await enter(tx, services, p.stored.machine, before!);
        },
      };
    },
    giveUp: async (item, error, tx) => {
      // The error becomes the subject's message to its owner: whatever failed (fs, ffmpeg) must not name server paths.
      if (p.giveUp && current(await load(p.stored, tx, item.subjectId), item.payload)) await p.giveUp(tx, item.subjectId, withoutPaths(error));
    },
  };
}
