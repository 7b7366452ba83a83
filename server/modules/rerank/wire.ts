// Module `rerank`: engine results -> the wire shape the official clients parse.
import type { RerankResult } from '../../engines/rerank.ts';
import type { RequestBody, Wire } from '../types.ts';
import { documentText } from './rules.ts';

/** `documents`: the request's, when they are to be returned. */
export function rerankWire(id: string, model: string, r: RerankResult, documents: RequestBody<'rerank'>['documents'] | null): Wire<'RerankResponse'> {
  return {
    object: 'rerank',
    id,
    model,
    results: r.results.map(({ index, score }) => ({ index, relevance_score: score, document: documents ? { text: documentText(documents[index]!) } : {} })),
    usage: { prompt_tokens: r.promptTokens, completion_tokens: 0, total_tokens: r.promptTokens },
    engine: r.engine,
  };
}
