// The one place that turns rows into their wire shapes (seed section 2).
import type { components } from '../generated/api.d.ts';
import type { Identity } from './accounts.ts';

type Schemas = components['schemas'];

export const wire = {
  identity: (i: Identity): Schemas['Identity'] => ({
    api_key_id: i.apiKeyId,
    project_id: i.projectId,
    project_name: i.projectName,
    project_slug: i.projectSlug,
    organization_id: i.organizationId,
    organization_name: i.organizationName,
  }),
};
