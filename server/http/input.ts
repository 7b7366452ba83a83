// The input guards around validation.
// - First of all: a JSON body nests at most MAX_BODY_DEPTH objects and arrays. Everything after (the control
//   characters' walk, the validator, the rate limits' token count, the handlers, JSON.stringify) recurses into the
//   body, and a body nested thousands deep would overflow the stack there; this walk is iterative.
// - Before validation: no control character reaches a handler, a query or the database (PostgreSQL refuses NUL in text,
//   SQLite would store it). Path segments and query values may hold none (U+0000-U+001F, U+007F); body strings and
//   object keys may hold tab, newline and carriage return only. Checked first, so the answer is always
//   `invalid_characters`, whatever else a value breaks.
// - After it: numbers are finite. The validator turns `Infinity` or `1e309` into a number that passes `integer`.
import type { RequestHandler } from 'express';
import { badRequest, invalidCharacters } from '../core/errors.ts';

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this guard's purpose.
const ANY_CONTROL = /[\u0000-\u001f\u007f]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above; tab, newline and carriage return are allowed in bodies.
const BODY_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** How deep a JSON body may nest: the body itself is level 1 (as documented in spec/openapi.yaml, Errors). */
export const MAX_BODY_DEPTH = 64;

/** The top-level field (null: the body itself) under which `body` nests deeper than MAX_BODY_DEPTH, or undefined. */
export function tooDeep(body: unknown): { param: string | null } | undefined {
  // Depth-first with an explicit stack: [value, its level, the top-level field it is under].
  if (body === null || typeof body !== 'object') return undefined;
  const stack: [unknown, number, string | null][] = [[body, 1, null]];
  while (stack.length) {
    const [value, level, field] = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (level > MAX_BODY_DEPTH) return { param: field };
    const keys = Object.keys(value);
    for (const k of keys) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== null && typeof v === 'object') stack.push([v, level + 1, level === 1 ? k : field]);
    }
  }
  return undefined;
}

/** Refuses a body nested deeper than MAX_BODY_DEPTH with 400 `nesting_too_deep`, naming its top-level field. */
export const refuseDeepNesting: RequestHandler = (req, _res, next) => {
  const found = tooDeep(req.body);
  if (found) {
    const where = found.param === null ? 'The request body' : `'${found.param}'`;
    throw badRequest(
      `${where} nests objects and arrays more than ${MAX_BODY_DEPTH} levels deep (counting the body as level 1); this server reads at most ${MAX_BODY_DEPTH}.`,
      found.param,
      'nesting_too_deep',
    );
  }
  next();
};

/**
 * The first place in `value` whose string or key breaks `rule`, as the keys leading to it ([] for `value` itself), or
 * undefined. The path is built only when something is found: a clean body (nearly all) allocates nothing per key.
 */
function offending(value: unknown, rule: RegExp, depth = 0): string[] | undefined {
  if (typeof value === 'string') return rule.test(value) ? [] : undefined;
  if (value === null || typeof value !== 'object' || depth > 64) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = offending(value[i], rule, depth + 1);
      if (found) return [String(i), ...found];
    }
    return undefined;
  }
  for (const k of Object.keys(value)) {
    if (rule.test(k)) return [k];
    const found = offending((value as Record<string, unknown>)[k], rule, depth + 1);
    if (found) return [k, ...found];
  }
  return undefined;
}

/**
 * Refuses control characters with 400 `invalid_characters`, naming the path parameter (from the operation the
 * request addresses, when it addresses one), the query parameter or the dotted body field.
 */
export function refuseControlCharacters(pathParamAt: (method: string, path: string, segment: number) => string | null): RequestHandler {
  return (req, _res, next) => {
    // A control character reaches the path or the query only escaped (`%0A`; the HTTP parser refuses a raw one):
    // a URL without `%` (nearly all) holds none.
    if (req.url.includes('%') || ANY_CONTROL.test(req.url)) {
      const segments = req.path.split('/');
      for (let i = 0; i < segments.length; i++) {
        let segment = segments[i]!;
        try {
          segment = decodeURIComponent(segment);
        } catch {
          // a malformed escape is the validator's to refuse
        }
        if (ANY_CONTROL.test(segment)) throw invalidCharacters(pathParamAt(req.method, req.path, i));
      }
      const query = offending(req.query, ANY_CONTROL);
      if (query !== undefined) throw invalidCharacters(query[0]!);
    }
    if (req.body !== undefined) {
      const field = offending(req.body, BODY_CONTROL);
      if (field !== undefined) throw invalidCharacters(field.join('.') || null);
    }
    next();
  };
}

/** The guards before validation, as one step: the nesting depth first (the walk for control characters recurses). */
export function inputGuards(pathParamAt: (method: string, path: string, segment: number) => string | null): RequestHandler {
  const controlCharacters = refuseControlCharacters(pathParamAt);
  return (req, res, next) => refuseDeepNesting(req, res, () => controlCharacters(req, res, next));
}

/** Refuses a number the validator accepted but that is not finite (`Infinity`, `-Infinity`, `1e309`). */
export function refuseNonFinite(params: Record<string, unknown>, query: Record<string, unknown>): void {
  for (const values of [params, query])
    for (const name in values) {
      const value = values[name];
      if (typeof value === 'number' && !Number.isFinite(value)) throw badRequest(`'${name}' must be a finite number.`, name, 'type');
    }
}

// Control characters (tab, newline and carriage return, and U+0080-U+009F, included) and lone surrogates (half of
// a UTF-16 pair: no character, and no UTF-8 form).
const UNFIT_IN_NAMES = /[\p{Cc}\p{Cs}]/u;

/**
 * A name that becomes part of a model string or a URL (`<project_slug>/<endpoint>`, `...:<adapter>`,
 * `/v1/deployments/secrets/{name}`) holds no control character and no lone surrogate: 400 `invalid_characters`
 * naming the field. The value itself is not echoed: it could not be shown as it is.
 */
export function checkNameCharacters(name: string, param: string): string {
  if (UNFIT_IN_NAMES.test(name)) {
    throw badRequest(
      `'${param}' holds a control character (such as a line break or a tab) or a lone surrogate; a name becomes part of model strings and URLs, so it may hold neither.`,
      param,
      'invalid_characters',
    );
  }
  return name;
}
