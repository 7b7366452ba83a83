// The one list kit: page size, filter (AIP-160), order (AIP-132) and cursors, with one rule each (the contract's
// **Lists**, in spec/openapi.yaml). A list declares its fields (how each is read from a row, whether it can be
// ordered by) and the names its parameters have on the wire; the kit does the rest. Two ways to page:
// - `listPage`: a short list (a project's endpoints, an instance's remediations) read whole, then filtered,
//   ordered and cut here, with a cursor that is a position in the order;
// - `pageArgs` + `cut`: a long list paged by the database in id order (ids start with their creation time, so id
//   order is creation order), fetched as `limit + 1` rows to learn whether more follow.
import { badRequest } from '../core/errors.ts';

export const DEFAULT_PAGE = 50;
export const LARGEST_PAGE = 100;

/**
 * The page size asked for (AIP-158): the default when absent or 0 (the server chooses), at most the largest page (a
 * larger one is coerced down, not refused); a negative one is 400 `invalid_limit` naming the parameter.
 */
export function pageSize(asked: number | undefined, param = 'limit', fallback = DEFAULT_PAGE): number {
  if (asked !== undefined && asked < 0) throw badRequest(`'${param}' must not be negative (0 or absent: ${fallback}).`, param, 'invalid_limit');
  return !asked ? fallback : Math.min(asked, LARGEST_PAGE);
}

export type Value = string | number | null;

/** How a list reads one field of its rows, for `filter` and the order. */
export interface Field<T> {
  kind: 'string' | 'time' | 'enum';
  /** The value compared: a string, an instant in milliseconds (`time`), or null when the row has none. */
  get: (row: T) => Value;
  /** Turns a filter value into the form `get` answers (a qualified name into a bare one); null: it can match nothing. */
  value?: (v: string) => string | null;
  /** The values an `enum` field takes. */
  values?: readonly string[];
  /** Whether the order may name the field (default: yes). */
  orderable?: boolean;
}

export type Fields<T> = Record<string, Field<T>>;

export interface ListSpec<T> {
  fields: Fields<T>;
  /** The wire names of the list's parameters, as refusals name them. */
  params: { size: string; cursor: string; order?: string; filter?: string };
  /** Other spellings of field names (e.g. camelCase ones). */
  aliases?: Record<string, string>;
  /** The order when none is asked for (e.g. `create_time desc`); absent: id order, with the last id as the cursor. */
  defaultOrder?: string;
  defaultSize?: number;
}

export interface ListQuery {
  size?: number;
  cursor?: string;
  filter?: string;
  order?: string;
}

// ---- filter: AIP-160 ----

type Op = '=' | '!=' | '<' | '<=' | '>' | '>=' | ':';
type Expr = { and: Expr[] } | { or: Expr[] } | { not: Expr } | { field: string; op: Op; value: string };

/** A recursive-descent parser of AIP-160's grammar: sequences and AND, OR (tighter than AND), NOT and `-`, parentheses. */
class FilterParser {
  private i = 0;
  constructor(
    private readonly s: string,
    private readonly refuse: (why: string) => Error,
  ) {}

  parse(): Expr {
    const e = this.expression();
    this.skip();
    if (this.i < this.s.length) throw this.refuse(`has an unexpected '${this.s[this.i]}' at position ${this.i + 1}`);
    return e;
  }

  private skip(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i]!)) this.i++;
  }

  /** Whether the keyword `word` (followed by a space or a parenthesis) comes next. */
  private keyword(word: string): boolean {
    this.skip();
    const after = this.s[this.i + word.length];
    return this.s.startsWith(word, this.i) && (after === undefined || /[\s(]/.test(after));
  }

  private expression(): Expr {
    const items = [this.factor()];
    for (;;) {
      this.skip();
      if (this.i >= this.s.length || this.s[this.i] === ')') break;
      if (this.keyword('AND')) this.i += 3;
      items.push(this.factor());
    }
    return items.length === 1 ? items[0]! : { and: items };
  }

  private factor(): Expr {
    const items = [this.term()];
    while (this.keyword('OR')) {
      this.i += 2;
      items.push(this.term());
    }
    return items.length === 1 ? items[0]! : { or: items };
  }

  private term(): Expr {
    if (this.keyword('NOT')) {
      this.i += 3;
      return { not: this.term() };
    }
    if (this.s[this.i] === '-') {
      this.i++;
      return { not: this.simple() };
    }
    return this.simple();
  }

  private simple(): Expr {
    this.skip();
    if (this.s[this.i] !== '(') return this.restriction();
    this.i++;
    const e = this.expression();
    this.skip();
    if (this.s[this.i] !== ')') throw this.refuse('misses a closing parenthesis');
    this.i++;
    return e;
  }

  private restriction(): Expr {
    const field = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.s.slice(this.i))?.[0];
    if (!field) throw this.refuse(`expects a field name at position ${this.i + 1}`);
    this.i += field.length;
    this.skip();
    const op = /^(<=|>=|!=|=|<|>|:)/.exec(this.s.slice(this.i))?.[0] as Op | undefined;
    if (!op) throw this.refuse(`expects an operator (=, !=, <, <=, >, >=, :) after '${field}'`);
    this.i += op.length;
    this.skip();
    return { field, op, value: this.value(field) };
  }

  private value(field: string): string {
    const quote = this.s[this.i];
    if (quote === '"' || quote === "'") {
      let out = '';
      for (this.i++; this.i < this.s.length && this.s[this.i] !== quote; this.i++) {
        if (this.s[this.i] === '\\' && this.i + 1 < this.s.length) this.i++;
        out += this.s[this.i];
      }
      if (this.i >= this.s.length) throw this.refuse(`has an unterminated string after '${field}'`);
      this.i++;
      return out;
    }
    const bare = /^[^\s()]+/.exec(this.s.slice(this.i))?.[0];
    if (!bare) throw this.refuse(`expects a value after '${field}'`);
    this.i += bare.length;
    return bare;
  }
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Absent values sort before present ones (so last when descending); strings by code point. */
function compareValues(a: Value, b: Value): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a < b ? -1 : 1;
}

