// The one form of every state machine: its states, its events, the table of allowed moves, its terminal states
// and its timed steps (the moves the durable runner makes by itself after a named duration). Nothing steps a
// status by hand: code asks `next(from, event)`, which answers the table's target or refuses with the one 409
// shape (core/errors.ts `invalidTransition`), or with the requirement's own error where a machine declares one.
// The runner's work (runner/progress.ts), the spec's state tables (checked by test/machines.test.ts) and the
// tests' durations all read these declarations.
import { type Config, duration } from './config.ts';
import { type ApiError, invalidTransition } from './errors.ts';

/** How long a subject stays in a state before the runner takes its timed step: env `DURATION_<NAME>_MS`, else `defaultMs`. */
export interface Timed {
  duration: string;
  defaultMs: number;
}

export interface MachineSpec<S extends string, E extends string> {
  /** What a subject is called in messages, e.g. `remediation`. */
  name: string;
  /** The runner's work kind for the timed steps. */
  kind: string;
  states: readonly S[];
  events: readonly E[];
  terminal: readonly S[];
  /** from -> event -> to. A pair that is absent is refused. */
  transitions: { readonly [F in S]?: { readonly [V in E]?: S } };
  /** The states the runner leaves by itself, after how long. */
  timed?: { readonly [F in S]?: Timed };
  /** An event a requirement refuses with its own error instead of the generic 409 (e.g. restarting a v1 endpoint). */
  refusals?: { readonly [V in E]?: (from: string) => ApiError };
}

export interface Move<S extends string, E extends string> {
  from: S;
  event: E;
  to: S;
}

export interface Machine<S extends string, E extends string> extends MachineSpec<S, E> {
  /** The state `event` leads to from `from`, or the refusal. */
  next(from: string, event: E): S;
  can(from: string, event: E): boolean;
  isTerminal(state: string): boolean;
  /** How long the runner waits in `state` before its timed step; undefined when the state has none. */
  delayMs(state: string, config: Pick<Config, 'durations'>): number | undefined;
  /** The event that leads from one state to another, if the table has one. */
  eventBetween(from: string, to: string): E | undefined;
  /** Every allowed move, in declaration order. */
  moves(): Move<S, E>[];
}

export function defineMachine<const S extends string, const E extends string>(spec: MachineSpec<S, E>): Machine<S, E> {
  const states = new Set<string>(spec.states);
  const events = new Set<string>(spec.events);
  const moves: Move<S, E>[] = [];
  for (const [from, row] of Object.entries(spec.transitions) as [S, Record<E, S>][]) {
    for (const [event, to] of Object.entries(row) as [E, S][]) {
      if (!states.has(from) || !states.has(to) || !events.has(event))
        throw new Error(`${spec.name}: ${from} --${event}--> ${to} names an undeclared state or event`);
      moves.push({ from, event, to });
    }
  }
  for (const s of spec.terminal) {
    if (moves.some((m) => m.from === s)) throw new Error(`${spec.name}: terminal state ${s} has a way out`);
    if (spec.timed?.[s]) throw new Error(`${spec.name}: terminal state ${s} has a timed step`);
  }
  const target = (from: string, event: E): S | undefined => (spec.transitions as Record<string, Partial<Record<E, S>>>)[from]?.[event];

  return {
    ...spec,
    next(from, event) {
      const to = target(from, event);
      if (to) return to;
      const refusal = spec.refusals?.[event];
      throw refusal ? refusal(from) : invalidTransition(spec.name, from, event);
    },
    can: (from, event) => target(from, event) !== undefined,
    isTerminal: (state) => (spec.terminal as readonly string[]).includes(state),
    delayMs(state, config) {
      const timed = spec.timed?.[state as S];
      return timed && duration(config, timed.duration, timed.defaultMs);
    },
    eventBetween: (from, to) => moves.find((m) => m.from === from && m.to === to)?.event,
    moves: () => [...moves],
  };
}
