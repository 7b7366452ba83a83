// Compares our contract with the platform's (spec/reference/platform-contract.json), operation by operation:
// - requests: everything the platform accepts must be accepted here: each parameter and body property it declares is
//   declared here too (an undeclared one would be ignored), every enum value it allows is allowed, no
//   limit is narrower, no pattern or format is added, and nothing is required here that it does not require;
// - responses: every property the platform marks required is in our response schema (and required there), and no
//   property we share has a type or enum the platform's clients would not expect.
// Operations match by method and path: the platform's paths are relative to its servers (`/whoami` is `/v1/whoami`
// here; an operation whose server ends in `/v2` maps to `/v2/...`), path parameters match by position.

type Schema = Record<string, any>;

export interface Doc {
  paths: Record<string, Record<string, any>>;
  components?: { schemas?: Record<string, Schema>; parameters?: Record<string, any>; responses?: Record<string, any>; requestBodies?: Record<string, any> };
  servers?: { url: string }[];
}

export interface Problem {
  /** Our operationId. */
  operation: string;
  side: 'request' | 'response';
  /** Where: `query.limit`, `path.id`, `body.content.source_prefix`, `response.user_id`. */
  field: string;
  kind: string;
  detail: string;
}

export interface SharedOperation {
  key: string;
  ours: { id: string; op: any };
  theirs: { id: string; op: any };
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

/** Resolves a `$ref` (JSON pointer into the same document). */
function resolve(doc: Doc, node: any): any {
  let n = node;
  for (let guard = 0; n && typeof n === 'object' && typeof n.$ref === 'string' && guard < 32; guard++) {
    const { $ref, ...siblings } = n;
    const target = $ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((x: any, k: string) => x?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    n = Object.keys(siblings).length ? { ...target, ...siblings } : target;
  }
  return n;
}

/** A schema with its `$ref`s resolved and its `allOf` merged (properties and required lists united). */
export function flat(doc: Doc, s: any): Schema {
  const r = resolve(doc, s);
  if (!r || typeof r !== 'object') return {};
  if (!r.allOf) return r;
  const { allOf, ...rest } = r;
  const out: Schema = { ...rest };
  for (const part of allOf.map((p: any) => flat(doc, p))) {
    for (const [k, v] of Object.entries(part)) {
      if (k === 'properties') out.properties = { ...out.properties, ...(v as object) };
      else if (k === 'required') out.required = [...new Set([...(out.required ?? []), ...(v as string[])])];
      else if (out[k] === undefined) out[k] = v;
    }
  }
  return out;
}

function types(s: Schema): Set<string> {
  const t = new Set<string>(Array.isArray(s.type) ? s.type : s.type ? [s.type] : []);
  if (s.nullable) t.add('null');
  if (t.size === 0 && s.enum) for (const v of s.enum) t.add(v === null ? 'null' : Number.isInteger(v) ? 'integer' : typeof v);
  if (t.size === 0 && s.const !== undefined) t.add(s.const === null ? 'null' : typeof s.const);
  if (t.size === 0 && s.properties) t.add('object');
  return t;
}

/** Whether values of type `t` are of one of `accepted` (an integer is a number). */
const covered = (t: string, accepted: Set<string>) => accepted.has(t) || (t === 'integer' && accepted.has('number'));
const variants = (s: Schema): any[] | undefined => s.oneOf ?? s.anyOf;
const enumOf = (s: Schema): unknown[] | undefined => s.enum ?? (s.const !== undefined ? [s.const] : undefined);
const free = (s: Schema) =>
  Object.keys(s).filter((k) => !['description', 'title', 'examples', 'default', 'deprecated', 'readOnly', 'writeOnly'].includes(k)).length === 0;

type Sink = (field: string, kind: string, detail: string) => void;

/**
 * Request side: does `ours` accept every value `theirs` accepts? `refused`: a schema above marks `x-closed`, so
 * undeclared fields are refused here (elsewhere they are ignored: http/undeclared.ts); openness must match theirs.
 */
export function accepts(doc: { theirs: Doc; ours: Doc }, theirs: any, ours: any, field: string, report: Sink, refused = false): void {
  const p = flat(doc.theirs, theirs);
  const o = flat(doc.ours, ours);
  if (free(p) || free(o)) return;
  const refuses = refused || o['x-closed'] === true;
  const pv = variants(p);
  const ov = variants(o);
  if (pv || ov) {
    // Each of their shapes must be accepted whole by one of ours; report the closest one's gaps.
    for (const v of pv ?? [p]) {
      const attempts = (ov ?? [o]).map((candidate) => {
        const found: [string, string, string][] = [];
        accepts(doc, v, candidate, field, (...x) => found.push(x), refuses);
        return found;
      });
      const best = attempts.reduce((a, b) => (b.length < a.length ? b : a));
      for (const x of best) report(...x);
    }
    return;
  }
  const pt = types(p);
  const ot = types(o);
  if (ot.size) for (const t of pt) if (!covered(t, ot)) report(field, 'type', `the platform accepts ${t}, this server ${[...ot].join('|')}`);
  const pe = enumOf(p);
  const oe = enumOf(o);
  if (oe && pe) {
    const missing = pe.filter((v) => !oe.some((x) => JSON.stringify(x) === JSON.stringify(v)));
    if (missing.length) report(field, 'enum', `values the platform accepts are refused here: ${missing.map((v) => JSON.stringify(v)).join(', ')}`);
  } else if (oe && !pe && !(pt.size === 1 && pt.has('boolean'))) {
    report(field, 'enum', `this server allows only ${oe.map((v) => JSON.stringify(v)).join(', ')}; the platform takes any ${[...pt].join('|') || 'value'}`);
  }
  const narrower = (key: string, tighter: (ours: number, theirs: number) => boolean) => {
    if (o[key] === undefined) return;
    if (p[key] === undefined || tighter(o[key], p[key])) report(field, 'limit', `${key} ${o[key]} here, ${p[key] ?? 'none'} on the platform`);
  };
  narrower('minimum', (a, b) => a > b);
  narrower('exclusiveMinimum', (a, b) => a > b);
  narrower('maximum', (a, b) => a < b);
  narrower('exclusiveMaximum', (a, b) => a < b);
  narrower('minLength', (a, b) => a > b);
  narrower('maxLength', (a, b) => a < b);
  narrower('minItems', (a, b) => a > b);
  narrower('maxItems', (a, b) => a < b);
  if (o.pattern && o.pattern !== p.pattern) report(field, 'pattern', `this server requires /${o.pattern}/${p.pattern ? `, the platform /${p.pattern}/` : ''}`);
  if (o.format && o.format !== p.format && !['int32', 'int64', 'float', 'double', 'binary', 'uri'].includes(o.format)) {
    report(field, 'format', `this server requires format ${o.format}${p.format ? `, the platform ${p.format}` : ''}`);
  }
  if (o.format === 'uri' && p.format !== 'uri') report(field, 'format', `this server requires a URI; the platform takes any string`);
  if (p.properties && o.properties) {
    // Openness: where the platform takes fields it does not declare, so does this server (it ignores them), and
    // where it refuses them (`additionalProperties: false`), so does this server (`x-closed`).
    const theirsClosed = p.additionalProperties === false;
    if (theirsClosed && !refuses) report(field, 'open', 'the platform refuses undeclared fields here; this server ignores them (mark it x-closed)');
    if (!theirsClosed && refuses) report(field, 'closed', 'the platform accepts undeclared fields here; this server refuses them (x-closed)');
    for (const [name, prop] of Object.entries<any>(p.properties)) {
      if (flat(doc.theirs, prop).readOnly) continue;
      if (!(name in o.properties)) report(`${field}.${name}`, 'unknown', 'the platform accepts this field; this server does not declare it');
      else accepts(doc, prop, o.properties[name], `${field}.${name}`, report, refuses);
    }
    for (const name of o.required ?? [])
      if (!(p.required ?? []).includes(name)) report(`${field}.${name}`, 'required', 'required here, optional on the platform');
  } else if (p.properties && o.additionalProperties === false) {
    report(field, 'unknown', 'the platform accepts an object with fields; this server accepts none');
  }
  if (p.items && o.items) accepts(doc, p.items, o.items, `${field}.0`, report, refuses);
}

/** Response side: does `ours` give every property `theirs` promises, with types and enums its clients expect? */
export function provides(doc: { theirs: Doc; ours: Doc }, theirs: any, ours: any, field: string, report: Sink): void {
  const p = flat(doc.theirs, theirs);
  const o = flat(doc.ours, ours);
  if (free(p) || free(o)) return;
  const pv = variants(p);
  const ov = variants(o);
  if (pv || ov) {
    // Each of our shapes must be one of theirs.
    for (const v of ov ?? [o]) {
      const attempts = (pv ?? [p]).map((candidate) => {
        const found: [string, string, string][] = [];
        provides(doc, candidate, v, field, (...x) => found.push(x));
        return found;
      });
      const best = attempts.reduce((a, b) => (b.length < a.length ? b : a));
      for (const x of best) report(...x);
    }
    return;
  }
  const pt = types(p);
  const ot = types(o);
  if (pt.size) for (const t of ot) if (!covered(t, pt)) report(field, 'type', `this server returns ${t}, the platform's clients expect ${[...pt].join('|')}`);
  const pe = enumOf(p);
  const oe = enumOf(o);
  if (pe && !(pt.size === 1 && pt.has('boolean'))) {
    if (!oe) report(field, 'enum', `the platform promises one of ${pe.map((v) => JSON.stringify(v)).join(', ')}; this server declares no enum`);
    else {
      const extra = oe.filter((v) => !pe.some((x) => JSON.stringify(x) === JSON.stringify(v)));
      if (extra.length) report(field, 'enum', `values this server returns that the platform does not list: ${extra.map((v) => JSON.stringify(v)).join(', ')}`);
    }
  }
  if (p.properties) {
    const mine = o.properties ?? {};
    for (const name of p.required ?? []) {
      if (!(name in mine)) report(`${field}.${name}`, 'missing', 'required by the platform; absent from this response');
      else if (!(o.required ?? []).includes(name)) report(`${field}.${name}`, 'optional', 'required by the platform; optional in this response');
    }
    for (const [name, prop] of Object.entries<any>(p.properties)) if (name in mine) provides(doc, prop, mine[name], `${field}.${name}`, report);
  }
  if (p.items && o.items) provides(doc, p.items, o.items, `${field}.0`, report);
}

function operationsOf(doc: Doc, mapPath: (path: string, servers: { url: string }[] | undefined) => string) {
  const out = new Map<string, { id: string; op: any; path: string; params: any[] }>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const mapped = mapPath(path, op.servers ?? item.servers);
      const key = `${method.toUpperCase()} ${mapped.replace(/\{[^}]+\}/g, '{}')}`;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((x) => resolve(doc, x));
      out.set(key, { id: op.operationId ?? key, op: { ...op, parameters: params }, path: mapped, params });
    }
  }
  return out;
}

