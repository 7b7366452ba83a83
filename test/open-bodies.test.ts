// Open request bodies (the spec's "Open request bodies"): what the platform's contract leaves open takes fields it
// does not declare, ignores them and names them in `x-ignored-fields`; declared fields keep their checks; rerank's
// closed body still refuses them; STRICT_REQUESTS=on refuses them everywhere. With it: the OpenAI clients' image
// `size`, and the retired v1 create's 403 whatever the body.
import OpenAI from 'openai';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError } from './support/expect.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const messages = [{ role: 'user', content: 'Hello' }];
/** Fields the openai client and OpenAI-shaped libraries send that the platform's contract does not declare. */
const OPENAI_FIELDS = {
  store: true,
  metadata: { run: 'ci' },
  service_tier: 'auto',
  modalities: ['text'],
  verbosity: 'low',
  prediction: { type: 'content', content: 'Hi' },
};

let t: TestPlatform;
let strict: TestPlatform;
beforeAll(async () => {
  [t, strict] = await Promise.all([startTestPlatform(), startTestPlatform({ config: { strictRequests: true } })]);
}, 60_000);
afterAll(async () => {
  await t?.close();
  await strict?.close();
});

describe('open bodies', () => {
  test('chat with each OpenAI field answers 200 naming it in x-ignored-fields; with STRICT_REQUESTS=on, 400 as before', async () => {
    for (const [field, value] of Object.entries(OPENAI_FIELDS)) {
      const res = await t.caller.http.post('/v1/chat/completions').send({ model: CHAT, messages, [field]: value });
      expect(res.status, `${field}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.headers['x-ignored-fields']).toBe(field);
      expectError(await strict.caller.http.post('/v1/chat/completions').send({ model: CHAT, messages, [field]: value }), 400, {
        param: field,
        code: 'additionalProperties',
      });
    }
    // Nothing is ignored, nothing is said.
    const plain = await t.caller.http.post('/v1/chat/completions').send({ model: CHAT, messages });
    expect(plain.status).toBe(200);
    expect(plain.headers['x-ignored-fields']).toBeUndefined();
    // The journal says so too.
    const journal = await t.http
      .get('/_control/journal')
      .query({ operation: 'createChatCompletion', limit: 2 })
      .set('Authorization', `Bearer ${TEST_CONTROL_KEY}`);
    expect(journal.body.data.map((e: { ignored_fields: string[] | null }) => e.ignored_fields)).toEqual([null, ['prediction']]);
  });

  test('through the openai client; at any depth (a message, a content part); declared fields keep their checks', async () => {
    const openai = new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const { data, response } = await openai.chat.completions
      .create({
        model: CHAT,
        store: true,
        metadata: { run: 'ci' },
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } } as never] },
          { role: 'assistant', content: 'Hello', refusal: null },
          { role: 'user', content: 'Again' },
        ],
      })
      .withResponse();
    expect(data.choices[0]!.message.role).toBe('assistant');
    expect(response.headers.get('x-ignored-fields')).toBe('store, metadata, messages.0.content.0.cache_control, messages.1.refusal');

    // A declared field's check still applies; the ignored ones are named on the refusal too.
    const bad = await t.caller.http.post('/v1/chat/completions').send({ model: CHAT, messages, store: true, temperature: 'hot' });
    expectError(bad, 400, { param: 'temperature' });
    expect(bad.headers['x-ignored-fields']).toBe('store');
    // A name the header cannot carry as it is is percent-encoded; past 20 names the rest are counted.
    const odd = await t.caller.http.post('/v1/chat/completions').send({ model: CHAT, messages, 'a,b%c d': 1, 'é\n': 2, '\ud800': 3 });
    expect(odd.headers['x-ignored-fields']).toBe('a%2Cb%25c%20d, %C3%A9%0A, %EF%BF%BD');
    const many = await t.caller.http
      .post('/v1/chat/completions')
      .send({ model: CHAT, messages, ...Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`f${i}`, i])) });
    expect(many.headers['x-ignored-fields']).toBe(`${Array.from({ length: 20 }, (_, i) => `f${i}`).join(', ')}, +5 more`);
  });

  test("rerank's body stays closed: an unknown field is 400", async () => {
    const res = await t.caller.http.post('/v1/rerank').send({ model: 'Salesforce/Llama-Rank-v1', query: 'q', documents: ['a'], return_text: true });
    expectError(res, 400, { param: 'return_text', code: 'additionalProperties' });
    expect(res.headers['x-ignored-fields']).toBeUndefined();
  });
});

describe("images: the OpenAI clients' size", () => {
  test("openai images.generate({ size: '256x256' }) returns a 256x256 image", async () => {
    const openai = new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const res = await openai.images.generate({
      model: 'black-forest-labs/FLUX.1-schnell',
      prompt: 'a red square',
      size: '256x256',
      response_format: 'b64_json',
    });
    const meta = await sharp(Buffer.from(res.data![0]!.b64_json!, 'base64')).metadata();
    expect([meta.width, meta.height]).toEqual([256, 256]);
  });

  test('a size that is not WxH, or out of range, is 400 naming size', async () => {
    const generate = (body: object) => t.caller.http.post('/v1/images/generations').send({ model: 'black-forest-labs/FLUX.1-schnell', prompt: 'x', ...body });
    expectError(await generate({ size: 'large' }), 400, { param: 'size', code: 'invalid_size' });
    expectError(await generate({ size: '32x256' }), 400, { param: 'size' });
  });
});

describe('v1 endpoint creation is refused first', () => {
  test('POST /v1/endpoints answers 403 whatever the request (empty, ill-typed, malformed or no JSON, an unknown query) and creates nothing', async () => {
    const post = () => t.caller.http.post('/v1/endpoints');
    const before = await t.services.db.prisma.v1Endpoint.count();
    for (const res of [
      await post().send({}),
      await post().send({ model: 5, hardware: [], autoscaling: 'x' }),
      await post().set('Content-Type', 'text/plain').send('hello'),
      await post().set('Content-Type', 'application/json').send('{"model": [1,'),
      await post().query({ zz: 1 }).send({}),
      await post(),
    ]) {
      expectError(res, 403, { code: 'endpoints_v1_create_access_disabled' });
    }
    expect(await t.services.db.prisma.v1Endpoint.count()).toBe(before);
  });
});
