// Module `embeddings` (spec/tags/embeddings.yaml): text embeddings of the catalogue's embedding models, through the
// embeddings engine (server/engines/embeddings.ts: local, or upstream per model).
import type { ModuleDescriptor } from '../types.ts';
import { createEmbedding } from './handlers.ts';

export const embeddings: ModuleDescriptor<'embeddings'> = {
  name: 'embeddings',
  handlers: { createEmbedding },
};
