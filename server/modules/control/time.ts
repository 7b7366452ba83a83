// Time (the Control tag): the platform's clock moved forward, with every timed step of the durable runner that
// comes due on the way run at its own due time (the offset kept in the database, every process's clock moved with
// it: db/clock.ts, shared.ts); and one job moved through its declared machine, by the runner's own step or by the
// table's move (runner/progress.ts `transition`), the jobs being the modules' `steer` kinds.
import { instant, iso } from '../../core/clock.ts';
import { badRequest, conflict, invalidTransition, notFound, withArticle } from '../../core/errors.ts';
import { keepOffset } from '../../db/clock.ts';
import { type JobError, transition } from '../../runner/progress.ts';
import type { Context, Steerable } from '../types.ts';
import type { ControlPlane } from './plane.ts';

/** Rounds of "move to the next due step, run what is due" one advance makes at most (a step that keeps rescheduling itself). */
const MAX_ROUNDS = 10_000;
/** Moves one `terminal` call makes at most. */
const MAX_MOVES = 32;

const timeWire = ({ clock }: ControlPlane) => ({ now: iso(clock.now()), offset_ms: clock.offsetMs });

export async function getTime(_ctx: Context<'getTime'>, plane: ControlPlane) {
  return timeWire(plane);
}

export async function advanceTime(ctx: Context<'advanceTime'>, plane: ControlPlane) {
  const { clock } = plane;
  const ms = Math.round(ctx.body.seconds * 1000);
  const until = clock.offsetMs + ms;
  let steps = 0;
  // Each round moves the clock to the earliest step due by the target (never back) and runs everything due then,
  // including what those steps make due: each step happens at its due time, earliest first.
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const due = await ctx.runner.nextDueAt(clock.now() + until - clock.offsetMs);
    if (due === null) break;
    clock.advance(due - clock.now());
    steps += await ctx.runner.drain();
  }
  clock.advance(until - clock.offsetMs);
  // Every process's clock takes the offset up before the call answers.
  await plane.change((tx) => keepOffset(tx, clock.offsetMs, instant(clock)));
  steps += await ctx.runner.drain();
  return { ...timeWire(plane), advanced_ms: ms, steps };
}

interface Moved {
  from: string;
  event: string;
  to: string;
}

export async function transitionJob(ctx: Context<'transitionJob'>, plane: ControlPlane) {
  const { params, body, db } = ctx;
  const steer = plane.steerable[params.kind] as Steerable;
  const { stored, failure } = steer.progression;
  const { machine } = stored;
  const read = async () => {
    const row = await stored.table(db.prisma).findUnique({ where: { id: params.id } });
    if (!row) throw notFound(machine.name, params.id, 'id');
    return row as { id: string; projectId: string | null } & Record<string, unknown>;
  };
  const stateOf = (row: Record<string, unknown>) => String(row[stored.field]);
  // A move by the table (no timed step to take): a failure event writes the given error.
  const move = (row: Awaited<ReturnType<typeof read>>, event: string, error?: JobError) => {
    if (steer.callerOnly?.includes(event))
      throw conflict(`Only the API's own callers ${event} a ${machine.name} (from ${stateOf(row)}): the control plane does not.`, 'invalid_state_transition');
    if (!failure?.events.includes(event)) return db.write((tx) => transition(tx, ctx, stored, row, event));
    const given = error ?? { code: 'job_failed', message: `The ${machine.name} was failed by the control plane.` };
    return db.write((tx) => failure.fail(tx, row, event, given));
  };

  const waiting = (id: string, state: string, why: string) => conflict(`${withArticle(machine.name, true)} '${id}' stays ${state}: ${why}.`, 'job_waiting');

  let row = await read();
  const from = stateOf(row);
  const moves: Moved[] = [];
  if (body.to === 'next' || body.to === 'terminal') {
    if (body.error) throw badRequest(`error goes with a move into a failure state of the ${machine.name}, not '${body.to}'.`, 'error', 'invalid_value');
    if (body.to === 'terminal' && machine.terminal.length === 0) throw invalidTransition(machine.name, from, 'reach a terminal state (it has none)');
    do {
      const before = stateOf(row);
      if (machine.isTerminal(before)) {
        if (moves.length === 0) throw invalidTransition(machine.name, before, 'move on (the state is terminal)');
        break;
      }
      // The state's timed step, taken now by the runner (it does the step's work: renders, trains); a state
      // without one (or whose subject has no step scheduled) takes the first move its table declares.
      const ran = !steer.untimed && machine.delayMs(before, ctx.config) !== undefined ? await ctx.runner.runNow(machine.kind, row.id) : 0;
      if (ran === null) throw waiting(row.id, before, 'a worker is taking its step now');
      if (ran === 0) {
        const first = machine.moves().find((m) => m.from === before);
        // A state the table declares no way out of (a deployment's SCALING, which nothing enters here).
        if (!first) throw invalidTransition(machine.name, before, 'move on (its table has no move out of it)');
        await move(row, first.event);
      }
      row = await read();
      const after = stateOf(row);
      if (after === before) throw waiting(row.id, before, "its step waits for something else (e.g. a file's validation) or failed and will be retried");
      moves.push({ from: before, event: machine.eventBetween(before, after) ?? 'step', to: after });
    } while (body.to === 'terminal' && moves.length < MAX_MOVES);
  } else {
    if (!(machine.states as readonly string[]).includes(body.to))
      throw badRequest(`'${body.to}' is not a state of the ${machine.name}: one of ${machine.states.join(', ')}, next or terminal.`, 'to', 'invalid_value');
    const event = machine.eventBetween(from, body.to);
    if (!event) throw invalidTransition(machine.name, from, `move to ${body.to}`);
    if (body.error && !failure?.events.includes(event))
      throw badRequest(`error goes with a move into a failure state of the ${machine.name}; ${body.to} is not one.`, 'error', 'invalid_value');
    await move(row, event, body.error && { code: body.error.code, message: body.error.message ?? `The ${machine.name} failed with ${body.error.code}.` });
    row = await read();
    moves.push({ from, event, to: stateOf(row) });
  }
  return {
    kind: params.kind,
    id: row.id,
    project_id: row.projectId,
    state: stateOf(row),
    terminal: machine.isTerminal(stateOf(row)),
    moves,
  };
}
