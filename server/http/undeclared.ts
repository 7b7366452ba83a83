// biome-ignore-all lint/suspicious/noExplicitAny: the contract's schemas are walked as plain JSON.
// Open request bodies: the platform's contract leaves its request bodies open (only a few of its schemas say
// `additionalProperties: false`), so its clients send fields it does not declare (the openai client's `store`,
// `metadata`, `service_tier`, ...). Here every schema says what it declares (`additionalProperties: false`), and
// before validation the fields no schema of the value's place declares are taken out of the body and named, so the
// rest is validated exactly as written and handlers never see them. A schema marked `x-closed: true` (and all under
// it) keeps refusing them, as the platform's closed ones do; `STRICT_REQUESTS=on` refuses them everywhere (the
// validator then sees the body whole).

type Schema = Record<string, any>;

/** One shape a value may take: what it declares and whether fields it does not declare are refused. */
interface Shape {
  types: Set<string> | null;
  properties: Record<string, Schema>;
  /** `additionalProperties: false`: an undeclared field would be refused (so here it is taken out instead). */
  closed: boolean;
  /** `x-closed: true`: undeclared fields stay refused, here and under it. */
  refuses: boolean;
  items: Schema[];
}

/** The undeclared fields of request bodies, against one contract. */
export class Undeclared {
  private readonly shapes = new WeakMap<object, Shape[]>();

  constructor(private readonly doc: Schema) {}

  /**
   * Takes out of `body` (in place) every field that no schema of its place declares, where every schema of that place
   * is closed and none refuses them, and answers their dotted paths (`store`, `messages.0.refusal`).
   */
  take(schema: Schema, body: unknown): string[] {
    const taken: string[] = [];
    this.walk([schema], body, '', false, taken);
    return taken;
  }

  /** A schema with its `$ref` followed. */
  resolve(s: any): Schema | undefined {
    let n = s;
    for (let guard = 0; n && typeof n.$ref === 'string' && guard < 32; guard++) {
      n = n.$ref
        .replace(/^#\//, '')
        .split('/')
        .reduce((x: any, k: string) => x?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], this.doc);
    }
    return n && typeof n === 'object' ? n : undefined;
  }

  /** The shapes a schema allows: itself, or each branch of its `oneOf`/`anyOf` (with its own fields); `allOf` merged. */
  private shapesOf(s: any): Shape[] {
    const r = this.resolve(s);
    if (!r) return [];
    const known = this.shapes.get(r);
    if (known) return known;
    const own: Shape = {
      types: r.type === undefined ? null : new Set(Array.isArray(r.type) ? r.type : [r.type]),
      properties: { ...(r.properties ?? {}) },
      closed: r.additionalProperties === false,
      refuses: r['x-closed'] === true,
      items: r.items && typeof r.items === 'object' ? [r.items] : [],
    };
    for (const part of (r.allOf ?? []).flatMap((p: any) => this.shapesOf(p))) {
      Object.assign(own.properties, part.properties);
      own.closed ||= part.closed;
      own.refuses ||= part.refuses;
      own.items.push(...part.items);
    }
    const branches = [...(r.oneOf ?? []), ...(r.anyOf ?? [])].flatMap((b: any) => this.shapesOf(b));
    const out = branches.length
      ? branches.map((b) => ({
          types: b.types ?? own.types,
          properties: { ...own.properties, ...b.properties },
          closed: b.closed || own.closed,
          refuses: b.refuses || own.refuses,
          items: [...own.items, ...b.items],
        }))
      : [own];
    this.shapes.set(r, out);
    return out;
  }

  private walk(schemas: Schema[], value: unknown, at: string, refused: boolean, taken: string[]): void {
    if (value === null || typeof value !== 'object') return;
    const admits = (t: string) => (s: Shape) => s.types === null || s.types.has(t);
    const shapes = schemas.flatMap((s) => this.shapesOf(s));
    if (Array.isArray(value)) {
      const items = shapes.filter(admits('array')).flatMap((s) => s.items);
      if (items.length === 0) return;
      // Only objects and arrays can hold fields (a long list of numbers or texts is passed over).
      for (let i = 0; i < value.length; i++) {
        const v = value[i];
        if (v !== null && typeof v === 'object') this.walk(items, v, `${at}${i}.`, refused, taken);
      }
      return;
    }
    const objects = shapes.filter(admits('object'));
    if (objects.length === 0) return;
    const refuses = refused || objects.some((s) => s.refuses);
    const closed = objects.every((s) => s.closed);
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const declared = objects.filter((s) => Object.hasOwn(s.properties, key)).map((s) => s.properties[key]!);
      if (declared.length) this.walk(declared, record[key], `${at}${key}.`, refuses, taken);
      else if (closed && !refuses) {
        delete record[key];
        taken.push(`${at}${key}`);
      }
    }
  }
}

/** At most this many names go in the `x-ignored-fields` header (the rest are counted): a header has to stay small. */
const HEADER_NAMES = 20;

/**
 * The `x-ignored-fields` header's value: the names, comma-separated, each with any character outside printable
 * ASCII, and `%` and `,`, percent-encoded (UTF-8); past HEADER_NAMES names, `+<n> more`.
 */
export function ignoredFieldsHeader(names: string[]): string {
  // A lone surrogate has no UTF-8 form: it is written as U+FFFD's.
  const encode = (n: string) =>
    n.replace(/[^\x21-\x24\x26-\x2b\x2d-\x7e]/gu, (c) => (c.length === 1 && /[\ud800-\udfff]/.test(c) ? '%EF%BF%BD' : encodeURIComponent(c)));
  const shown = names.slice(0, HEADER_NAMES).map(encode);
  if (names.length > HEADER_NAMES) shown.push(`+${names.length - HEADER_NAMES} more`);
  return shown.join(', ');
}
