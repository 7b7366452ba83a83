// An application's tests against the platform its global setup started: the official SDK and the typed client,
// steered through the control client, with a reset between tests.
import { createControlClient, createPlatformClient, PlatformError, unwrap } from '@inference-platform/client';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Together from 'together-ai';
import { beforeEach, expect, test } from 'vitest';

const { PLATFORM_URL: url, PLATFORM_API_KEY: apiKey, PLATFORM_CONTROL_KEY: controlKey } = process.env;
const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const control = createControlClient({ baseUrl: url, controlKey });
const api = createPlatformClient({ baseUrl: url, apiKey });
const together = new Together({ apiKey, baseURL: `${url}/v1`, maxRetries: 0 });

beforeEach(() => control.reset());

test('a streamed chat: together-ai and the typed client read the same text', async () => {
  const request = { model: CHAT, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 16, seed: 7 };
  let viaSdk = '';
  for await (const chunk of await together.chat.completions.create({ ...request, stream: true })) viaSdk += chunk.choices[0]?.delta?.content ?? '';
  let viaClient = '';
  for await (const chunk of await api.stream('/v1/chat/completions', request)) viaClient += chunk.choices[0]?.delta.content ?? '';
  expect(viaSdk.length).toBeGreaterThan(0);
  expect(viaClient).toBe(viaSdk);
});

test('a paged list, followed to its end', async () => {
  const ids = [];
  for await (const model of api.paginate('/v2/supported-models', { params: { query: { limit: 3 } } })) ids.push(model.id);
  const whole = await unwrap(api.GET('/v2/supported-models', { params: { query: { limit: 100 } } }));
  expect(ids).toEqual(whole.data.map((m) => m.id));
});

test('an upload from a path', async () => {
  const path = join(tmpdir(), `outside-app-${process.pid}.jsonl`);
  writeFileSync(path, '{"text": "hello"}\n');
  const file = await unwrap(api.upload('/v1/files/upload', { purpose: 'fine-tune', file_name: 'train.jsonl', file: { path } }));
  expect(file.filename).toBe('train.jsonl');
  expect((await unwrap(api.GET('/v1/files'))).data.map((f) => f.id)).toEqual([file.id]);
});

test("the reset before this test took the last test's upload away", async () => {
  expect((await unwrap(api.GET('/v1/files'))).data).toEqual([]);
});

test('a scripted agent loop: the model calls a tool, then answers with its result', async () => {
  await control.script({
    match: { model: CHAT, tool: 'get_weather' },
    answers: [{ tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] }, { content: 'It is 21 degrees in Paris.' }],
  });
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  const messages = [{ role: 'user', content: 'Weather in Paris?' }];
  const first = await together.chat.completions.create({ model: CHAT, messages, tools });
  const call = first.choices[0].message.tool_calls[0];
  expect(call.function.name).toBe('get_weather');
  expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
  messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '{"celsius": 21}' });
  const second = await together.chat.completions.create({ model: CHAT, messages, tools });
  expect(second.choices[0].message.content).toBe('It is 21 degrees in Paris.');
});

test('a 429 injected by a fault is retried by the typed client, after the wait the answer names', async () => {
  await control.fault({ match: { operations: ['createEmbedding'] }, status: 429, count: 1, retry_after_seconds: 2 });
  const waits = [];
  const patient = createPlatformClient({ baseUrl: url, apiKey, retry: { sleep: async (ms) => void waits.push(ms) } });
  const embedding = await unwrap(patient.POST('/v1/embeddings', { body: { model: 'BAAI/bge-base-en-v1.5', input: 'hello' } }));
  expect(embedding.data[0].embedding).toHaveLength(768);
  expect(waits).toEqual([2000]);
  // Without retries the same fault is the caller's: a PlatformError with the platform's envelope.
  await control.fault({ match: { operations: ['createEmbedding'] }, status: 429, count: 1 });
  const refused = await unwrap(api.POST('/v1/embeddings', { body: { model: 'BAAI/bge-base-en-v1.5', input: 'hello' }, retry: false })).catch((e) => e);
  expect(refused).toBeInstanceOf(PlatformError);
  expect(refused).toMatchObject({ status: 429, code: 'dynamic_request_limited' });
});

test("an image, rendered on the server's worker threads (the built package's pool-worker.js)", async () => {
  const image = await together.images.generate({ model: 'black-forest-labs/FLUX.1-schnell', prompt: 'a red square', width: 64, height: 64, output_format: 'png', response_format: 'base64' });
  // A PNG file's first bytes.
  expect(Buffer.from(image.data[0].b64_json, 'base64').subarray(1, 4).toString()).toBe('PNG');
});
