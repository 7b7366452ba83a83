// The input guard, after validation and before any handler: no control character reaches a handler, a query or
// the database (PostgreSQL refuses NUL in text, SQLite would store it). Path parameters and query values may hold
// none (U+0000-U+001F, U+007F); body strings (and object keys) may hold tab, newline and carriage return only.
import { invalidCharacters } from '../core/errors.ts';

const ANY_CONTROL = /[\u0000-\u001f\u007f]/;
const BODY_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** The first place in `value` (a dotted path under `at`) whose string breaks `rule`, or undefined. */
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

/** Throws 400 `invalid_characters` naming the first offending path parameter, query parameter or body field. */
export function guardInput(params: Record<string, unknown>, query: unknown, body: unknown): void {
  const where = offending(params, ANY_CONTROL, '') ?? offending(query, ANY_CONTROL, '');
  if (where !== undefined) throw invalidCharacters(where.split('.')[0]!);
  if (body !== undefined) {
    const field = offending(body, BODY_CONTROL, '');
    if (field !== undefined) throw invalidCharacters(field || null);
  }
}
