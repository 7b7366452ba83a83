// The upstream engines of embeddings and rerank: models routed (ENGINES) to another instance of this server, a real
// process on its own database, answer what it computes, encoded and shaped here; its refusals are passed on, and
// an upstream that cannot be reached or answers nonsense is a 502.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type ScratchDatabase, scratchDatabase } from './support/database.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';
import { type ServerProcess, startServerProcess } from './support/server-process.ts';

let upstreamDb: ScratchDatabase;
let upstream: ServerProcess;
let nonsense: Server;
let t: TestPlatform;
/** What the fake upstream answers to any request. */
let nonsenseBody: unknown = {};
let nonsenseStatus = 200;
/** Whether the fake upstream holds every request unanswered. */
let hang = false;

const call = async (path: string, body: object) => {
  const res = await fetch(`${upstream.url}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${upstream.key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as any;
};

beforeAll(async () => {
  upstreamDb = await scratchDatabase();
  upstream = await startServerProcess({ DATABASE_URL: upstreamDb.url, RUNNER_ENABLED: 'false' });
  nonsense = createServer((_req, res) => hang || res.writeHead(nonsenseStatus, { 'Content-Type': 'application/json' }).end(JSON.stringify(nonsenseBody)));
  await new Promise<void>((resolve) => nonsense.listen(0, '127.0.0.1', resolve));
  const fake = `http://127.0.0.1:${(nonsense.address() as { port: number }).port}/v1`;
  const up = { engine: 'upstream', url: `${upstream.url}/v1`, apiKey: upstream.key } as const;
  t = await startTestPlatform({
    config: {
      engines: {
        routes: [
          { models: ['BAAI/*', 'Salesforce/*'], capabilities: ['embeddings', 'rerank'], ...up },
          // The upstream knows the model by another name.
          { models: ['intfloat/*'], capabilities: ['embeddings'], ...up, model: 'togethercomputer/m2-bert-80M-8k-retrieval' },
          // Names the upstream refuses.
          { models: ['WhereIsAI/*'], capabilities: ['embeddings'], ...up, model: 'nope/missing' },
          { models: ['mixedbread-ai/*'], capabilities: ['rerank'], engine: 'upstream', url: fake, timeoutMs: 500 },
          { models: ['Alibaba-NLP/*'], capabilities: ['embeddings'], engine: 'upstream', url: 'http://127.0.0.1:9/v1' },
          { models: ['togethercomputer/*'], capabilities: ['embeddings'], engine: 'upstream', url: fake, timeoutMs: 500 },
        ],
      },
    },
  });
}, 60_000);
afterAll(async () => {
  await t?.close();
  await upstream?.stop();
  await upstreamDb?.drop();
  nonsense?.closeAllConnections();
  nonsense?.close();
});

describe('embeddings upstream', () => {
  test("answers the upstream's vectors in the caller's encoding, with its usage, engine upstream", async () => {
    const input = ['The llama is a camelid.', 'Databases store rows.'];
    const theirs = await call('/v1/embeddings', { model: 'BAAI/bge-large-en-v1.5', input });
    const res = await t.caller.http.post('/v1/embeddings').send({ model: 'BAAI/bge-large-en-v1.5', input });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(theirs.engine).toBe('local');
    expect(res.body).toMatchObject({ object: 'list', model: 'BAAI/bge-large-en-v1.5', engine: 'upstream', usage: theirs.usage });
    expect(res.body.data.map((d: any) => d.embedding)).toEqual(theirs.data.map((d: any) => d.embedding));
    expect(res.body.data.map((d: any) => d.index)).toEqual([0, 1]);

    const b64 = await t.caller.http.post('/v1/embeddings').send({ model: 'BAAI/bge-large-en-v1.5', input: input[1], encoding_format: 'base64' });
    const bytes = Buffer.from(b64.body.data[0].embedding, 'base64');
    expect(Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4))).toEqual(theirs.data[1].embedding);
  });

  test("the route's model name is the one sent upstream; the answer keeps the caller's model", async () => {
    const res = await t.caller.http.post('/v1/embeddings').send({ model: 'intfloat/multilingual-e5-large-instruct', input: 'hola' });
    const theirs = await call('/v1/embeddings', { model: 'togethercomputer/m2-bert-80M-8k-retrieval', input: ['hola'] });
    expect(res.body.model).toBe('intfloat/multilingual-e5-large-instruct');
    // The upstream's vector, at the upstream model's length (768), not the catalogue's 1024.
    expect(res.body.data[0].embedding).toEqual(theirs.data[0].embedding);
    expect(res.body.data[0].embedding).toHaveLength(768);
  });

  test('a refusal upstream is passed on; unreachable or nonsense is 502', async () => {
    expectError(await t.caller.http.post('/v1/embeddings').send({ model: 'WhereIsAI/UAE-Large-V1', input: 'x' }), 404, {
      code: 'upstream_refused',
      param: 'model',
    });
    expectError(await t.caller.http.post('/v1/embeddings').send({ model: 'Alibaba-NLP/gte-modernbert-base', input: 'x' }), 502, {
      code: 'upstream_unreachable',
      type: 'server_error',
    });
    const model = 'togethercomputer/m2-bert-80M-8k-retrieval';
    for (const body of [{}, { data: [] }, { data: [{ index: 0, embedding: 'not base64 floats!' }] }, { data: [{ index: 3, embedding: [0.1] }] }]) {
      nonsenseBody = body;
      expectError(await t.caller.http.post('/v1/embeddings').send({ model, input: 'x' }), 502, { code: 'upstream_failed' });
    }
    // A base64 answer is decoded; the index orders the vectors.
    const v = (x: number) => Buffer.from(new Float32Array([x, 0]).buffer).toString('base64');
    nonsenseBody = {
      data: [
        { index: 1, embedding: v(0.5) },
        { index: 0, embedding: [0.25, 0] },
      ],
    };
    const ok = await t.caller.http.post('/v1/embeddings').send({ model, input: ['a', 'b'] });
    expect(ok.body.data.map((d: any) => d.embedding)).toEqual([
      [0.25, 0],
      [0.5, 0],
    ]);
  });
});

