// Time. It comes from a Clock, never from Date.now() directly, so tests can move it forward without sleeping.
// Every instant is stored as Unix milliseconds in a BigInt column (2038-proof on both databases) and formatted for
// the wire only by the functions below.
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to; starts at the real time. */
export class ManualClock implements Clock {
  constructor(private ms = Date.now()) {}
  now(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/**
 * The platform's clock: another clock (the system's) plus an offset the control plane moves forward (never back),
 * so a test can let the runner's timed steps come due without waiting. The offset is this process's own.
 */
export class OffsetClock implements Clock {
  private offset = 0;
  constructor(private readonly base: Clock) {}
  now(): number {
    return this.base.now() + this.offset;
  }
  get offsetMs(): number {
    return this.offset;
  }
  /** Moves the clock forward by `ms` (a negative `ms` is ignored: the clock never runs back). */
  advance(ms: number): void {
    if (ms > 0) this.offset += ms;
  }
}

/** The clock's time as a database instant. */
export const instant = (clock: Clock): bigint => BigInt(clock.now());

const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_800_000;
const DAY_MS = 86_400_000;
const two = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const three = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);
// The day of the last instant formatted: a long list's instants mostly fall on a few days, and Date's own
// formatting costs several times the arithmetic below (a list of 5,000 rows formats 10,000 instants).
let day = { start: Number.NaN, text: '' };

/** An instant as an ISO 8601 date-time string: exactly what Date#toISOString writes (`2026-01-02T03:04:05.006Z`). */
export const iso = (instant: bigint | number): string => {
  const ms = Number(instant);
  if (!(ms >= 0 && ms < LAST_FOUR_DIGIT_YEAR_MS) || !Number.isInteger(ms)) return new Date(ms).toISOString();
  const start = ms - (ms % DAY_MS);
  if (start !== day.start) day = { start, text: new Date(start).toISOString().slice(0, 11) };
  const inDay = ms - start;
  const h = Math.floor(inDay / 3_600_000);
  const m = Math.floor(inDay / 60_000) % 60;
  const s = Math.floor(inDay / 1000) % 60;
  return `${day.text}${two(h)}:${two(m)}:${two(s)}.${three(inDay % 1000)}Z`;
};

/** An instant as whole Unix seconds. */
export const unixSeconds = (ms: bigint | number): number => Math.floor(Number(ms) / 1000);
