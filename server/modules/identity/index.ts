// Module `identity` (spec/tags/identity.yaml): which API key, project and organization authenticate a request.
import type { Identity } from '../../core/identity.ts';
import { constant } from '../../http/reply.ts';
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

// The key cache hands out the same identity object while a key stays cached: its answer is made once.
const answers = new WeakMap<Identity, ResponseBody<'whoami'>>();

export async function whoami({ identity }: Context<'whoami'>) {
  let body = answers.get(identity);
  if (!body) {
    body = constant(identityWire(identity));
    answers.set(identity, body);
  }
  return body;
}

export const identity: ModuleDescriptor<'identity'> = {
  name: 'identity',
  handlers: { whoami },
  // whoami addresses nothing by id: no cross-project fixtures.
};
