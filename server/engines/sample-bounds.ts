// How much the local engine will sample from a caller's JSON Schema (response_format, tool parameters). Ajv compiles
// each schema to code, in time that grows faster than the schema (2,000 properties of one object: seconds; 5,000:
// a stack overflow), so a schema's whole size (its objects, its arrays' entries, its characters) is bounded before
// it is compiled, in one pass on the event loop; what is within the bounds is compiled and sampled on a worker
// thread (pool.ts). The sampler (openapi-sampler) builds what
// the schema asks for, so `minItems: 100000000` would take seconds and gigabytes, and arrays of arrays multiply.
// Before sampling, the schema is walked once (each subschema per path, `$ref`s followed
// as the sampler follows them) for an upper bound of the sample's values and string characters; after sampling, its
// JSON is measured without being built. The bounds are documented in the Inference tag's description.

/** The documented bounds of one sample. */
export const SAMPLE_BOUNDS = {
  /** JSON values inside the sample (the sample itself aside): array items multiply (minItems 100 of minItems 100 is 10,100). */
  values: 10_000,
  /** Characters that `minLength`s ask for, all strings together. */
  characters: 1_000_000,
  /** The sample's JSON text, in bytes. */
  bytes: 1_000_000,
  /** How deep the sampler nests the instance (its `maxSampleDepth`). */
  depth: 32,
  /** JSON objects in the schema (subschemas, `properties` maps, definitions): what Ajv compiles in reasonable time. */
  objects: 1_000,
  /** Entries of the schema's arrays, all together (`enum` values, `required` names, `type` lists, `anyOf` items, ...). */
  entries: 10_000,
  /** Characters of the schema's strings and property names, all together. */
  schemaCharacters: 1_000_000,
  /** How deep subschemas and followed `$ref`s may nest in the walk (a guard for the walk itself). */
  walkDepth: 128,
} as const;

/** Subschemas visited at most: each visited subschema adds at least one value to the sample. */
const VISITS = 10 * SAMPLE_BOUNDS.values;

class Beyond extends Error {}

// biome-ignore lint/suspicious/noExplicitAny: a caller's schema, already compiled by Ajv.
type Schema = any;

const count = (n: unknown): number => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0);

/**
 * Why `schema` is too large to compile (a phrase naming the bound), or undefined: one pass over it, without
 * recursion, that stops at the first bound passed (an array is counted by its length before its entries are looked
 * at), so a schema of any size costs at most the bounds' work.
 */
export function beyondSchemaBounds(schema: object): string | undefined {
  const n = (x: number) => x.toLocaleString('en-US');
  let objects = 0;
  let entries = 0;
  let characters = 0;
  const stack: unknown[] = [schema];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') characters += v.length;
    if (v === null || typeof v !== 'object') {
      if (characters > SAMPLE_BOUNDS.schemaCharacters) break;
      continue;
    }
    if (Array.isArray(v)) {
      entries += v.length;
      if (entries > SAMPLE_BOUNDS.entries)
        return `its arrays (enum values, required names and the like) hold more than ${n(SAMPLE_BOUNDS.entries)} entries together, the most the local engine reads`;
      for (const item of v) stack.push(item);
      continue;
    }
    if (++objects > SAMPLE_BOUNDS.objects)
      return `it holds more than ${n(SAMPLE_BOUNDS.objects)} JSON objects (subschemas, property maps and definitions together), the most the local engine compiles`;
    for (const key in v) {
      characters += key.length;
      stack.push((v as Record<string, unknown>)[key]);
    }
    if (characters > SAMPLE_BOUNDS.schemaCharacters) break;
  }
  if (characters > SAMPLE_BOUNDS.schemaCharacters)
    return `its strings and property names hold more than ${n(SAMPLE_BOUNDS.schemaCharacters)} characters together, the most the local engine reads`;
  return undefined;
}

