// How listRemediations orders and pages: `order_by` is an ordering expression (comma-separated `field [asc|desc]`
// terms, as the platform's list APIs take them), `page_size` a request the server bounds, and `page_token` a cursor
// that names the last remediation shown by its sort key, bound to the ordering it was made for. An instance has few
// remediations, so they are ordered here, not by the database: every field below sorts alike on SQLite and
// PostgreSQL, and the cursor stays exact when rows change between pages.
import type { Remediation } from '../../../generated/prisma/sqlite/client/client.ts';
import { badRequest } from '../../core/errors.ts';
import { pageToken } from '../../http/page.ts';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

/** A page size as asked, bounded: absent, 0 or negative is the default (50); above 100 is 100. */
export function pageSizeOf(asked: number | undefined): number {
  if (asked === undefined || asked <= 0) return DEFAULT_PAGE_SIZE;
  return Math.min(asked, MAX_PAGE_SIZE);
}

type Value = string | number | null;

/** The fields a remediation can be ordered by (its wire names), each read from the row. */
const FIELDS: Record<string, (r: Remediation) => Value> = {
  id: (r) => r.id,
  create_time: (r) => Number(r.createTime),
  update_time: (r) => Number(r.updateTime),
  start_time: (r) => (r.startTime === null ? null : Number(r.startTime)),
  end_time: (r) => (r.endTime === null ? null : Number(r.endTime)),
  review_time: (r) => (r.reviewTime === null ? null : Number(r.reviewTime)),
  state: (r) => r.state,
  mode: (r) => r.mode,
  trigger: (r) => r.trigger,
  reason: (r) => r.reason,
  requested_by: (r) => r.requestedBy,
  reviewed_by: (r) => r.reviewedBy,
  error_message: (r) => r.errorMessage,
};

export interface Term {
  field: string;
  desc: boolean;
}

/**
 * The ordering an `order_by` asks for. Absent or empty: newest first (`create_time desc`). A term's direction is
 * `asc` (the default when none is given, so `create_time` alone is ascending) or `desc`, in any case. Terms naming a
 * field remediations are not ordered by, or not of the form `field [asc|desc]`, are ignored; when none is left, the
 * default applies. Ties are broken by `id` (creation order) in the first term's direction.
 */
export function orderOf(orderBy: string | undefined): Term[] {
  const terms: Term[] = [];
  for (const part of (orderBy ?? '').split(',')) {
    const m = /^\s*([A-Za-z_]+)(?:\s+(asc|desc))?\s*$/i.exec(part);
    if (!m || !(m[1] in FIELDS) || terms.some((t) => t.field === m[1])) continue;
    terms.push({ field: m[1], desc: m[2]?.toLowerCase() === 'desc' });
  }
  if (terms.length === 0) terms.push({ field: 'create_time', desc: true });
  if (!terms.some((t) => t.field === 'id')) terms.push({ field: 'id', desc: terms[0].desc });
  return terms;
}

/** The sort key a token names; anything else in a token of this ordering is refused like a foreign token. */
function cursorOf(token: string, order: string, length: number): Value[] {
  const cursor = pageToken.decode(token, order);
  try {
    const key = JSON.parse(cursor) as unknown;
    if (Array.isArray(key) && key.length === length && key.every((v) => v === null || typeof v === 'string' || typeof v === 'number')) return key as Value[];
  } catch {
    // refused below
  }
  throw badRequest(`'page_token' is not a token of this listing (or was made for another order).`, 'page_token', 'invalid_page_token');
}

const keyOf = (terms: Term[], r: Remediation): Value[] => terms.map((t) => FIELDS[t.field](r));

/** Absent values sort before present ones (so last in a descending term). */
function compareValues(a: Value, b: Value): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a < b ? -1 : 1;
}

function compareKeys(terms: Term[], a: Value[], b: Value[]): number {
  for (let i = 0; i < terms.length; i++) {
    const c = compareValues(a[i], b[i]);
    if (c !== 0) return terms[i].desc ? -c : c;
  }
  return 0;
}

/**
 * One page of `rows` in the order `terms`, after the cursor in `token` (made by a previous page of the same
 * ordering; another ordering's token, or one this server did not make, is refused with 400 `invalid_page_token`).
 * An empty token is the first page.
 */
export function pageOf(rows: Remediation[], terms: Term[], size: number, token: string | undefined) {
  const order = terms.map((t) => `${t.field} ${t.desc ? 'desc' : 'asc'}`).join(',');
  const after = token ? cursorOf(token, order, terms.length) : undefined;
  const sorted = rows.map((r) => ({ r, key: keyOf(terms, r) })).sort((a, b) => compareKeys(terms, a.key, b.key));
  const rest = after ? sorted.filter((x) => compareKeys(terms, x.key, after) > 0) : sorted;
  const page = rest.slice(0, size);
  const hasNext = rest.length > size;
  return {
    rows: page.map((x) => x.r),
    hasNext,
    nextToken: hasNext ? pageToken.encode(JSON.stringify(page[page.length - 1].key), order) : '',
  };
}
