// Module `secrets`: rows -> wire shapes (the public platform's SecretResponseItem). The value is never part of it.
import type { Secret } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';

/** The columns the wire shape reads: what a listing selects (never the value, not even encrypted). */
export const secretColumns = {
  id: true,
  name: true,
  description: true,
  createdAt: true,
  updatedAt: true,
  createdBy: true,
  lastUpdatedBy: true,
} as const satisfies Partial<Record<keyof Secret, true>>;

export function secretWire(s: Pick<Secret, keyof typeof secretColumns>): Wire<'Secret'> {
  return {
    object: 'secret',
    id: s.id,
    name: s.name,
    ...(s.description !== null ? { description: s.description } : {}),
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
    created_by: s.createdBy,
    last_updated_by: s.lastUpdatedBy,
  };
}
