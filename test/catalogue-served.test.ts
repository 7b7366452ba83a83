// Every model of the catalogue (GET /v1/models) is served: the operation its type and capabilities name answers it
// with a success, or, for a model the platform serves only on dedicated endpoints, 400 `model_not_available` whose
// message says how to run it. A model of a type no operation serves fails here, so the catalogue cannot list one.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { silentWav } from './support/files.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
// `kind` is the model's own kind; `type` is the nearest the platform's list allows (a video model lists as `image`).
let models: { id: string; kind: string }[];
beforeAll(async () => {
  t = await startTestPlatform();
  const res = await t.caller.http.get('/v1/models');
  expect(res.status).toBe(200);
  models = res.body;
});
afterAll(() => t?.close());

/** The smallest real request of the operation that serves a model of this kind. */
function call(m: (typeof models)[number]) {
  const http = t.caller.http;
  switch (m.kind) {
    case 'chat':
      return http.post('/v1/chat/completions').send({ model: m.id, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4 });
    case 'moderation':
      // A moderation model screens a chat completion (`safety_model`), as on the platform.
      return http
        .post('/v1/chat/completions')
        .send({ model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', safety_model: m.id, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4 });
    case 'language':
      return http.post('/v1/completions').send({ model: m.id, prompt: 'Hello', max_tokens: 4 });
    case 'embedding':
      return http.post('/v1/embeddings').send({ model: m.id, input: 'Hello' });
    case 'rerank':
      return http.post('/v1/rerank').send({ model: m.id, query: 'hello', documents: ['hello there', 'goodbye'] });
    case 'video':
      return http.post('/v2/videos').send({ model: m.id, prompt: 'A red ball rolls', seconds: '1' });
    case 'image':
      return http.post('/v1/images/generations').send({ model: m.id, prompt: 'A red ball', width: 64, height: 64, n: 1 });
    case 'audio':
      // Speech models are those GET /v1/voices lists; the others transcribe.
      if (voices[m.id]) return http.post('/v1/audio/speech').send({ model: m.id, input: 'Hello.', voice: defaultVoice(m.id) });
      return http
        .post('/v1/audio/transcriptions')
        .field('model', m.id)
        .attach('file', silentWav(44 + 32_000), 'silence.wav');
    default:
      throw new Error(`no operation serves a model of kind '${m.kind}' (${m.id})`);
  }
}

let voices: Record<string, string> = {};
const defaultVoice = (model: string) => voices[model]!;

test('every catalogue model is served by its operation, or answers model_not_available saying how to run it', async () => {
  const v = await t.caller.http.get('/v1/voices');
  expect(v.status).toBe(200);
  voices = Object.fromEntries(v.body.data.map((e: { model: string; voices: { name: string }[] }) => [e.model, e.voices[0]!.name]));
  expect(models.length).toBeGreaterThan(30);
  const outcomes: string[] = [];
  for (const m of models) {
    const res = await call(m);
    if (res.status === 200) outcomes.push(`${m.id}: served`);
    else {
      expect([res.status, res.body.error?.code], `${m.id} (${m.kind}): ${JSON.stringify(res.body)}`).toEqual([400, 'model_not_available']);
      expect(res.body.error.message, m.id).toMatch(/dedicated endpoint/);
      outcomes.push(`${m.id}: model_not_available`);
    }
  }
  // Each kind the catalogue lists is served by some model.
  const served = new Set(models.filter((_, i) => outcomes[i]!.endsWith('served')).map((m) => m.kind));
  expect([...new Set(models.map((m) => m.kind))].filter((k) => !served.has(k))).toEqual([]);
});
