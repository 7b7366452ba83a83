// Pagination, one way for every list: rows in id order (ids start with their creation time, so id order is creation
// order), a page of `limit` rows fetched as `limit + 1` to learn whether more follow, and a cursor that names the
// last row shown. v2 lists hand the cursor out as `next_cursor` (an id); others as an opaque `page_token`.
import { badRequest } from '../core/errors.ts';

export type Direction = 'asc' | 'desc';

export const DEFAULT_PAGE = 50;
export const LARGEST_PAGE = 100;

/**
 * The page size a `limit` asks for (AIP-158): the default when absent or 0 (the server chooses), at most the
 * largest page (a larger one is coerced down, not refused); a negative one is 400 `invalid_limit`.
 */
export function pageSize(limit: number | undefined, param = 'limit'): number {
  if (limit !== undefined && limit < 0) throw badRequest(`'${param}' must not be negative (0 or absent: ${DEFAULT_PAGE}).`, param, 'invalid_limit');
  return !limit ? DEFAULT_PAGE : Math.min(limit, LARGEST_PAGE);
}

/** Prisma arguments for the page after `after` (an id) in `direction`. */
export function pageArgs(after: string | undefined, limit: number, direction: Direction = 'asc') {
  return {
    where: after === undefined ? {} : { id: direction === 'asc' ? { gt: after } : { lt: after } },
    orderBy: { id: direction },
    take: limit + 1,
  };
}

/** Cuts the `limit + 1` rows fetched to a page; `next` is the cursor of the following page, null on the last. */
export function cut<T extends { id: string }>(rows: T[], limit: number): { rows: T[]; next: string | null } {
  const kept = rows.slice(0, limit);
  return { rows: kept, next: rows.length > limit ? kept[kept.length - 1]!.id : null };
}

/** Opaque page tokens: a cursor bound to the listing's order, so a token of one order is refused by another. */
export const pageToken = {
  encode: (cursor: string, order: string) => Buffer.from(JSON.stringify({ k: cursor, o: order })).toString('base64url'),
  decode(token: string, order: string, param = 'page_token'): string {
    let parsed: { k?: unknown; o?: unknown } = {};
    try {
      parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    } catch {
      // refused below
    }
    if (typeof parsed.k !== 'string' || parsed.o !== order) {
      throw badRequest(`'${param}' is not a token of this listing (or was made for another order).`, param, 'invalid_page_token');
    }
    return parsed.k;
  },
};
