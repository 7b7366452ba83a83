// What the v2 lists of endpoints and deployments add to the list kit (server/http/list.ts): their parameters' wire
// names, the camelCase spellings of their time fields, and qualified names in filters.
import type { ListQuery, ListSpec } from '../../http/list.ts';

/** The v2 lists' parameters (the tag's **Lists**). */
export const V2_LIST = {
  params: { size: 'limit', cursor: 'after', order: 'orderBy', filter: 'filter' },
  aliases: { createdAt: 'created_at', updatedAt: 'updated_at' },
} satisfies Omit<ListSpec<unknown>, 'fields'>;

/** A v2 list's query as the kit reads it. */
export const v2Query = (q: { limit?: number; after?: string; filter?: string; orderBy?: string }): ListQuery => ({
  size: q.limit,
  cursor: q.after,
  filter: q.filter,
  order: q.orderBy,
});

/** A name filter's value without its qualifying `prefix` (e.g. `<project_slug>/`); null when another prefix qualifies it. */
export function unqualified(value: string, prefix: string): string | null {
  if (value.startsWith(prefix)) return value.slice(prefix.length);
  return value.includes('/') ? null : value;
}
