// Module `rerank` (spec/tags/rerank.yaml): documents ordered by relevance to a query, by the catalogue's rerank
// models, through the rerank engine (server/engines/rerank.ts: local BM25, or upstream per model).
import type { ModuleDescriptor } from '../types.ts';
import * as handlers from './handlers.ts';

export const rerank: ModuleDescriptor<'rerank'> = {
  name: 'rerank',
  handlers: { rerank: handlers.rerank },
};
