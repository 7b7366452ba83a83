// Optimistic concurrency and partial updates of the v2 API: every resource carries an etag that changes with each
// write; a write that names an etag must name the current one; `updateMask` limits an update to the fields it lists.
import { randomBytes } from 'node:crypto';
import { badRequest, conflict } from '../core/errors.ts';

export const newEtag = () => randomBytes(8).toString('hex');

/** Refuses a write that names an etag other than the current one (none named: last write wins). */
export function checkEtag(given: string | undefined, current: string): void {
  if (given !== undefined && given !== current) {
    throw conflict(`The etag '${given}' is not the current one; read the resource again and retry.`, 'etag_mismatch', 'etag');
  }
}

/** Applies `updateMask` (comma-separated field names): only the named fields, each of which must be in the body. */
export function masked<T extends Record<string, unknown>>(body: T, mask: string | undefined, allowed: readonly string[]): Partial<T> {
  if (mask === undefined) return body;
  const out: Partial<T> = {};
  for (const field of mask
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean)) {
    if (!allowed.includes(field)) throw badRequest(`'${field}' cannot be updated (one of: ${allowed.join(', ')}).`, 'updateMask', 'invalid_update_mask');
    if (body[field] === undefined) throw badRequest(`'updateMask' names '${field}', which the body does not carry.`, 'updateMask', 'invalid_update_mask');
    (out as Record<string, unknown>)[field] = body[field];
  }
  return out;
}
