// The lookup of a key's identity, and the channel on which PostgreSQL tells every server process of a revocation.
import type { Identity } from '../core/identity.ts';
import type { Database } from './index.ts';

export const KEY_REVOKED_CHANNEL = 'api_key_revoked';

/** The identity of an unrevoked key, by its hash; null for an unknown or revoked one. */
export async function identityForHash(db: Database, hash: string): Promise<Identity | null> {
  const key = await db.prisma.apiKey.findUnique({ where: { hash }, include: { project: { include: { organization: true } } } });
  if (!key || key.revokedAt) return null;
  return {
    apiKeyId: key.id,
    projectId: key.projectId,
    projectName: key.project.name,
    projectSlug: key.project.slug,
    organizationId: key.project.organizationId,
    organizationName: key.project.organization.name,
  };
}
