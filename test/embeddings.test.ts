// Embeddings (POST /v1/embeddings) on the local engine: the catalogue's embedding models at their dimensions, input
// as a string or a list (order and index kept), float and base64 encodings of the same float32 vector, L2-normalised
// lexical vectors whose cosine similarity is higher for related texts, usage from the real tokenizer, and the limits
// and model checks answered as 400/404 naming the field.

import { createHash } from 'node:crypto';
import { countTokens as libraryCount } from 'gpt-tokenizer/encoding/cl100k_base';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { lexicalVector } from '../server/engines/embeddings.ts';
import { countTokens } from '../server/engines/tokens.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const MODEL = 'BAAI/bge-base-en-v1.5';
const embed = (body: object) => t.caller.http.post('/v1/embeddings').send(body);
const vectors = async (input: string[], model = MODEL): Promise<number[][]> => {
  const res = await embed({ model, input });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.map((d: { embedding: number[] }) => d.embedding);
};
const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);
const norm = (a: number[]) => Math.sqrt(dot(a, a));
const decode = (b64: string) => {
  const bytes = Buffer.from(b64, 'base64');
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
};

describe('the embedding', () => {
  test("one string: one L2-normalised vector of the model's dimensions, index 0, usage from the tokenizer, engine local", async () => {
    const text = 'Our solar system orbits the Milky Way galaxy at about 515,000 mph';
    const res = await embed({ model: MODEL, input: text });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      object: 'list',
      model: MODEL,
      engine: 'local',
      usage: { prompt_tokens: countTokens(text), total_tokens: countTokens(text) },
    });
    expect(res.body.data).toHaveLength(1);
    const [d] = res.body.data;
    expect(d.object).toBe('embedding');
    expect(d.index).toBe(0);
    expect(d.embedding).toHaveLength(768);
    expect(norm(d.embedding)).toBeCloseTo(1, 6);
    // The numbers are float32 values, so base64 carries exactly the same vector.
    expect(d.embedding).toEqual(Array.from(Float32Array.from(d.embedding)));
  });

  test('each embedding model of the catalogue answers at its published dimensions', async () => {
    const dims: Record<string, number> = {
      'BAAI/bge-base-en-v1.5': 768,
      'BAAI/bge-large-en-v1.5': 1024,
      'WhereIsAI/UAE-Large-V1': 1024,
      'togethercomputer/m2-bert-80M-8k-retrieval': 768,
      'intfloat/multilingual-e5-large-instruct': 1024,
      'Alibaba-NLP/gte-modernbert-base': 768,
    };
    const listed = ((await t.caller.http.get('/v1/models')).body as { id: string; type: string }[]).filter((m) => m.type === 'embedding').map((m) => m.id);
    expect(listed.sort()).toEqual(Object.keys(dims).sort());
    for (const [model, n] of Object.entries(dims)) {
      const [v] = await vectors(['hello world'], model);
      expect(v, model).toHaveLength(n);
      expect(norm(v!)).toBeCloseTo(1, 6);
    }
    // Two models give unrelated vectors for the same text.
    const [a] = await vectors(['llamas of Peru'], 'BAAI/bge-base-en-v1.5');
    const [b] = await vectors(['llamas of Peru'], 'togethercomputer/m2-bert-80M-8k-retrieval');
    expect(Math.abs(dot(a!, b!))).toBeLessThan(0.5);
  });

  test('a list keeps its order and gives each vector its index; the same text gives the same vector', async () => {
    const input = ['first text about llamas', 'second text about databases', 'first text about llamas', 'ünïcödé café'];
    const res = await embed({ model: MODEL, input });
    expect(res.body.data.map((d: { index: number }) => d.index)).toEqual([0, 1, 2, 3]);
    const vs = res.body.data.map((d: { embedding: number[] }) => d.embedding);
    expect(vs[0]).toEqual(vs[2]);
    expect(vs[0]).not.toEqual(vs[1]);
    // Each is what it would be alone.
    for (let i = 0; i < input.length; i++) expect((await vectors([input[i]!]))[0]).toEqual(vs[i]);
    expect(res.body.usage.prompt_tokens).toBe(input.reduce((s, x) => s + countTokens(x), 0));
    // Accents are folded: the same words without them.
    expect(dot(vs[3], (await vectors(['unicode cafe']))[0]!)).toBeCloseTo(1, 5);
  });

  test('encoding_format base64 is the little-endian float32 of the same vector', async () => {
    const input = ['The llama is a domesticated South American camelid.', 'Relational databases store rows in tables.'];
    const floats = await embed({ model: MODEL, input, encoding_format: 'float' });
    const b64 = await embed({ model: MODEL, input, encoding_format: 'base64' });
    expect(b64.status).toBe(200);
    for (let i = 0; i < input.length; i++) {
      expect(typeof b64.body.data[i].embedding).toBe('string');
      expect(decode(b64.body.data[i].embedding)).toEqual(floats.body.data[i].embedding);
    }
  });

  test('related texts are measurably more similar than unrelated ones', async () => {
    const [llama, camelids, databases, sql] = await vectors([
      'The llama is a domesticated South American camelid, used as a pack animal by Andean cultures.',
      'Llamas and alpacas are camelids native to the Andes of South America.',
      'Relational databases store rows in tables and answer SQL queries.',
      'A SQL query selects rows from database tables.',
    ]);
    expect(dot(llama!, camelids!)).toBeGreaterThan(dot(llama!, databases!) + 0.2);
    expect(dot(databases!, sql!)).toBeGreaterThan(dot(databases!, camelids!) + 0.2);
    // Inflections meet through stems and character trigrams: "America" and "American", "database" and "databases".
    const [america, american, other] = await vectors(['South America', 'South American', 'North Korea']);
    expect(dot(america!, american!)).toBeGreaterThan(0.5);
    expect(dot(america!, other!)).toBeLessThan(0.3);

    // Retrieval: each question's nearest passage is its own.
    const passages = [
      'The giant panda is a bear species endemic to China, eating bamboo.',
      'The guanaco is a camelid native to South America, closely related to the llama.',
      'Photosynthesis converts light energy into chemical energy in plants.',
      'The stock market fell sharply as interest rates rose.',
    ];
    const questions = [
      'Which bear eats bamboo in China?',
      'What camelid lives in South America besides the llama?',
      'How do plants turn light into energy?',
      'Why did stocks fall when rates rose?',
    ];
    const p = await vectors(passages);
    const q = await vectors(questions);
    q.forEach((qv, i) => {
      const scores = p.map((pv) => dot(qv, pv));
      expect(scores.indexOf(Math.max(...scores)), questions[i]).toBe(i);
    });
  });

  test('a text of stop words only, or without letters, still has a vector of its own', async () => {
    const [a, b, c] = await vectors(['to be or not to be', '!!! ???', '!!! ??']);
    for (const v of [a, b, c]) expect(norm(v!)).toBeCloseTo(1, 6);
    expect(a).not.toEqual(b);
    expect(b).not.toEqual(c);
    expect(lexicalVector('to be', 8, 1)).toEqual(lexicalVector('to be', 8, 1));
  });

  test('the vectors stay the same from one version to the next (a digest of them, bit for bit), and alone or in a batch', async () => {
    // Vectors stored from one version (a test's vector index, a cache) must still match the next one's.
    const texts = [
      'The llama is a domesticated South American camelid.',
      'to be or not to be',
      '!!! ???',
      '  !!  ',
      'ünïcödé café 日本語 😀👍🏽 naïve',
      'Relational databases store rows in tables (passage 12).',
      'a',
      'x'.repeat(40),
      'Llamas, LLAMAS and llama: one term.',
    ];
    const digest = createHash('sha256');
    for (const text of texts)
      for (const [d, seed] of [
        [768, 1],
        [8, 7],
        [1024, 2654435761],
      ] as const)
        digest.update(lexicalVector(text, d, seed));
    expect(digest.digest('hex')).toBe('efddaa4a32828d310eaf289a03a7b4bcffe600ecb2de59aa55b9277dc5df2767');
    // A request's vectors share one buffer: each is its text's alone.
    const batch = await vectors(texts.slice(0, 4));
    for (const [i, text] of texts.slice(0, 4).entries()) expect(batch[i]).toEqual((await vectors([text]))[0]);
  });
});

