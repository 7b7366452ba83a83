// Resource ids: a prefix naming the kind, then a ULID in lower case (26 Crockford base32 characters: 10 of the
// creation time in milliseconds, then 16 random), so that listings and cursors can order by id. The factory is
// monotonic (npm `ulid`): ids made in the same millisecond, or while the clock stands still or steps back, still
// come out in creation order within the process (the random part counts up from the last id). Two processes are
// ordered only by their clocks: their ids of the same millisecond interleave in no particular order.
import { monotonicFactory } from 'ulid';

const ulid = monotonicFactory();

export function newId(prefix: string, nowMs = Date.now()): string {
  return `${prefix}_${ulid(nowMs).toLowerCase()}`;
}
