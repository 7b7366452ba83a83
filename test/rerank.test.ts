// Rerank (POST /v1/rerank) on the local engine: BM25 checked against scores computed by hand, normalised to [0, 1),
// highest first with `index` into the request; string and object documents, rank_fields, top_n, return_documents;
// usage from the real tokenizer; the limits and model checks answered as 400/404 naming the field.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bm25 } from '../server/engines/rerank.ts';
import { countTokens } from '../server/engines/tokens.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const MODEL = 'Salesforce/Llama-Rank-v1';
const rerank = (body: object) => t.caller.http.post('/v1/rerank').send({ model: MODEL, ...body });

describe('BM25, by hand', () => {
  // Terms (stems, stop words dropped): d0 [llama, llama, camel] (dl 3), d1 [camel, desert] (dl 2), d2 [databas] (dl 1);
  // N = 3, avgdl = 2. With k1 = 1.2, b = 0.75 the length factor K = k1 (1 - b + b dl / avgdl) is 1.65, 1.2 and 0.75.
  const docs = ['Llamas, llamas and a camel.', 'The camel of the desert', 'Databases'];

  test('one term: the score over its ceiling is tf / (tf + K)', () => {
    // "llama": df 1, idf = ln(1 + 2.5 / 1.5) = 0.980829; d0 = idf x 2 x 2.2 / (2 + 1.65) = 1.182369; ceiling idf x 2.2.
    const [d0, d1, d2] = bm25('llama', docs);
    expect(d0).toBeCloseTo(1.182369 / (0.980829 * 2.2), 6);
    expect(d0).toBeCloseTo(2 / 3.65, 9);
    expect(d1).toBe(0);
    expect(d2).toBe(0);
    // "camel": df 2, idf = ln(1 + 1.5 / 2.5) = ln 1.6; d0 = 1 / (1 + 1.65), d1 = 1 / (1 + 1.2): the shorter ranks higher.
    const camel = bm25('camel', docs);
    expect(camel[0]).toBeCloseTo(1 / 2.65, 9);
    expect(camel[1]).toBeCloseTo(1 / 2.2, 9);
    // Stop words and inflections do not change anything.
    expect(bm25('the camels', docs)).toEqual(camel);
  });

  test('two terms: idf-weighted sum over the summed ceiling', () => {
    // "llama desert": both df 1, the same idf 0.980829 (it cancels): d0 = (2 x 2.2 / 3.65) / 4.4, d1 = (1 x 2.2 / 2.2) / 4.4.
    const [d0, d1, d2] = bm25('llama desert', docs);
    expect(d0).toBeCloseTo(0.273973, 6);
    expect(d1).toBeCloseTo(0.227273, 6);
    expect(d2).toBe(0);
    // "camel desert": idf(camel) = ln 1.6 = 0.470004, idf(desert) = 0.980829; ceiling 2.2 x 1.450833 = 3.191832.
    // d0 = 0.470004 x 2.2 / 2.65 = 0.390192; d1 = 0.470004 x 2.2 / 2.2 + 0.980829 = 1.450833.
    const [c0, c1] = bm25('camel desert', docs);
    expect(c0).toBeCloseTo(0.390192 / 3.191832, 6);
    expect(c1).toBeCloseTo(1.450833 / 3.191832, 6);
  });

  test('a query with no term in common with any document scores 0 everywhere', () => {
    expect(bm25('quantum chromodynamics', docs)).toEqual([0, 0, 0]);
    expect(bm25('the of and', docs)).toEqual([0, 0, 0]);
  });
});