test("token counts (summed per piece, remembered) are the library's count of the whole text; special tokens are text", async () => {
  const samples = [
    'Hello world',
    'a   b',
    '  both ends  ',
    'line\n\nbreaks\r\n and\ttabs',
    "it's they're I'll WE'VE",
    '12345678 3.14 1,000,000',
    'ünïcödé café 日本語 😀👍🏽',
    'x'.repeat(300),
    'word '.repeat(100),
    'https://example.com/a?b=c&d=e',
  ];
  for (const s of samples) for (let i = 0; i < 2; i++) expect(countTokens(s), s).toBe(libraryCount(s));
  const res = await embed({ model: MODEL, input: ['hello <|endoftext|> there'] });
  expect(res.status).toBe(200);
  expect(res.body.usage.prompt_tokens).toBe(libraryCount('hello <|endoftext|> there', { disallowedSpecial: new Set() }));
});

describe('bad input', () => {
  test('limits on input: 400 naming input, with the position and the limit', async () => {
    expectError(await embed({ model: MODEL, input: [] }), 400, { param: 'input', code: 'invalid_input' });
    const blank = await embed({ model: MODEL, input: ['fine', '  \n'] });
    expectError(blank, 400, { param: 'input', code: 'invalid_input' });
    expect(blank.body.error.message).toContain('input[1]');
    expectError(await embed({ model: MODEL, input: '' }), 400, { param: 'input', code: 'invalid_input' });
    const many = await embed({ model: MODEL, input: Array.from({ length: 2049 }, () => 'x') });
    expectError(many, 400, { param: 'input', code: 'too_many_inputs' });
    expect(many.body.error.message).toContain('2048');
    // About 600 tokens: over the BGE models' 512, within m2-bert's 8192.
    const long = 'token '.repeat(600);
    const tooLong = await embed({ model: MODEL, input: ['short', long] });
    expectError(tooLong, 400, { param: 'input', code: 'input_too_long' });
    expect(tooLong.body.error.message).toBe('input[1] is over 512 tokens long; this model reads at most 512 tokens per text.');
    expect((await embed({ model: 'togethercomputer/m2-bert-80M-8k-retrieval', input: long })).status).toBe(200);
    expect((await embed({ model: MODEL, input: Array.from({ length: 2048 }, (_, i) => `text ${i}`) })).body.data).toHaveLength(2048);
  });

  test('ill-formed fields: 400 naming the field', async () => {
    expectError(await embed({ model: MODEL, input: 42 }), 400, { param: 'input' });
    expectError(await embed({ model: MODEL, input: ['ok', 7] }), 400);
    expectError(await embed({ model: MODEL }), 400, { param: 'input', code: 'required' });
    expectError(await embed({ input: 'x' }), 400, { param: 'model', code: 'required' });
    expectError(await embed({ model: MODEL, input: 'x', encoding_format: 'int8' }), 400, { param: 'encoding_format' });
    // A field the platform's contract does not declare is ignored, and named (open bodies).
    expect((await embed({ model: MODEL, input: 'x', dimensions: 256 })).headers['x-ignored-fields']).toBe('dimensions');
    expectError(await t.caller.http.post('/v1/embeddings').set('Content-Type', 'text/plain').send('hello'), 415, { code: 'unsupported_media_type' });
  });

  test('models: unknown 404 param model; a model of another kind 400 param model', async () => {
    expectError(await embed({ model: 'nope/no-such-model', input: 'x' }), 404, { param: 'model', code: 'model_not_found' });
    const chat = await embed({ model: 'meta-llama/Meta-Llama-3.1-8B-Instruct', input: 'x' });
    expectError(chat, 400, { param: 'model', code: 'model_not_available' });
    expect(chat.body.error.message).toContain('not an embedding model');
    expectError(await embed({ model: 'Salesforce/Llama-Rank-v1', input: 'x' }), 400, { param: 'model', code: 'model_not_available' });
  });
});
