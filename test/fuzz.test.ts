// Property test over every operation of the generated table: take a valid request built from the operation's
// schemas, break exactly one thing (a missing required field, a wrong type, an unknown enum value, a number out of
// range or not finite, an over-long string, a control character, an unknown property, a bad id, malformed JSON, an
// unknown or ill-typed query parameter), and expect a 4xx with the full envelope, `param` naming the broken field
// where one is at fault, and not a single row changed. Every operation gets its share of the FUZZ_RUNS cases on
// every run (at least one each): `npm run fuzz` runs 10,000; the suite runs 300.
//
// Then hostile shapes, which may be valid requests (so rows may change): a long unbroken string in any body string,
// a body field nested far past the 64 levels a body may nest (400 `nesting_too_deep` naming it), and, where a JSON
// Schema is sampled (`response_format`, `tools`), minItems in the hundreds of millions or arrays of arrays (400
// `unsupported_json_schema`). Never a 500; every refusal is the envelope.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type OperationId, operations } from '../generated/operations.ts';
import { MAX_BODY_DEPTH } from '../server/http/input.ts';
import { databaseDigest } from './support/digest.ts';
import { expectError } from './support/expect.ts';
import { controlled, deref, fillPath, jsonBodySchema, operationIds, operationSpec, pathParamNames, withMultipart } from './support/operations.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';
import { breakages, CONTROL, sample } from './support/schema-sample.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

interface Request {
  path: string;
  query: Record<string, unknown>;
  body?: unknown;
  raw?: string;
  /** Text fields of a multipart body (operations that take an upload). */
}

interface Case {
  operationId: OperationId;
  kind: string;
  /** The `param` the error must name; undefined: any (or none). */
  param: (random: Random) => string | null | undefined;
  build(valid: Request, random: Random): Request;
}

type Random = { name: string; pick: number };

function parameters(id: OperationId, where: 'query' | 'path'): any[] {
  return (operationSpec(id).parameters ?? []).map(deref).filter((p: any) => p.in === where);
}

function validRequest(id: OperationId): Request {
  const params = Object.fromEntries(parameters(id, 'path').map((p) => [p.name, String(sample(p.schema))]));
  for (const name of pathParamNames(id)) params[name] ??= 'x';
  const query = Object.fromEntries(
    parameters(id, 'query')
      .filter((p) => p.required)
      .map((p) => [p.name, sample(p.schema)]),
  );
  const bodySchema = jsonBodySchema(id);
  return { path: fillPath(id, params), query, body: bodySchema ? sample(bodySchema) : undefined };
}

/** A retired operation (`x-always-refused`) answers its refusal whatever the request: nothing of it is broken here. */
const retired = (id: OperationId) => operationSpec(id)['x-always-refused'] === true;
const bodyOf = (id: OperationId) => (retired(id) ? undefined : jsonBodySchema(id));

