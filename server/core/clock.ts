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

/** The clock's time as a database instant. */
export const instant = (clock: Clock): bigint => BigInt(clock.now());

/** An instant as an ISO 8601 date-time string. */
export const iso = (ms: bigint | number): string => new Date(Number(ms)).toISOString();

/** An instant as whole Unix seconds. */
export const unixSeconds = (ms: bigint | number): number => Math.floor(Number(ms) / 1000);