test("an upstream that does not answer within its route's timeoutMs is a 504", async () => {
  hang = true;
  try {
    const emb = await t.caller.http.post('/v1/embeddings').send({ model: 'togethercomputer/m2-bert-80M-8k-retrieval', input: 'x' });
    expectError(emb, 504, { code: 'upstream_timeout', type: 'server_error' });
    expect(emb.body.error.message).toContain('within 0.5 s');
    expectError(await t.caller.http.post('/v1/rerank').send({ model: 'mixedbread-ai/Mxbai-Rerank-Large-V2', query: 'x', documents: ['a'] }), 504, {
      code: 'upstream_timeout',
    });
  } finally {
    hang = false;
    nonsense.closeAllConnections();
  }
});

describe('rerank upstream', () => {
  test("answers the upstream's ranking, documents from the request; object documents go as their ranking texts", async () => {
    const documents = ['Pandas live in China.', 'The guanaco is a camelid related to the llama.', 'The llama is a camelid.'];
    const theirs = await call('/v1/rerank', { model: 'Salesforce/Llama-Rank-v1', query: 'llama camelid', documents });
    const res = await t.caller.http
      .post('/v1/rerank')
      .send({ model: 'Salesforce/Llama-Rank-v1', query: 'llama camelid', documents, top_n: 2, return_documents: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ object: 'rerank', model: 'Salesforce/Llama-Rank-v1', engine: 'upstream', usage: theirs.usage });
    expect(res.body.results).toEqual(theirs.results.slice(0, 2).map((r: any) => ({ ...r, document: { text: documents[r.index] } })));

    const objects = documents.map((text, i) => ({ id: `doc-${i}`, text }));
    const byText = await t.caller.http
      .post('/v1/rerank')
      .send({ model: 'Salesforce/Llama-Rank-v1', query: 'llama camelid', documents: objects, rank_fields: ['text'] });
    expect(byText.body.results.map((r: any) => [r.index, r.relevance_score])).toEqual(theirs.results.map((r: any) => [r.index, r.relevance_score]));
  });

  test('a refusal upstream is passed on; nonsense is 502', async () => {
    const send = () => t.caller.http.post('/v1/rerank').send({ model: 'mixedbread-ai/Mxbai-Rerank-Large-V2', query: 'x', documents: ['a', 'b'] });
    nonsenseStatus = 400;
    nonsenseBody = { error: { message: "'x' is not a rerank model.", type: 'invalid_request_error', param: 'model', code: 'model_not_available' } };
    const refused = await send();
    expectError(refused, 400, { code: 'upstream_refused', param: 'model' });
    expect(refused.body.error.message).toContain('not a rerank model');
    nonsenseStatus = 200;
    for (const body of [
      {},
      { results: [{ index: 2, relevance_score: 0.5 }] },
      { results: [{ index: 0, relevance_score: 'high' }] },
      {
        results: [
          { index: 0, relevance_score: 1 },
          { index: 0, relevance_score: 1 },
        ],
      },
    ]) {
      nonsenseBody = body;
      expectError(await send(), 502, { code: 'upstream_failed', type: 'server_error' });
    }
    // A ranking in any order is sorted here; a score outside [0, 1) is the upstream's to give.
    nonsenseBody = {
      results: [
        { index: 0, relevance_score: -2.5 },
        { index: 1, relevance_score: 7 },
      ],
      usage: { total_tokens: 12 },
    };
    const ok = await send();
    expect(ok.body).toMatchObject({
      engine: 'upstream',
      results: [
        { index: 1, relevance_score: 7 },
        { index: 0, relevance_score: -2.5 },
      ],
      usage: { prompt_tokens: 12, total_tokens: 12 },
    });
  });
});
