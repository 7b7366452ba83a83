// The input guards around validation.
// - Before it: no control character reaches a handler, a query or the database (PostgreSQL refuses NUL in text,
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

/** The first place in `value` (a dotted path under `at`) whose string or key breaks `rule`, or undefined. */
function offending(value: unknown, rule: RegExp, at: string, depth = 0): string | undefined {
  if (typeof value === 'string') return rule.test(value) ? at : undefined;
  if (value === null || typeof value !== 'object' || depth > 64) return undefined;
  for (const [k, v] of Object.entries(value)) {
    const path = at ? `${at}.${k}` : k;
    if (rule.test(k)) return path;
    const found = offending(v, rule, path, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Refuses control characters with 400 `invalid_characters`, naming the path parameter (from the operation the
 * request addresses, when it addresses one), the query parameter or the dotted body field.
 */
export function refuseControlCharacters(pathParamAt: (method: string, path: string, segment: number) => string | null): RequestHandler {
  return (req, _res, next) => {
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
    const query = offending(req.query, ANY_CONTROL, '');
    if (query !== undefined) throw invalidCharacters(query.split('.')[0]!);
    if (req.body !== undefined) {
      const field = offending(req.body, BODY_CONTROL, '');
      if (field !== undefined) throw invalidCharacters(field || null);
    }
    next();
  };
}

/** Refuses a number the validator accepted but that is not finite (`Infinity`, `-Infinity`, `1e309`). */
export function refuseNonFinite(params: Record<string, unknown>, query: Record<string, unknown>): void {
  for (const [name, value] of [...Object.entries(params), ...Object.entries(query)]) {
    if (typeof value === 'number' && !Number.isFinite(value)) throw badRequest(`'${name}' must be a finite number.`, name, 'type');
  }
}