const holds = (c: number, op: Op) => (op === '=' ? c === 0 : op === '!=' ? c !== 0 : op === '<' ? c < 0 : op === '<=' ? c <= 0 : op === '>' ? c > 0 : c >= 0);

/** `=` with a leading and/or trailing `*` as a wildcard. */
function wildcard(pattern: string): (v: string) => boolean {
  const head = pattern.startsWith('*');
  const tail = pattern.length > 1 && pattern.endsWith('*');
  const core = pattern.slice(head ? 1 : 0, tail ? -1 : undefined);
  if (head && tail) return (v) => v.includes(core);
  if (head) return (v) => v.endsWith(core);
  if (tail) return (v) => v.startsWith(core);
  return (v) => v === core;
}

function compile<T>(e: Expr, spec: ListSpec<T>, refuse: (why: string) => Error): (row: T) => boolean {
  if ('and' in e) {
    const parts = e.and.map((x) => compile(x, spec, refuse));
    return (r) => parts.every((p) => p(r));
  }
  if ('or' in e) {
    const parts = e.or.map((x) => compile(x, spec, refuse));
    return (r) => parts.some((p) => p(r));
  }
  if ('not' in e) {
    const inner = compile(e.not, spec, refuse);
    return (r) => !inner(r);
  }
  const f = spec.fields[spec.aliases?.[e.field] ?? e.field];
  if (!f) throw refuse(`names no field '${e.field}' of this list (one of: ${Object.keys(spec.fields).join(', ')})`);
  const { op } = e;
  if (f.kind === 'time') {
    const at = Date.parse(e.value);
    if (op === ':') throw refuse(`cannot apply ':' to '${e.field}' (a timestamp: =, !=, <, <=, >, >=)`);
    if (!RFC3339.test(e.value) || Number.isNaN(at)) throw refuse(`compares '${e.field}' with '${e.value}', which is not an RFC 3339 timestamp`);
    return (r) => holds(compareValues(f.get(r), at), op);
  }
  if (f.kind === 'enum') {
    if (!['=', '!=', ':'].includes(op)) throw refuse(`cannot apply '${op}' to '${e.field}' (=, != or :)`);
    if (!f.values!.includes(e.value)) throw refuse(`compares '${e.field}' with '${e.value}', which is not one of ${f.values!.join(', ')}`);
    return (r) => (f.get(r) === e.value) === (op !== '!=');
  }
  const v = f.value ? f.value(e.value) : e.value;
  if (v === null) return () => op === '!=';
  if (op === ':') return (r) => String(f.get(r) ?? '').includes(v);
  if (op === '=' || op === '!=') {
    const match = wildcard(v);
    return (r) => match(String(f.get(r) ?? '')) === (op === '=');
  }
  return (r) => holds(compareValues(String(f.get(r) ?? ''), v), op);
}

/** The rows a `filter` keeps (all of them for an absent or blank one). */
export function filterRows<T>(rows: T[], filter: string | undefined, spec: ListSpec<T>): T[] {
  if (filter === undefined || filter.trim() === '') return rows;
  const param = spec.params.filter ?? 'filter';
  const refuse = (why: string) => badRequest(`'${param}' ${why}.`, param, 'invalid_filter');
  const keep = compile(new FilterParser(filter, refuse).parse(), spec, refuse);
  return rows.filter(keep);
}

// ---- order: AIP-132 ----

interface Term<T> {
  name: string;
  get: (row: T) => Value;
  desc: boolean;
}

/**
 * The order `expression` asks for: comma-separated `field [asc|desc]` terms (direction in any case, ascending when
 * left out) over the list's orderable fields; anything else is 400 `invalid_order_by` naming the parameter. Ties
 * are broken by id, in the first term's direction. Absent or blank: the list's default order.
 */