function casesFor(id: OperationId): Case[] {
  if (retired(id))
    return [{ operationId: id, kind: 'always_refused', param: () => null, build: (valid, r) => ({ ...valid, body: { [`zz_${r.name}`]: r.pick } }) }];
  const cases: Case[] = [];
  const bodySchema = bodyOf(id);
  if (bodySchema) {
    for (const b of breakages(bodySchema)) {
      cases.push({
        operationId: id,
        kind: `body.${b.kind}`,
        param: (r) => (b.kind === 'unknown_property' ? [...b.path, `zz_${r.name}`] : b.path).join('.') || null,
        build: (valid, r) => ({ ...valid, body: b.apply(valid.body, r) }),
      });
    }
    cases.push({ operationId: id, kind: 'body.malformed_json', param: () => null, build: (valid) => ({ ...valid, raw: '{"model": "x",' }) });
  }
  cases.push({
    operationId: id,
    kind: 'query.unknown',
    param: (r) => `zz_${r.name}`,
    build: (valid, r) => ({ ...valid, query: { ...valid.query, [`zz_${r.name}`]: '1' } }),
  });
  for (const p of parameters(id, 'query')) {
    const s = deref(p.schema);
    const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
    const bad = (kind: string, value: unknown) =>
      cases.push({ operationId: id, kind: `query.${kind}`, param: () => p.name, build: (valid) => ({ ...valid, query: { ...valid.query, [p.name]: value } }) });
    // A required parameter with a default is not missing when left out: the validator fills in its default.
    if (p.required && s.default === undefined) {
      cases.push({
        operationId: id,
        kind: 'query.missing',
        param: () => p.name,
        build: (valid) => ({ ...valid, query: Object.fromEntries(Object.entries(valid.query).filter(([k]) => k !== p.name)) }),
      });
    }
    if (types.includes('integer') || types.includes('number')) {
      bad('wrong_type', 'not-a-number');
      for (const v of ['Infinity', '-Infinity', '1e309']) bad('not_finite', v);
    }
    if (types.includes('string')) bad('control_character', `x${CONTROL[0]}x`);
    if (types.includes('boolean')) bad('wrong_type', 'maybe');
    if (s.enum) bad('unknown_enum', 'not-a-value');
    if (s.minimum !== undefined) bad('below_minimum', s.minimum - 1);
    if (s.maximum !== undefined) bad('above_maximum', s.maximum + 1);
    if (s.maxLength !== undefined) bad('too_long', 'x'.repeat(s.maxLength + 1));
  }
  for (const name of pathParamNames(id)) {
    cases.push({
      operationId: id,
      kind: 'path.control_character',
      param: () => name,
      build: (valid, r) => {
        const params = Object.fromEntries(pathParamNames(id).map((n) => [n, n === name ? `x${CONTROL[r.pick % CONTROL.length]}x` : 'x']));
        return { ...valid, path: fillPath(id, params) };
      },
    });
  }
  if (pathParamNames(id).length) {
    cases.push({
      operationId: id,
      kind: 'path.unknown_id',
      param: () => undefined,
      build: (valid, r) => {
        const params = Object.fromEntries(pathParamNames(id).map((n) => [n, `nope-${r.name}`]));
        return { ...valid, path: fillPath(id, params) };
      },
    });
  }
  return cases;
}

/** Each operation's share of the runs: an equal part, and at least one. */
const share = Math.max(1, Math.ceil(RUNS / operationIds.length));

async function send(c: Case, req: Request) {
  const op = operations[c.operationId];
  let r = t.http[op.method](req.path)
    .set('Authorization', `Bearer ${controlled(c.operationId) ? TEST_CONTROL_KEY : t.caller.key}`)
    .query(req.query as any);
  if (req.raw !== undefined) r = r.set('Content-Type', 'application/json').send(req.raw);
  else if (req.body !== undefined) r = r.send(req.body as object);
  else r = withMultipart(c.operationId, r, sample);
  return r;
}

test.each(operationIds)(
  `%s: its share of ${RUNS} broken requests, each a 4xx envelope naming the field, and no write`,
  async (id) => {
    const cases = casesFor(id);
    expect(cases.length, id).toBeGreaterThan(0);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...cases), fc.record({ name: fc.stringMatching(/^[a-z][a-z0-9_]{0,15}$/), pick: fc.nat(1000) }), async (c, random) => {
        const before = await databaseDigest(t.services.db);
        const req = c.build(validRequest(c.operationId), random);
        const res = await send(c, req);
        const context = `${c.operationId} ${c.kind}: ${JSON.stringify(req).slice(0, 300)} -> ${res.status} ${JSON.stringify(res.body)}`;
        expect(res.status, context).toBeGreaterThanOrEqual(400);
        expect(res.status, context).toBeLessThan(500);
        expectError(res, res.status);
        const param = c.param(random);
        if (param !== undefined) expect(res.body.error.param, context).toBe(param);
        if (c.kind.endsWith('control_character')) expect(res.body.error.code, context).toBe('invalid_characters');
        expect(await databaseDigest(t.services.db), `${context}: the database changed`).toBe(before);
      }),
      { numRuns: share },
    );
  },
  30_000 + share * 200,
);

// ---- hostile shapes ----------------------------------------------------------------------------------------------

interface Shape {
  kind: string;
  build(valid: Request, random: Random): Request;
  /** What the answer must be, beyond "not a 500, and the envelope when refused". */
  expect?: (random: Random) => { code: string; param: string | null };
}

