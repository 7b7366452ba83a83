// Module `adapters` (spec/tags/adapters.yaml): LoRA adapters bound to v1 dedicated endpoints (rules.ts).
import type { ModuleDescriptor } from '../types.ts';
import { addAdapter, listAdapters, removeAdapter } from './handlers.ts';

// What this module offers the others.
export { findAdapter, fitsEndpoint } from './rules.ts';

export const adapters: ModuleDescriptor<'adapters'> = {
  name: 'adapters',
  handlers: { listAdapters, addAdapter, removeAdapter },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
