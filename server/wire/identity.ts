// Wire shapes of tag Identity (seed 2.15).
import type { Identity } from '../accounts.ts';
import type { Schemas } from './types.ts';

export const identityWire = {
  identity: (i: Identity): Schemas['Identity'] => ({
    api_key_id: i.apiKeyId,
    project_id: i.projectId,
    project_name: i.projectName,
    project_slug: i.projectSlug,
    organization_id: i.organizationId,
    organization_name: i.organizationName,
  }),
};
