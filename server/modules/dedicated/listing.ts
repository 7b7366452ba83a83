// The lists of v2 endpoints and deployments: an AIP-160 `filter`, an AIP-132 `orderBy`, and cursor pages over
// them (the syntax is the spec tag's **Lists**). The lists are short (a project's endpoints, an endpoint's
// deployments), so each is read whole, then filtered, ordered and cut here.
import { badRequest } from '../../core/errors.ts';
import { cut, pageSize, pageToken } from '../../http/page.ts';

/** How a list reads one field of its rows, for `filter` and `orderBy`. */
export interface Field<T> {
  kind: 'string' | 'time' | 'enum';
  /** The value compared: a string, or an instant in milliseconds (`time`). */
  get: (row: T) => string | number;
  /** Turns a filter value into the form `get` answers (a qualified name into a bare one); null: it can match nothing. */
  value?: (v: string) => string | null;
  /** The values an `enum` field takes. */
  values?: readonly string[];
}

export type Fields<T> = Record<string, Field<T>>;

/** camelCase spellings of the fields, as the wire writes them. */
const ALIASES: Record<string, string> = { createdAt: 'created_at', updatedAt: 'updated_at' };
const ORDERABLE = new Set(['created_at', 'updated_at', 'name']);

type Op = '=' | '!=' | '<' | '<=' | '>' | '>=' | ':';
type Expr = { and: Expr[] } | { or: Expr[] } | { not: Expr } | { field: string; op: Op; value: string };

const invalidFilter = (why: string) => badRequest(`'filter' ${why}.`, 'filter', 'invalid_filter');

/** A recursive-descent parser of AIP-160's grammar: sequences and AND, OR (tighter than AND), NOT and `-`, parentheses. */
class FilterParser {
  private i = 0;
  constructor(private readonly s: string) {}

  parse(): Expr {
    const e = this.expression();
    this.skip();
    if (this.i < this.s.length) throw invalidFilter(`has an unexpected '${this.s[this.i]}' at position ${this.i + 1}`);
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
    if (this.s[this.i] !== ')') throw invalidFilter('misses a closing parenthesis');
    this.i++;
    return e;
  }

