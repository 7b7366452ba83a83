// Resource ids: a prefix naming the kind, then a ULID in lower case (26 Crockford base32 characters: 10 of the
// creation time in milliseconds, then 16 random), so that listings and cursors can order by id. The factory is
// monotonic (npm `ulid`): ids made in the same millisecond, or while the clock stands still or steps back, still
// come out in creation order within the process (the random part counts up from the last id). Two processes are
// ordered only by their clocks: their ids of the same millisecond interleave in no particular order.
import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

// Random bytes drawn from the OS 4 KiB at a time: `ulid`'s own source asks for one byte per character, 16 calls an id
// (about 90 µs of a chat request's CPU, measured); the bytes are as random either way.
const pool = Buffer.alloc(4096);
let drawn = pool.length;
function prng(): number {
  if (drawn === pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  return pool[drawn++]! / 256;
}

/** An id maker with a monotonic factory of its own (the process has one, `newId`; a test makes its own). */
export function idMaker(): (prefix: string, nowMs?: number) => string {
  const ulid = monotonicFactory(prng);
  return (prefix, nowMs = Date.now()) => `${prefix}_${ulid(nowMs).toLowerCase()}`;
}

const ulid = monotonicFactory(prng);

export const newId = idMaker();

/**
 * A UUID version 7 (RFC 9562), for resources whose contract types the id as a UUID: the 48-bit millisecond time
 * first, then the low 74 bits of a monotonic ULID's random part, so these too come out in creation order.
 */
export function newUuid7(nowMs = Date.now()): string {
  // Crockford base32 to a 128-bit number; the ULID's top 48 bits are the time, the low 80 its (counting) random part.
  const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  let n = 0n;
  for (const c of ulid(nowMs)) n = (n << 5n) | BigInt(CROCKFORD.indexOf(c));
  const time = n >> 80n;
  const randA = (n >> 62n) & 0xfffn;
  const randB = n & ((1n << 62n) - 1n);
  const value = (time << 80n) | (0x7n << 76n) | (randA << 64n) | (0b10n << 62n) | randB;
  const hex = value.toString(16).padStart(32, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