/** The subschema a local `$ref` (`#/$defs/x`, `#/definitions/x`, `#`) points at, or undefined. */
function resolve(root: Schema, ref: string): Schema {
  if (!ref.startsWith('#')) return undefined;
  let node = root;
  for (const token of ref.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/**
 * Why sampling `schema` would go beyond SAMPLE_BOUNDS (a phrase naming the bound), or undefined when it stays
 * within them. The estimate is an upper bound: every alternative of `anyOf`/`oneOf` counts, where the sampler
 * takes the first.
 */
export function beyondSampleBounds(schema: object): string | undefined {
  let visits = 0;
  const inProgress = new Set<string>();
  // [values, characters] of the sample of `s`.
  const walk = (s: Schema, depth: number): [number, number] => {
    if (++visits > VISITS) throw new Beyond(`it has more than ${VISITS.toLocaleString('en-US')} subschemas to sample, counting each $ref where it is used`);
    if (depth > SAMPLE_BOUNDS.walkDepth) throw new Beyond(`its subschemas and $refs nest more than ${SAMPLE_BOUNDS.walkDepth} deep`);
    if (s === null || typeof s !== 'object' || Array.isArray(s)) return [1, 0];
    let values = 1;
    let characters = 0;
    const add = (sub: Schema, times = 1) => {
      if (sub === undefined || times === 0) return;
      const [v, c] = walk(sub, depth + 1);
      values += v * times;
      characters += c * times;
    };
    if (typeof s.$ref === 'string') {
      // The sampler samples a $ref it is already inside as an empty value.
      if (!inProgress.has(s.$ref)) {
        inProgress.add(s.$ref);
        add(resolve(schema, s.$ref));
        inProgress.delete(s.$ref);
      }
    }
    characters += count(s.minLength);
    values += count(s.minProperties);
    for (const key of ['allOf', 'anyOf', 'oneOf']) if (Array.isArray(s[key])) for (const sub of s[key]) add(sub);
    for (const key of ['if', 'then', 'else']) add(s[key]);
    if (s.properties && typeof s.properties === 'object') for (const sub of Object.values(s.properties)) add(sub);
    if (s.additionalProperties && typeof s.additionalProperties === 'object') add(s.additionalProperties, 2);
    // As the sampler: minItems (at least 1, at most maxItems) items of `prefixItems`, `items` or `contains`; a list
    // of item schemas gives one item each, and plain values past it.
    const items = s.prefixItems ?? s.items ?? s.contains;
    if (items !== undefined) {
      const length = Math.min(s.maxItems ?? Number.POSITIVE_INFINITY, count(s.minItems) || 1);
      if (Array.isArray(items)) {
        for (const sub of items) add(sub);
        values += Math.max(0, length - items.length);
      } else add(items, length);
    }
    return [values, characters];
  };
  try {
    const [all, characters] = walk(schema, 0);
    // The values inside the sample: `minItems: 10000` of integers is 10,000.
    const values = all - 1;
    if (values > SAMPLE_BOUNDS.values)
      return `a sample of it holds ${values >= 1e15 ? 'more than 10^15' : values.toLocaleString('en-US')} values, over the ${SAMPLE_BOUNDS.values.toLocaleString('en-US')} the local engine samples`;
    if (characters > SAMPLE_BOUNDS.characters)
      return `its strings' minLength add up to ${characters >= 1e15 ? 'more than 10^15' : characters.toLocaleString('en-US')} characters, over the ${SAMPLE_BOUNDS.characters.toLocaleString('en-US')} the local engine samples`;
    return undefined;
  } catch (e) {
    if (e instanceof Beyond) return e.message;
    throw e;
  }
}

/** Whether `value`'s JSON text is longer than SAMPLE_BOUNDS.bytes, measured without building it (shared parts count each time). */
export function sampleTooLong(value: unknown): boolean {
  let bytes = 0;
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') bytes += Buffer.byteLength(v) + 2;
    else if (Array.isArray(v)) {
      bytes += 1 + v.length;
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      bytes += 1 + entries.length;
      for (const [k, item] of entries) {
        bytes += Buffer.byteLength(k) + 3;
        stack.push(item);
      }
    } else bytes += String(v).length;
    if (bytes > SAMPLE_BOUNDS.bytes) return true;
  }
  return false;
}