/** The platform's operations keyed by method and path as this server serves them, and ours likewise. */
export function operationsByKey(theirs: Doc, ours: Doc) {
  return {
    theirs: operationsOf(theirs, (path, servers) => (servers?.some((s) => /\/v2\/?$/.test(s.url)) ? `/v2${path}` : `/v1${path}`)),
    ours: operationsOf(ours, (path) => path),
  };
}

const success = (op: any) => Object.keys(op.responses ?? {}).find((s) => /^2\d\d$/.test(s));

/** Every problem of one operation pair. */
export function compare(theirsDoc: Doc, oursDoc: Doc, ours: { id: string; op: any; path: string }, theirs: { op: any; path: string }): Problem[] {
  const doc = { theirs: theirsDoc, ours: oursDoc };
  const problems: Problem[] = [];
  const sink = (side: Problem['side']) => (field: string, kind: string, detail: string) => problems.push({ operation: ours.id, side, field, kind, detail });
  const req = sink('request');

  // Parameters: query (and header) by name, path by position.
  const pathNames = (path: string) => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
  const ourPath = pathNames(ours.path);
  const theirPath = pathNames(theirs.path);
  const ourParams = ours.op.parameters as any[];
  for (const p of theirs.op.parameters as any[]) {
    if (p.in === 'header' || p.in === 'cookie') continue;
    const name = p.in === 'path' ? ourPath[theirPath.indexOf(p.name)] : p.name;
    const o = ourParams.find((x) => x.in === p.in && x.name === name);
    if (!o) {
      req(`${p.in}.${p.name}`, 'unknown', `the platform accepts ${p.in} parameter '${p.name}'; this server does not`);
      continue;
    }
    accepts(doc, p.schema ?? {}, o.schema ?? {}, `${p.in}.${p.name}`, req);
  }
  for (const o of ourParams) {
    if (o.in !== 'query' || !o.required) continue;
    const p = (theirs.op.parameters as any[]).find((x) => x.in === 'query' && x.name === o.name);
    if (!p?.required) req(`query.${o.name}`, 'required', 'required here, optional or absent on the platform');
  }

  // Body: by content type; a body the platform takes must be taken here.
  const theirBody = resolve(theirsDoc, theirs.op.requestBody);
  const ourBody = resolve(oursDoc, ours.op.requestBody);
  for (const [type, media] of Object.entries<any>(theirBody?.content ?? {})) {
    const mine = ourBody?.content?.[type];
    if (!mine) req('body', 'content_type', `the platform accepts a ${type} body; this server does not`);
    else accepts(doc, media.schema ?? {}, mine.schema ?? {}, 'body', req);
  }
  if (ourBody?.required && theirBody && !theirBody.required) req('body', 'required', 'a body is required here, optional on the platform');

  // The success response's JSON body.
  const theirStatus = success(theirs.op);
  const ourStatus = success(ours.op);
  const theirJson = theirStatus && resolve(theirsDoc, theirs.op.responses[theirStatus])?.content?.['application/json']?.schema;
  const ourJson = ourStatus && resolve(oursDoc, ours.op.responses[ourStatus])?.content?.['application/json']?.schema;
  if (theirJson && !ourJson)
    problems.push({
      operation: ours.id,
      side: 'response',
      field: 'response',
      kind: 'missing',
      detail: `the platform answers ${theirStatus} with JSON; this server documents no JSON success`,
    });
  else if (theirJson && ourJson) provides(doc, theirJson, ourJson, 'response', sink('response'));
  return problems;
}