/** JSON text nesting `levels` objects; as text, since JSON.stringify itself overflows its stack past a few thousand. */
const nestedText = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
const DEEP = '\u0000deep\u0000';
// 50 KB without a space: token counting is linear (long pieces merged in runs), so this costs milliseconds; it once
// cost 16 s a request.
const LONG = 50_000;

function shapesFor(id: OperationId): Shape[] {
  const bodySchema = bodyOf(id);
  if (!bodySchema) return [];
  const shapes: Shape[] = [];
  const fields = Object.keys(deref(bodySchema).properties ?? {});
  const fieldOf = (r: Random) => (fields.length ? fields[r.pick % fields.length]! : `zz_${r.name}`);
  shapes.push({
    kind: 'deep_nesting',
    build: (valid, r) => {
      const body = { ...(valid.body as object), [fieldOf(r)]: DEEP };
      return { ...valid, raw: JSON.stringify(body).replace(JSON.stringify(DEEP), nestedText(MAX_BODY_DEPTH + (r.pick % 10) ** 3 * 5)) };
    },
    expect: (r) => ({ code: 'nesting_too_deep', param: fieldOf(r) }),
  });
  const strings = breakages(bodySchema).filter((b) => b.kind === 'control_character');
  if (strings.length) {
    shapes.push({
      kind: 'long_string',
      build: (valid, r) => ({
        ...valid,
        body: strings[r.pick % strings.length]!.apply(valid.body, r, { value: r.name.repeat(Math.ceil((LONG + r.pick) / r.name.length)) }),
      }),
    });
  }
  const properties = deref(bodySchema).properties ?? {};
  const huge = (r: Random) => {
    const items = { type: 'integer' };
    const arrays = { type: 'array', minItems: 10_000, items: { type: 'array', minItems: 10_000, items: { type: 'array', minItems: 10, items } } };
    return [{ type: 'array', minItems: 100_000_000 + r.pick, items }, arrays][r.pick % 2];
  };
  // A response_format that takes a JSON Schema (chat's object); a string one (speech's audio format, images') has none to bloat.
  if ('response_format' in properties && deref(properties.response_format).type !== 'string') {
    shapes.push({
      kind: 'huge_min_items.response_format',
      build: (valid, r) => ({
        ...valid,
        body: { ...(valid.body as object), response_format: { type: 'json_schema', json_schema: { name: r.name, schema: huge(r) } } },
      }),
      expect: () => ({ code: 'unsupported_json_schema', param: 'response_format' }),
    });
  }
  if ('tools' in properties) {
    shapes.push({
      kind: 'huge_min_items.tools',
      build: (valid, r) => ({
        ...valid,
        body: {
          ...(valid.body as object),
          tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { xs: huge(r) }, required: ['xs'] } } }],
          tool_choice: 'required',
        },
      }),
      expect: () => ({ code: 'unsupported_json_schema', param: 'tools' }),
    });
  }
  return shapes;
}

const shaped = operationIds.filter((id) => shapesFor(id).length);

test.each(shaped)(
  '%s: hostile shapes (a long unbroken string, nesting past the limit, huge minItems): never a 500, refusals are envelopes',
  async (id) => {
    // Every shape of the operation, each its part of the operation's share (at least once).
    for (const shape of shapesFor(id)) {
      await fc.assert(
        fc.asyncProperty(fc.record({ name: fc.stringMatching(/^[a-z][a-z0-9_]{0,15}$/), pick: fc.nat(1000) }), async (random) => {
          const req = shape.build(validRequest(id), random);
          const res = await send({ operationId: id, kind: shape.kind, param: () => undefined, build: shape.build }, req);
          const context = `${id} ${shape.kind}: ${JSON.stringify(req).slice(0, 300)} -> ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
          expect(res.status, context).toBeLessThan(500);
          if (res.status >= 400) expectError(res, res.status);
          const expected = shape.expect?.(random);
          if (expected) {
            expect(res.status, context).toBe(400);
            expect({ code: res.body.error.code, param: res.body.error.param }, context).toEqual(expected);
          }
        }),
        { numRuns: Math.max(1, Math.ceil(share / 3)) },
      );
    }
  },
  60_000 + share * 2_000,
);
