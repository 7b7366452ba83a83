// Module `secrets` (spec/tags/secrets.yaml): deployment secrets by id or name, values encrypted at rest (crypto.ts).
import type { ModuleDescriptor } from '../types.ts';
import { createSecret, deleteSecret, getSecret, listSecrets, updateSecret } from './handlers.ts';

// What this module offers the others.
export { secretsKey } from './crypto.ts';
export { releaseSecrets, secretNames, useSecrets } from './uses.ts';

export const secrets: ModuleDescriptor<'secrets'> = {
  name: 'secrets',
  handlers: { listSecrets, createSecret, getSecret, updateSecret, deleteSecret },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
