// Whom a batch's lines run as: the key that created it, as a single request's caller (the rate limits count its
// organization, inference resolves models in its project). A key revoked since still runs the batch it made.
import type { Batch } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Identity } from '../../core/identity.ts';
import type { Services } from '../types.ts';

export async function identityOf(services: Pick<Services, 'db'>, row: Batch): Promise<Identity> {
  const project = await services.db.prisma.project.findUniqueOrThrow({ where: { id: row.projectId }, include: { organization: true } });
  return {
    apiKeyId: row.userId,
    projectId: project.id,
    projectName: project.name,
    projectSlug: project.slug,
    organizationId: project.organizationId,
    organizationName: project.organization.name,
  };
}
