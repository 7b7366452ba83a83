// Valid values from JSON Schemas of the spec, and the ways to break each one: the raw material of the fuzz test.
import fc from 'fast-check';
import { deref } from './operations.ts';

const typesOf = (s: any): string[] => (Array.isArray(s.type) ? s.type : s.type ? [s.type] : []);

function sampleString(s: any): string {
  if (s.pattern) {
    const [value] = fc.sample(
      fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length >= (s.minLength ?? 0) && v.length <= (s.maxLength ?? Infinity)),
      { numRuns: 1, seed: 42 },
    );
    return value;
  }
  switch (s.format) {
    case 'date-time':
      return '2026-01-01T00:00:00Z';
    case 'date':
      return '2026-01-01';
    case 'uri':
    case 'url':
      return 'https://example.com/resource';
    case 'uuid':
      return '00000000-0000-4000-8000-000000000000';
    case 'email':
      return 'someone@example.com';
  }
  const length = Math.max(s.minLength ?? 1, Math.min(1, s.maxLength ?? 1));
  return 'a'.repeat(length);
}

function sampleNumber(s: any, integer: boolean): number {
  let v = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + (integer ? 1 : 0.5) : undefined);
  if (v === undefined) v = s.maximum !== undefined ? Math.min(1, s.maximum) : 1;
  return v;
}

/** A value that satisfies the schema, preferring what the spec itself gives (examples, default, enum). */
export function sample(schema: any): any {
  const s = deref(schema);
  if (!s || typeof s !== 'object') return undefined;
  if (s.const !== undefined) return s.const;
  if (s.examples?.length) return structuredClone(s.examples[0]);
  if (s.default !== undefined) return structuredClone(s.default);
  if (s.enum) return s.enum.find((v: unknown) => v !== null) ?? s.enum[0];
  if (s.oneOf || s.anyOf) return sample((s.oneOf ?? s.anyOf).find((o: any) => !typesOf(deref(o)).includes('null')) ?? (s.oneOf ?? s.anyOf)[0]);
  if (s.allOf) return Object.assign({}, ...s.allOf.map(sample));
  const type = typesOf(s).find((t) => t !== 'null') ?? (s.properties ? 'object' : undefined);
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of s.required ?? []) out[name] = sample(s.properties?.[name] ?? {});
      return out;
    }
    case 'array':
      return Array.from({ length: s.minItems ?? 0 }, () => sample(s.items ?? {}));
    case 'string':
      return sampleString(s);
    case 'integer':
      return sampleNumber(s, true);
    case 'number':
      return sampleNumber(s, false);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return {};
  }
}

export type Path = (string | number)[];

/** One way to make a request invalid at one place, and the `param` the server must name for it. */
export interface Breakage {
  kind: string;
  path: Path;
  /**
   * Applies the breakage to a valid value; `random` varies what is put in (names, wrong values). `instead`, for the
   * breakages that put a value somewhere, puts that value there (the fuzzer's hostile shapes reuse the places).
   */
  apply(valid: any, random: { name: string; pick: number }, instead?: { value: unknown }): any;
}

/** Control characters no string may carry (tab, newline and carriage return are allowed in body strings). */
export const CONTROL = ['\u0000', '\u0001', '\u0008', '\u001b', '\u001f', '\u007f'];

const WRONG: Record<string, unknown[]> = {
  string: [12345, true, ['x'], { a: 1 }],
  integer: ['12', 1.5, true, [1], { a: 1 }],
  number: ['1.5', true, [1], { a: 1 }],
  boolean: ['true', 1, [true], { a: 1 }],
  array: ['x', 1, true, { a: 1 }],
  object: ['x', 1, true, [1]],
};

/** Whether `value` is of JSON-Schema type `type`. */
function jsonTypeMatches(type: string, value: unknown): boolean {
  switch (type) {
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'null':
      return value === null;
    default:
      return typeof value === type;
  }
}

function setAt(root: any, path: Path, fn: (parent: any, key: string | number) => void): any {
  const copy = structuredClone(root);
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key];
  fn(node, path[path.length - 1]);
  return copy;
}

/**
 * Every breakage reachable in `schema` (a request body's or a query's), walking required and optional properties
 * and array items; unions (oneOf/anyOf) are broken only as a whole, since their errors name the union.
 */