describe('the ranking', () => {
  const animals = [
    'The giant panda is a bear species endemic to China.',
    'The llama is a domesticated South American camelid, used by Andean cultures.',
    'The wild Bactrian camel is an endangered species endemic to Northwest China and Mongolia.',
    'The guanaco is a camelid native to South America, closely related to the llama.',
  ];

  test('string documents: best first, index into the request, scores in [0, 1), document {} by default, usage', async () => {
    const query = 'Which camelid is related to the llama in South America?';
    const res = await rerank({ query, documents: animals });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ object: 'rerank', model: MODEL, engine: 'local' });
    expect(res.body.id).toMatch(/^rerank_[0-9a-z]{26}$/);
    const results = res.body.results as { index: number; relevance_score: number; document: object }[];
    expect(results.map((r) => r.index)).toEqual([3, 1, 0, 2]);
    const expected = bm25(query, animals);
    for (const r of results) {
      expect(r.relevance_score).toBe(expected[r.index]);
      expect(r.relevance_score).toBeGreaterThanOrEqual(0);
      expect(r.relevance_score).toBeLessThan(1);
      expect(r.document).toEqual({});
    }
    expect(results[2]!.relevance_score).toBe(0);
    const prompt = animals.length * countTokens(query) + animals.reduce((s, d) => s + countTokens(d), 0);
    expect(res.body.usage).toEqual({ prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt });
  });

  test('top_n answers the best n (all when larger); return_documents gives each text', async () => {
    const top = await rerank({ query: 'guanaco llama', documents: animals, top_n: 2, return_documents: true });
    expect(top.body.results.map((r: { index: number }) => r.index)).toEqual([3, 1]);
    expect(top.body.results[0].document).toEqual({ text: animals[3] });
    const all = await rerank({ query: 'camelid llama', documents: animals, top_n: 50 });
    expect(all.body.results).toHaveLength(4);
  });

  test('object documents: all fields by default, rank_fields chooses them; the document returned is its JSON', async () => {
    const emails = [
      { from: 'oracle@example.com', subject: 'Quarterly report', text: 'Revenue grew this quarter.' },
      { from: 'sales@example.com', subject: 'Oracle pricing', text: 'The discount we discussed.' },
      { from: 'ops@example.com', subject: 'Outage', text: 'Oracle database pricing tiers and the outage report.' },
    ];
    const byAll = await rerank({ query: 'oracle pricing', documents: emails, return_documents: true });
    expect(byAll.status).toBe(200);
    expect(byAll.body.results[0].document).toEqual({ text: JSON.stringify(emails[byAll.body.results[0].index]) });
    const texts = emails.map((e) => `${e.from}\n${e.subject}\n${e.text}`);
    expect(byAll.body.results.map((r: { relevance_score: number }) => r.relevance_score)).toEqual([...bm25('oracle pricing', texts)].sort((a, b) => b - a));

    const bySubject = await rerank({ query: 'oracle pricing', documents: emails, rank_fields: ['subject'] });
    expect(bySubject.body.results[0].index).toBe(1);
    expect(bySubject.body.results.map((r: { relevance_score: number }) => r.relevance_score)).toEqual(
      [
        ...bm25(
          'oracle pricing',
          emails.map((e) => e.subject),
        ),
      ].sort((a, b) => b - a),
    );
    const byText = await rerank({ query: 'oracle pricing', documents: emails, rank_fields: ['text'] });
    expect(byText.body.results[0].index).toBe(2);
    // A field some documents lack adds nothing to them; other values rank as their JSON.
    const mixed = await rerank({ query: 'llama 42', documents: [{ title: 'llama' }, { n: 42 }, { title: 'camel', n: 7 }], rank_fields: ['title', 'n'] });
    expect(mixed.body.results.map((r: { index: number }) => r.index)).toEqual([0, 1, 2]);
  });

  test('the alias answers as its model; ties keep the request order', async () => {
    const res = await rerank({ model: 'Salesforce/Llama-Rank-V1', query: 'zebra', documents: ['a', 'b', 'c'] });
    expect(res.body.model).toBe(MODEL);
    expect(res.body.results.map((r: { index: number }) => r.index)).toEqual([0, 1, 2]);
    const other = await t.caller.http.post('/v1/rerank').send({ model: 'mixedbread-ai/Mxbai-Rerank-Large-V2', query: 'llama', documents: animals, top_n: 1 });
    expect(other.body).toMatchObject({ model: 'mixedbread-ai/Mxbai-Rerank-Large-V2', results: [{ index: 1 }] });
  });

  test('1,000 documents are ranked', async () => {
    const documents = Array.from({ length: 1000 }, (_, i) => `Document ${i} about ${i % 10 === 0 ? 'llamas in Peru' : 'something else entirely'}`);
    const res = await rerank({ query: 'llamas Peru', documents, top_n: 5 });
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: { index: number }) => r.index)).toEqual([0, 10, 20, 30, 40]);
  });
});