function parseOrder<T extends { id: string }>(expression: string | undefined, spec: ListSpec<T>): Term<T>[] | null {
  const asked = expression?.trim() ? expression : spec.defaultOrder;
  if (!asked) return null;
  const param = spec.params.order ?? 'orderBy';
  const orderable = Object.entries(spec.fields).filter(([, f]) => f.orderable !== false);
  const terms = asked.split(',').map((part): Term<T> => {
    const [given = '', direction, ...extra] = part.trim().split(/\s+/);
    const name = spec.aliases?.[given] ?? given;
    const field = orderable.find(([n]) => n === name)?.[1];
    if (!field || extra.length > 0 || (direction !== undefined && !/^(asc|desc)$/i.test(direction))) {
      throw badRequest(
        `'${param}' must be 'field [asc|desc]', comma-separated, over ${orderable.map(([n]) => n).join(', ')}; '${part.trim()}' is not.`,
        param,
        'invalid_order_by',
      );
    }
    return { name, get: field.get, desc: direction?.toLowerCase() === 'desc' };
  });
  if (!terms.some((t) => t.name === 'id')) terms.push({ name: 'id', get: (r) => r.id, desc: terms[0]!.desc });
  return terms;
}

/** Opaque page tokens: a cursor bound to the listing's order, so a token of one order is refused by another. */
export const pageToken = {
  encode: (cursor: string, order: string) => Buffer.from(JSON.stringify({ k: cursor, o: order })).toString('base64url'),
  decode(token: string, order: string, param = 'page_token'): string {
    let parsed: { k?: unknown; o?: unknown } = {};
    try {
      parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    } catch {
      // refused below
    }
    if (typeof parsed.k !== 'string' || parsed.o !== order) {
      throw badRequest(`'${param}' is not a token of this listing (or was made for another order).`, param, 'invalid_page_token');
    }
    return parsed.k;
  },
};

/** The position a token holds (a value per term); anything else is refused like a foreign token. */
function positionOf(token: string, spelling: string, length: number, param: string): Value[] {
  const cursor = pageToken.decode(token, spelling, param);
  let at: unknown;
  try {
    at = JSON.parse(cursor);
  } catch {
    // refused below
  }
  if (!Array.isArray(at) || at.length !== length || !at.every((v) => v === null || typeof v === 'string' || typeof v === 'number')) {
    throw badRequest(`'${param}' is not a token of this listing (or was made for another order).`, param, 'invalid_page_token');
  }
  return at;
}

// ---- pages ----

/**
 * One page of a short list read whole: filtered, ordered and cut after the cursor. In id order (no order asked and
 * none by default) the cursor is the last row's id and any id is a starting point; in another order it is an opaque
 * token of that order holding the last row's position (its sort values and id), so a page continues from a position
 * whatever changed meanwhile, and a token of another order is 400 `invalid_page_token`. `next` is "" on the last page.
 */
export function listPage<T extends { id: string }>(rows: T[], query: ListQuery, spec: ListSpec<T>): { rows: T[]; next: string } {
  const size = pageSize(query.size, spec.params.size, spec.defaultSize);
  const terms = parseOrder(query.order, spec);
  const kept = filterRows(rows, query.filter, spec);
  if (!terms) {
    const { cursor } = query;
    const sorted = [...kept].sort((a, b) => compareValues(a.id, b.id));
    const page = cut(cursor ? sorted.filter((r) => r.id > cursor) : sorted, size);
    return { rows: page.rows, next: page.next ?? '' };
  }
  const spelling = terms.map((t) => `${t.name} ${t.desc ? 'desc' : 'asc'}`).join(',');
  const compare = (a: Value[], b: Value[]) => {
    for (const [i, t] of terms.entries()) {
      const c = compareValues(a[i]!, b[i]!);
      if (c !== 0) return t.desc ? -c : c;
    }
    return 0;
  };
  let list = kept.map((r) => ({ r, at: terms.map((t) => t.get(r)) })).sort((a, b) => compare(a.at, b.at));
  if (query.cursor) {
    const from = positionOf(query.cursor, spelling, terms.length, spec.params.cursor);
    list = list.filter((x) => compare(x.at, from) > 0);
  }
  const page = list.slice(0, size);
  const next = list.length > size ? pageToken.encode(JSON.stringify(page[page.length - 1]!.at), spelling) : '';
  return { rows: page.map((x) => x.r), next };
}

/** Prisma arguments for the page after `after` (an id), in id order. */
export function pageArgs(after: string | undefined, limit: number, direction: 'asc' | 'desc' = 'asc') {
  return {
    where: after === undefined ? {} : { id: direction === 'asc' ? { gt: after } : { lt: after } },
    orderBy: { id: direction },
    take: limit + 1,
  };
}

/** Cuts the `limit + 1` rows fetched to a page; `next` is the cursor of the following page, null on the last. */
export function cut<T extends { id: string }>(rows: T[], limit: number): { rows: T[]; next: string | null } {
  const kept = rows.slice(0, limit);
  return { rows: kept, next: rows.length > limit ? kept[kept.length - 1]!.id : null };
}
