// The official clients, unchanged but for baseURL, on embeddings and rerank:
//
// | client method                                   | HTTP sent                                             | operationId     |
// |-------------------------------------------------|-------------------------------------------------------|-----------------|
// | openai embeddings.create({model, input})        | POST /v1/embeddings with encoding_format "base64"     | createEmbedding |
// |   (openai decodes the base64 itself)            |                                                       |                 |
// | openai embeddings.create({..., encoding_format: 'float'}) | POST /v1/embeddings, floats                 | createEmbedding |
// | together-ai embeddings.create({model, input})   | POST /v1/embeddings (no encoding_format: floats)      | createEmbedding |
// | together-ai rerank.create({model, query, documents, top_n?, return_documents?, rank_fields?}) | POST /v1/rerank | rerank |
import OpenAI from 'openai';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let openai: OpenAI;
let together: Together;
/** What went over the wire: each request's JSON body and each response's, as the openai client exchanged them. */
const wire: { sent: any; answered: any }[] = [];
beforeAll(async () => {
  t = await startTestPlatform();
  openai = new OpenAI({
    apiKey: t.caller.key,
    baseURL: `${t.url}/v1`,
    maxRetries: 0,
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      wire.push({ sent: JSON.parse(String(init?.body)), answered: await res.clone().json() });
      return res;
    },
  });
  together = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
});
afterAll(() => t?.close());

const MODEL = 'BAAI/bge-base-en-v1.5';
const input = ['Our solar system orbits the Milky Way galaxy at about 515,000 mph', 'The llama is a domesticated South American camelid.'];

describe('embeddings', () => {
  test('openai with its default encoding (base64, decoded by the client) gets the same numbers as with float', async () => {
    const byDefault = await openai.embeddings.create({ model: MODEL, input });
    const exchanged = wire.at(-1)!;
    expect(exchanged.sent.encoding_format).toBe('base64');
    expect(typeof exchanged.answered.data[0].embedding).toBe('string');
    const floats = await openai.embeddings.create({ model: MODEL, input, encoding_format: 'float' });
    expect(byDefault.object).toBe('list');
    expect(byDefault.model).toBe(MODEL);
    expect(byDefault.data.map((d) => d.index)).toEqual([0, 1]);
    for (let i = 0; i < input.length; i++) {
      const v = byDefault.data[i]!.embedding;
      expect(Array.isArray(v)).toBe(true);
      expect(v).toHaveLength(768);
      expect(v).toEqual(floats.data[i]!.embedding);
      expect(Math.hypot(...v)).toBeCloseTo(1, 6);
    }
    expect(byDefault.usage.prompt_tokens).toBeGreaterThan(0);
    expect(byDefault.usage.total_tokens).toBe(byDefault.usage.prompt_tokens);
  });

  test('together-ai with a string and a list', async () => {
    const one = await together.embeddings.create({ model: 'togethercomputer/m2-bert-80M-8k-retrieval', input: input[0]! });
    expect(one.data).toHaveLength(1);
    expect(one.data[0]!.embedding).toHaveLength(768);
    const many = await together.embeddings.create({ model: 'BAAI/bge-large-en-v1.5', input });
    expect(many.data.map((d) => [d.object, d.index, d.embedding.length])).toEqual([
      ['embedding', 0, 1024],
      ['embedding', 1, 1024],
    ]);
  });

  test('the clients raise the 400 and 404 with the envelope', async () => {
    await expect(openai.embeddings.create({ model: MODEL, input: [] })).rejects.toMatchObject({ status: 400, param: 'input' });
    await expect(together.embeddings.create({ model: 'nope/none', input: 'x' })).rejects.toMatchObject({ status: 404 });
  });
});

describe('rerank', () => {
  const documents = [
    { title: 'Llama', text: 'The llama is a domesticated South American camelid, widely used as a meat and pack animal by Andean cultures.' },
    { title: 'Panda', text: 'The giant panda, also known as the panda bear, is a bear species endemic to China.' },
    { title: 'Guanaco', text: 'The guanaco is a camelid native to South America, closely related to the llama.' },
    { title: 'Wild Bactrian camel', text: 'The wild Bactrian camel is an endangered species of camel endemic to Northwest China and Mongolia.' },
  ];

  test("together-ai rerank: the README's example with objects, rank_fields, top_n and return_documents", async () => {
    const res = await together.rerank.create({
      model: 'Salesforce/Llama-Rank-V1',
      query: 'What animals can I find near Peru? Camelids of South America',
      documents,
      top_n: 2,
      return_documents: true,
      rank_fields: ['title', 'text'],
    });
    expect(res.object).toBe('rerank');
    expect(res.model).toBe('Salesforce/Llama-Rank-v1');
    expect(res.results).toHaveLength(2);
    expect(res.results.map((r) => r.index).sort()).toEqual([0, 2]);
    expect(res.results[0]!.relevance_score).toBeGreaterThanOrEqual(res.results[1]!.relevance_score);
    expect(JSON.parse(res.results[0]!.document.text!)).toEqual(documents[res.results[0]!.index]);
    expect(res.usage).toMatchObject({ completion_tokens: 0 });
    expect(res.usage!.total_tokens).toBeGreaterThan(0);
  });

  test('together-ai rerank with strings and the defaults', async () => {
    const res = await together.rerank.create({ model: 'Salesforce/Llama-Rank-v1', query: 'bear in China', documents: documents.map((d) => d.text) });
    expect(res.results).toHaveLength(4);
    expect(res.results[0]!.index).toBe(1);
    expect(res.results[0]!.document).toEqual({});
    await expect(together.rerank.create({ model: 'BAAI/bge-base-en-v1.5', query: 'x', documents: ['a'] })).rejects.toMatchObject({ status: 400 });
  });
});