describe('bad input', () => {
  test('limits: 400 naming the field', async () => {
    expectError(await rerank({ query: 'x', documents: [] }), 400, { param: 'documents', code: 'invalid_documents' });
    expectError(await rerank({ query: 'x', documents: Array.from({ length: 10_001 }, () => 'd') }), 400, { param: 'documents', code: 'too_many_documents' });
    expectError(await rerank({ query: '  ', documents: ['a'] }), 400, { param: 'query', code: 'invalid_query' });
    expectError(await rerank({ query: 'x', documents: ['a'], top_n: 0 }), 400, { param: 'top_n', code: 'invalid_top_n' });
    expectError(await rerank({ query: 'x', documents: ['a'], rank_fields: ['text'] }), 400, { param: 'rank_fields', code: 'invalid_rank_fields' });
    expectError(await rerank({ query: 'x', documents: [{ text: 'a' }], rank_fields: [] }), 400, { param: 'rank_fields', code: 'invalid_rank_fields' });
    const typo = await rerank({ query: 'x', documents: [{ text: 'a' }], rank_fields: ['text', 'titel'] });
    expectError(typo, 400, { param: 'rank_fields', code: 'invalid_rank_fields' });
    expect(typo.body.error.message).toContain("'titel'");
    // Llama-Rank reads 8192 tokens per query and document.
    const long = await rerank({ query: 'x', documents: ['short', 'token '.repeat(9000)] });
    expectError(long, 400, { param: 'documents', code: 'document_too_long' });
    expect(long.body.error.message).toContain('documents[1]');
    expect((await rerank({ model: 'mixedbread-ai/Mxbai-Rerank-Large-V2', query: 'x', documents: ['token '.repeat(9000)] })).status).toBe(200);
  });

  test('ill-formed fields: 400 naming the field', async () => {
    const mixed = await rerank({ query: 'x', documents: ['a', { text: 'b' }] });
    expectError(mixed, 400);
    expect(mixed.body.error.param).toMatch(/^documents/);
    expectError(await rerank({ query: 'x', documents: 'a' }), 400, { param: 'documents' });
    expectError(await rerank({ documents: ['a'] }), 400, { param: 'query', code: 'required' });
    expectError(await rerank({ query: 'x', documents: ['a'], top_n: 1.5 }), 400, { param: 'top_n' });
    expectError(await rerank({ query: 'x', documents: ['a'], max_chunks_per_doc: 2 }), 400, { param: 'max_chunks_per_doc', code: 'additionalProperties' });
    expectError(await t.caller.http.post('/v1/rerank').set('Content-Type', 'text/plain').send('hello'), 415, { code: 'unsupported_media_type' });
  });

  test('models: unknown 404 param model; a model of another kind 400 param model', async () => {
    expectError(await rerank({ model: 'nope/reranker', query: 'x', documents: ['a'] }), 404, { param: 'model', code: 'model_not_found' });
    const emb = await rerank({ model: 'BAAI/bge-base-en-v1.5', query: 'x', documents: ['a'] });
    expectError(emb, 400, { param: 'model', code: 'model_not_available' });
    expect(emb.body.error.message).toContain('not a rerank model');
    expectError(await rerank({ model: 'meta-llama/Meta-Llama-3.1-8B-Instruct', query: 'x', documents: ['a'] }), 400, {
      param: 'model',
      code: 'model_not_available',
    });
  });
});
