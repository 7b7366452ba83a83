// Reranking: the engine interface, the local engine, and the upstream engine (an OpenAI-compatible server's
// POST /rerank, as vLLM, llama.cpp and this server serve it), chosen per model by the engine routes (routes.ts,
// capability `rerank`).
//
// The local engine has no model weights: it scores each document against the query with Okapi BM25 over the
// request's own documents (the collection its statistics come from), on the terms of lexical.ts (stems of the
// words that are not stop words), with k1 = 1.2 and b = 0.75, and Lucene's always-positive idf,
// ln(1 + (N - df + 0.5) / (df + 0.5)). Each distinct query term counts once. The score is divided by the query's
// ceiling, the sum over its terms of idf x (k1 + 1) (what a document would score were every query term in it
// infinitely often), so relevance lies in [0, 1): 0 when the document has none of the query's terms, and a
// document's score does not depend on which others came first. Deterministic; ties keep the request's order.
import { ApiError } from '../core/errors.ts';
import { terms } from './lexical.ts';
import type { EngineRoutes, UpstreamRoute } from './routes.ts';
import { countTokens } from './tokens.ts';
import { upstreamFetch } from './upstream.ts';

export interface RerankRequest {
  /** The catalogue model (canonical id). */
  model: string;
  query: string;
  /** The text each document is ranked on. */
  documents: string[];
  /** How many of the best to answer (1 to the number of documents). */
  topN: number;
}

export interface RerankResult {
  /** Best first: the document's position in the request and its relevance. */
  results: { index: number; score: number }[];
  promptTokens: number;
  /** Which engine scored, as the response says it. */
  engine: 'local' | 'upstream';
}

export interface RerankEngine {
  rerank(request: RerankRequest): Promise<RerankResult>;
}

export const BM25 = { k1: 1.2, b: 0.75 } as const;

/** Each document's BM25 score for `query`, divided by the query's ceiling: in [0, 1). */
export function bm25(query: string, documents: string[]): number[] {
  const queryTerms = [...new Set(terms(query))];
  const slot = new Map(queryTerms.map((t, i) => [t, i]));
  const n = documents.length;
  // Per document: its length in terms and how often each query term occurs in it.
  const lengths = new Float64Array(n);
  const tf = new Float64Array(n * queryTerms.length);
  const df = new Float64Array(queryTerms.length);
  documents.forEach((doc, d) => {
    const ts = terms(doc);
    lengths[d] = ts.length;
    for (const t of ts) {
      const q = slot.get(t);
      if (q === undefined) continue;
      if (tf[d * queryTerms.length + q]++ === 0) df[q]!++;
    }
  });
  let total = 0;
  for (const l of lengths) total += l;
  const avgdl = n && total ? total / n : 1;
  const idf = Array.from(df, (f) => Math.log(1 + (n - f + 0.5) / (f + 0.5)));
  const ceiling = idf.reduce((sum, x) => sum + x * (BM25.k1 + 1), 0);
  const scores = new Array<number>(n);
  for (let d = 0; d < n; d++) {
    let s = 0;
    const norm = BM25.k1 * (1 - BM25.b + (BM25.b * lengths[d]!) / avgdl);
    for (let q = 0; q < queryTerms.length; q++) {
      const f = tf[d * queryTerms.length + q]!;
      if (f > 0) s += (idf[q]! * f * (BM25.k1 + 1)) / (f + norm);
    }
    scores[d] = ceiling > 0 ? s / ceiling : 0;
  }
  return scores;
}

/** The `topN` best, highest first; equal scores in the request's order. */
function best(scores: number[], topN: number): { index: number; score: number }[] {
  const order = scores.map((score, index) => ({ index, score }));
  order.sort((a, b) => b.score - a.score || a.index - b.index);
  return order.slice(0, topN);
}

/** Every (query, document) pair is read: the query's tokens once per document, plus the documents'. */
const pairTokens = (query: string, documents: string[]) => documents.length * countTokens(query) + documents.reduce((sum, d) => sum + countTokens(d), 0);

export const localRerankEngine: RerankEngine = {
  async rerank({ query, documents, topN }) {
    return { results: best(bm25(query, documents), topN), promptTokens: pairTokens(query, documents), engine: 'local' };
  },
};

const malformed = (route: UpstreamRoute, why: string) =>
  new ApiError(502, 'upstream_failed', `The upstream engine at ${route.url} answered without a usable ranking: ${why}.`, null, 'server_error');

/** Forwards the query and the documents' texts to an OpenAI-compatible server's rerank endpoint. */
export function upstreamRerankEngine(route: UpstreamRoute): RerankEngine {
  return {
    async rerank({ model, query, documents, topN }) {
      // The documents are sent as their texts and never asked back: this server answers them from the request.
      const res = await upstreamFetch(route, '/rerank', { model: route.model ?? model, query, documents, top_n: topN, return_documents: false });
      const body = (await res.json().catch(() => null)) as { results?: unknown; usage?: { prompt_tokens?: unknown; total_tokens?: unknown } } | null;
      if (!Array.isArray(body?.results)) throw malformed(route, 'no results list');
      const seen = new Set<number>();
      // biome-ignore lint/suspicious/noExplicitAny: an upstream's answer, checked field by field below.
      const results = body.results.map((r: any, i: number) => {
        if (!Number.isInteger(r?.index) || r.index < 0 || r.index >= documents.length || seen.has(r.index))
          throw malformed(route, `results[${i}].index ${r?.index} names no document`);
        if (typeof r.relevance_score !== 'number' || !Number.isFinite(r.relevance_score))
          throw malformed(route, `results[${i}].relevance_score is not a number`);
        seen.add(r.index);
        return { index: r.index as number, score: r.relevance_score as number };
      });
      results.sort((a, b) => b.score - a.score || a.index - b.index);
      const counted = body.usage?.prompt_tokens ?? body.usage?.total_tokens;
      return {
        results: results.slice(0, topN),
        promptTokens: typeof counted === 'number' && Number.isInteger(counted) && counted >= 0 ? counted : pairTokens(query, documents),
        engine: 'upstream',
      };
    },
  };
}

/** The engine that serves `model` (its canonical id): local unless a route sends it upstream. */
export function rerankEngineFor(routes: EngineRoutes, model: string): RerankEngine {
  const route = routes.routeFor('rerank', model);
  return route.engine === 'upstream' ? upstreamRerankEngine(route) : localRerankEngine;
}
