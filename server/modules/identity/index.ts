// Module `identity` (spec/tags/identity.yaml): which API key, project and organization authenticate a request.
import type { Identity } from '../../core/identity.ts';
import type { Context, ModuleDescriptor, ResponseBody } from '../types.ts';

/** `user_id` is the key's id: keys act for no user here, so the authenticated principal is the key itself. */
export function identityWire(i: Identity): ResponseBody<'whoami'> {
  return {
    api_key_id: i.apiKeyId,
    project_id: i.projectId,
    project_name: i.projectName,
    project_slug: i.projectSlug,
    organization_id: i.organizationId,
    organization_name: i.organizationName,
    user_id: i.apiKeyId,
  };
}

export async function whoami({ identity }: Context<'whoami'>) {
  return identityWire(identity);
}

export const identity: ModuleDescriptor<'identity'> = {
  name: 'identity',
  handlers: { whoami },
  // whoami addresses nothing by id: no cross-project fixtures.
};
