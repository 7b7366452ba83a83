// Module `rerank`: what each document is ranked on, and the limits (the platform publishes none; these are this
// server's, in the spec).
import { badRequest } from '../../core/errors.ts';
import { countTokens } from '../../engines/tokens.ts';
import type { RequestBody } from '../types.ts';

export const MAX_DOCUMENTS = 10_000;

type Document = RequestBody<'rerank'>['documents'][number];

/** A field's value as ranked: a string as it is, anything else as its JSON. */
const valueText = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

/** A document as `return_documents` answers it: a string as given, an object as its JSON. */
export const documentText = (d: Document): string => (typeof d === 'string' ? d : JSON.stringify(d));

/** The text each document is ranked on and how many results to answer; 400 for what breaks the limits. */
export function acceptRerank(body: RequestBody<'rerank'>, contextLength: number | null): { texts: string[]; topN: number } {
  const { query, documents, rank_fields: rankFields, top_n: topN } = body;
  if (query.trim() === '') throw badRequest('query is empty: give the text to rank the documents against.', 'query', 'invalid_query');
  if (documents.length === 0) throw badRequest('documents is empty: give 1 to 10,000 documents to rank.', 'documents', 'invalid_documents');
  if (documents.length > MAX_DOCUMENTS)
    throw badRequest(`documents holds ${documents.length} documents; at most ${MAX_DOCUMENTS} are ranked per request.`, 'documents', 'too_many_documents');
  if (topN !== undefined && topN < 1) throw badRequest(`top_n is ${topN}: ask for at least 1 result (or omit it for all of them).`, 'top_n', 'invalid_top_n');

  let texts: string[];
  if (typeof documents[0] === 'string') {
    if (rankFields !== undefined)
      throw badRequest(
        'rank_fields applies to object documents; these documents are strings, ranked on their whole text.',
        'rank_fields',
        'invalid_rank_fields',
      );
    texts = documents as string[];
  } else {
    const objects = documents as Record<string, unknown>[];
    if (rankFields !== undefined) {
      if (rankFields.length === 0)
        throw badRequest('rank_fields is empty: name the fields to rank on, or omit it to rank on all of them.', 'rank_fields', 'invalid_rank_fields');
      const missing = rankFields.filter((f) => !objects.some((o) => Object.hasOwn(o, f)));
      if (missing.length)
        throw badRequest(`rank_fields names ${missing.map((f) => `'${f}'`).join(', ')}, which no document has.`, 'rank_fields', 'invalid_rank_fields');
    }
    texts = objects.map((o) =>
      (rankFields ?? Object.keys(o))
        .filter((f) => Object.hasOwn(o, f))
        .map((f) => valueText(o[f]))
        .join('\n'),
    );
  }

  // Each pair (query, document) must fit the model's context. A token is at least one byte, so only pairs longer
  // in bytes than the context are counted, and counting stops past the context: a long document costs the
  // context's work, not its own length.
  if (contextLength !== null) {
    const queryBytes = Buffer.byteLength(query);
    let queryTokens: number | undefined;
    texts.forEach((text, i) => {
      if (queryBytes + Buffer.byteLength(text) <= contextLength) return;
      queryTokens ??= countTokens(query, contextLength);
      if (queryTokens > contextLength || queryTokens + countTokens(text, contextLength - queryTokens) > contextLength) {
        throw badRequest(
          `documents[${i}] with the query is over ${contextLength} tokens long; this model reads at most ${contextLength} tokens per query and document.`,
          'documents',
          'document_too_long',
        );
      }
    });
  }
  return { texts, topN: Math.min(topN ?? documents.length, documents.length) };
}