export function breakages(schema: any, path: Path = [], requiredHere = false): Breakage[] {
  const s = deref(schema);
  if (!s || typeof s !== 'object') return [];
  const out: Breakage[] = [];
  const put = (kind: string, value: (random: { name: string; pick: number }) => unknown) =>
    out.push({ kind, path, apply: (valid, random, instead) => setAt(valid, path, (parent, key) => (parent[key] = instead ? instead.value : value(random))) });

  // A required field with a default is not missing when left out: the validator fills in its default (the contract's
  // own form, e.g. the code interpreter's `language`).
  if (path.length && requiredHere && s.default === undefined) {
    out.push({ kind: 'missing', path, apply: (valid) => setAt(valid, path, (parent, key) => delete parent[key]) });
  }
  const types = typesOf(s);
  if (path.length && types.length && !s.oneOf && !s.anyOf) {
    const wrong = Object.values(WRONG)
      .flat()
      .filter((v, i, all) => all.indexOf(v) === i && !types.some((t) => jsonTypeMatches(t, v)));
    if (wrong.length) put('wrong_type', (r) => structuredClone(wrong[r.pick % wrong.length]));
  }
  if (!path.length) return [...out, ...children(s, path)];
  if (s.enum && types.includes('string')) put('unknown_enum', (r) => `not-a-value-${r.name}`);
  if (s.const !== undefined && typeof s.const === 'string') put('unknown_enum', (r) => `not-${s.const}-${r.name}`);
  if (types.includes('integer') || types.includes('number')) {
    if (s.minimum !== undefined) put('below_minimum', (r) => s.minimum - 1 - (r.pick % 5));
    if (s.exclusiveMinimum !== undefined) put('below_minimum', () => s.exclusiveMinimum);
    if (s.maximum !== undefined) put('above_maximum', (r) => s.maximum + 1 + (r.pick % 5));
    if (s.exclusiveMaximum !== undefined) put('above_maximum', () => s.exclusiveMaximum);
  }
  // A control character in any string is refused before the rest of the request is looked at.
  if (types.includes('string')) put('control_character', (r) => `x${CONTROL[r.pick % CONTROL.length]}x`);
  if (types.includes('string') && !s.enum) {
    if (s.maxLength !== undefined) put('too_long', (r) => 'x'.repeat(s.maxLength + 1 + (r.pick % 50)));
    if (s.minLength) put('too_short', () => '');
    if (s.pattern && !new RegExp(s.pattern).test(' !! ')) put('pattern', () => ' !! ');
  }
  if (types.includes('array')) {
    if (s.maxItems !== undefined) put('too_many_items', () => Array.from({ length: s.maxItems + 1 }, () => sample(s.items ?? {})));
    if (s.minItems) put('too_few_items', () => []);
  }
  return [...out, ...children(s, path)];
}

function children(s: any, path: Path): Breakage[] {
  if (s.oneOf || s.anyOf) return [];
  const out: Breakage[] = [];
  if (s.properties) {
    for (const [name, prop] of Object.entries<any>(s.properties)) {
      if (deref(prop).readOnly) continue;
      const required = (s.required ?? []).includes(name);
      // An optional field is broken after being given a valid value.
      for (const b of breakages(prop, [...path, name], required)) {
        out.push(
          required
            ? b
            : {
                ...b,
                apply: (valid, r, instead) =>
                  b.apply(
                    setAt(valid, [...path, name], (parent, key) => (parent[key] = sample(prop))),
                    r,
                    instead,
                  ),
              },
        );
      }
    }
    // Only a closed schema refuses an undeclared field; elsewhere it is ignored (open bodies: test/open-bodies.test.ts).
    if (s.additionalProperties === false && s['x-closed'] === true) {
      out.push({
        kind: 'unknown_property',
        path,
        apply: (valid, r) => {
          const copy = structuredClone(valid);
          let node = copy;
          for (const key of path) node = node[key];
          node[`zz_${r.name}`] = 1;
          return copy;
        },
      });
    }
  }
  const items = deref(s.items);
  if (items && typeof items === 'object') {
    // Break the first element of an array of the fewest elements allowed (at least one), so that only it is wrong.
    const length = Math.max(1, s.minItems ?? 0);
    for (const b of breakages(items, [...path, 0], false)) {
      if (b.kind === 'missing') continue;
      out.push({
        ...b,
        apply: (valid, r, instead) =>
          b.apply(
            setAt(valid, path, (parent, key) => (parent[key] = Array.from({ length }, () => sample(items)))),
            r,
            instead,
          ),
      });
    }
  }
  return out;
}
