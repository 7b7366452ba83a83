// An endpoint's analytics (GET .../endpoints/{id}/analytics): the time range and buckets a query asks for, and the
// figures of the ServedRequest rows inside them (served.ts). Nothing here is estimated: every number is counted from
// the rows.
import type { Clock } from '../../core/clock.ts';
import { badRequest } from '../../core/errors.ts';
import { figures, type ServedFigures } from './served.ts';

const SECOND = 1000;
const UNIT_MS: Record<string, number> = { s: SECOND, m: 60 * SECOND, h: 3600 * SECOND, d: 86_400 * SECOND };
export const DEFAULT_RANGE_MS = UNIT_MS.d!;
export const MAX_RANGE_MS = 31 * UNIT_MS.d!;
export const DEFAULT_GRANULARITY = '1d';
export const MAX_BUCKETS = 1440;

/** One served row, as analytics reads it. */
export interface Row {
  deploymentId: string;
  status: number;
  latencyMs: number;
  promptTokens: number;
  completionTokens: number;
  createdAt: bigint;
}

/** The figures of some rows over `ms` milliseconds, with the counts by status that `figures` does not keep. */
export interface Summary extends ServedFigures {
  seconds: number;
  byStatus: Map<number, number>;
}

export function summarize(rows: Row[], ms: number): Summary {
  const byStatus = new Map<number, number>();
  for (const r of rows) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
  return { ...figures(rows), seconds: ms / SECOND, byStatus };
}

/** `[since, until)` from the query: until defaults to now, since to a day before until; at most 31 days. */
export function timeRange(clock: Clock, q: { startTime?: string; endTime?: string }): { since: number; until: number } {
  const until = q.endTime !== undefined ? Date.parse(q.endTime) : clock.now();
  const since = q.startTime !== undefined ? Date.parse(q.startTime) : until - DEFAULT_RANGE_MS;
  if (since >= until) throw badRequest("'startTime' must be before 'endTime'.", 'startTime', 'invalid_time_range');
  if (until - since > MAX_RANGE_MS) throw badRequest('The time range may span at most 31 days.', 'startTime', 'invalid_time_range');
  return { since, until };
}

/** A granularity `<n>s|m|h|d` (n a positive whole number) in ms. */
export function granularityMs(g: string | undefined): number {
  const m = /^([1-9][0-9]{0,6})([smhd])$/.exec(g ?? DEFAULT_GRANULARITY);
  if (!m) {
    throw badRequest(`'${g}' is not a granularity: give a whole number of s, m, h or d, such as '5m' or '1h'.`, 'granularity', 'invalid_granularity');
  }
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

/** The buckets' starts: multiples of `size` since the epoch, from the one holding `since` to the one holding `until - 1`. */
export function bucketStarts(since: number, until: number, size: number): number[] {
  const first = Math.floor(since / size) * size;
  const last = Math.floor((until - 1) / size) * size;
  const count = (last - first) / size + 1;
  if (count > MAX_BUCKETS) {
    throw badRequest(`The range holds ${count} buckets of this granularity; at most ${MAX_BUCKETS} are answered.`, 'granularity', 'too_many_buckets');
  }
  return Array.from({ length: count }, (_, i) => first + i * size);
}

/** Rows (oldest first) split into the buckets starting at `starts`; each bucket's length is its part inside the range. */
export function bucketed(rows: Row[], starts: number[], size: number, since: number, until: number) {
  const out = starts.map((start) => ({ start, ms: Math.min(start + size, until) - Math.max(start, since), rows: [] as Row[] }));
  for (const r of rows) out[Math.floor((Number(r.createdAt) - starts[0]!) / size)]!.rows.push(r);
  return out;
}