  private restriction(): Expr {
    const field = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.s.slice(this.i))?.[0];
    if (!field) throw invalidFilter(`expects a field name at position ${this.i + 1}`);
    this.i += field.length;
    this.skip();
    const op = /^(<=|>=|!=|=|<|>|:)/.exec(this.s.slice(this.i))?.[0] as Op | undefined;
    if (!op) throw invalidFilter(`expects an operator (=, !=, <, <=, >, >=, :) after '${field}'`);
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
      if (this.i >= this.s.length) throw invalidFilter(`has an unterminated string after '${field}'`);
      this.i++;
      return out;
    }
    const bare = /^[^\s()]+/.exec(this.s.slice(this.i))?.[0];
    if (!bare) throw invalidFilter(`expects a value after '${field}'`);
    this.i += bare.length;
    return bare;
  }
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function ordered<V extends string | number>(a: V, b: V): number {
  return a < b ? -1 : a > b ? 1 : 0;
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

function compile<T>(e: Expr, fields: Fields<T>): (row: T) => boolean {
  if ('and' in e) {
    const parts = e.and.map((x) => compile(x, fields));
    return (r) => parts.every((p) => p(r));
  }
  if ('or' in e) {
    const parts = e.or.map((x) => compile(x, fields));
    return (r) => parts.some((p) => p(r));
  }
  if ('not' in e) {
    const inner = compile(e.not, fields);
    return (r) => !inner(r);
  }
  const name = ALIASES[e.field] ?? e.field;
  const f = fields[name];
  if (!f) throw invalidFilter(`names no field '${e.field}' of this list (one of: ${Object.keys(fields).join(', ')})`);
  const { op } = e;
  if (f.kind === 'time') {
    const at = Date.parse(e.value);
    if (op === ':') throw invalidFilter(`cannot apply ':' to '${e.field}' (a timestamp: =, !=, <, <=, >, >=)`);
    if (!RFC3339.test(e.value) || Number.isNaN(at)) throw invalidFilter(`compares '${e.field}' with '${e.value}', which is not an RFC 3339 timestamp`);
    return (r) => holds(ordered(f.get(r) as number, at), op);
  }
  if (f.kind === 'enum') {
    if (!['=', '!=', ':'].includes(op)) throw invalidFilter(`cannot apply '${op}' to '${e.field}' (=, != or :)`);
    if (!f.values!.includes(e.value)) throw invalidFilter(`compares '${e.field}' with '${e.value}', which is not one of ${f.values!.join(', ')}`);
    return (r) => (f.get(r) === e.value) === (op !== '!=');
  }
  const v = f.value ? f.value(e.value) : e.value;
  if (v === null) return () => op === '!=';
  if (op === ':') return (r) => String(f.get(r)).includes(v);
  if (op === '=' || op === '!=') {
    const match = wildcard(v);
    return (r) => match(String(f.get(r))) === (op === '=');
  }
  return (r) => holds(ordered(String(f.get(r)), v), op);
}

/** The rows a `filter` keeps (all of them for an absent or blank one). */
export function filterRows<T>(rows: T[], filter: string | undefined, fields: Fields<T>): T[] {
  if (filter === undefined || filter.trim() === '') return rows;
  const keep = compile(new FilterParser(filter).parse(), fields);
  return rows.filter(keep);
}

interface OrderKey<T> {
  field: Field<T>;
  desc: boolean;
}

/** `orderBy`'s keys, and its canonical spelling (what a page token is bound to); null when absent or blank. */
function parseOrder<T>(orderBy: string | undefined, fields: Fields<T>): { keys: OrderKey<T>[]; spelling: string } | null {
  if (orderBy === undefined || orderBy.trim() === '') return null;
  const parts = orderBy.split(',').map((part) => {
    const [given = '', direction, ...extra] = part.trim().split(/\s+/);
    const name = ALIASES[given] ?? given;
    if (!ORDERABLE.has(name) || !fields[name] || extra.length > 0 || (direction !== undefined && direction !== 'asc' && direction !== 'desc')) {
      throw badRequest(
        `'orderBy' must be 'field [asc|desc]', comma-separated, over created_at, updated_at and name; '${part.trim()}' is not.`,
        'orderBy',
        'invalid_order_by',
      );
    }
    return { name, key: { field: fields[name]!, desc: direction === 'desc' } };
  });
  return { keys: parts.map((p) => p.key), spelling: parts.map((p) => `${p.name} ${p.key.desc ? 'desc' : 'asc'}`).join(',') };
}

export interface ListQuery {
  limit?: number;
  after?: string;
  filter?: string;
  orderBy?: string;
}

/**
 * One page of `rows` (ids are creation-ordered): filtered, ordered (by id without `orderBy`), and cut after the
 * cursor `after`. Without `orderBy` the cursor is the last row's id; with it, a page token of that order holding
 * the last row's sort values and id, so a page continues from a position whatever changed meanwhile.
 */
export function listPage<T extends { id: string }>(rows: T[], query: ListQuery, fields: Fields<T>): { rows: T[]; next: string } {
  const limit = pageSize(query.limit);
  const order = parseOrder(query.orderBy, fields);
  const kept = filterRows(rows, query.filter, fields);
  if (!order) {
    const { after } = query;
    const sorted = [...kept].sort((a, b) => ordered(a.id, b.id));
    const page = cut(after === undefined ? sorted : sorted.filter((r) => r.id > after), limit);
    return { rows: page.rows, next: page.next ?? '' };
  }
  type Position = (string | number)[];
  const position = (r: T): Position => [...order.keys.map((k) => k.field.get(r)), r.id];
  const compare = (a: Position, b: Position) => {
    for (const [i, k] of order.keys.entries()) {
      const c = ordered(a[i]!, b[i]!);
      if (c !== 0) return k.desc ? -c : c;
    }
    return ordered(a[order.keys.length]!, b[order.keys.length]!);
  };
  let list = kept.map((r) => ({ r, at: position(r) })).sort((a, b) => compare(a.at, b.at));
  if (query.after !== undefined) {
    const from = startOf(pageToken.decode(query.after, order.spelling, 'after'), order.keys.length + 1);
    list = list.filter((x) => compare(x.at, from) > 0);
  }
  const page = list.slice(0, limit);
  const next = list.length > limit ? pageToken.encode(JSON.stringify(page[page.length - 1]!.at), order.spelling) : '';
  return { rows: page.map((x) => x.r), next };
}

/** The position a page token holds (sort values, then an id). */
function startOf(cursor: string, length: number): (string | number)[] {
  let at: unknown;
  try {
    at = JSON.parse(cursor);
  } catch {
    // refused below
  }
  if (!Array.isArray(at) || at.length !== length || !at.every((v) => typeof v === 'string' || typeof v === 'number')) {
    throw badRequest("'after' is not a token of this listing.", 'after', 'invalid_page_token');
  }
  return at;
}

/** A name filter's value without its qualifying `prefix` (e.g. `<project_slug>/`); null when another prefix qualifies it. */
export function unqualified(value: string, prefix: string): string | null {
  if (value.startsWith(prefix)) return value.slice(prefix.length);
  return value.includes('/') ? null : value;
}
