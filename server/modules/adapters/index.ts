// Module `adapters` (spec/tags/adapters.yaml): LoRA adapters bound to v1 dedicated endpoints (rules.ts).
import type { ModuleDescriptor } from '../types.ts';
import { addAdapter, listAdapters, removeAdapter } from './handlers.ts';

export const adapters: ModuleDescriptor<'adapters'> = {
  name: 'adapters',
  handlers: { listAdapters, addAdapter, removeAdapter },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
