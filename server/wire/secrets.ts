// Wire shapes of tag Secrets (seed 2.14): the public platform's SecretResponseItem. The value is never part of it.
import type { Readable } from '../../generated/api.d.ts';
import type { Secret } from '../../generated/prisma/sqlite/client/client.ts';
import type { Schemas } from './types.ts';

const iso = (ms: bigint) => new Date(Number(ms)).toISOString();

export const secretsWire = {
  secret: (s: Secret): Readable<Schemas['Secret']> => ({
    object: 'secret',
    id: s.id,
    name: s.name,
    ...(s.description !== null ? { description: s.description } : {}),
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
    created_by: s.createdBy,
    last_updated_by: s.lastUpdatedBy,
  }),
};
