// The official together-ai client's queue calls (client.beta.jig.queue: submit, retrieve, cancel, metrics, clear)
// against this server, with only baseURL changed; the job is worked by the built-in chat worker on the runner.
import Together from 'together-ai';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
let t: TestPlatform;
let client: Together;
beforeAll(async () => {
  t = await startTestPlatform();
  client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
});
afterAll(() => t?.close());

test('submit, poll until done, and read the outputs', async () => {
  const { requestId } = await client.beta.jig.queue.submit({
    model: CHAT,
    payload: { messages: [{ role: 'user', content: 'from the SDK' }] },
    info: { who: 'sdk' },
    priority: 3,
  });
  expect(requestId).toMatch(/^req_/);
  const pending = await client.beta.jig.queue.retrieve({ model: CHAT, request_id: requestId });
  expect(pending).toMatchObject({ request_id: requestId, model: CHAT, status: 'pending', priority: 3, info: { who: 'sdk' } });
  await t.services.runner.drain();
  const done = await client.beta.jig.queue.retrieve({ model: CHAT, request_id: requestId });
  expect(done.status).toBe('done');
  expect(done.claimed_at).toBeDefined();
  expect(done.done_at).toBeDefined();
  expect(JSON.stringify(done.outputs)).toMatch(/from the SDK/);
});

test('cancel a pending job; a running one answers 409 (ConflictError), not retried', async () => {
  const model = 'acme/sdk-queue';
  const a = (await client.beta.jig.queue.submit({ model, payload: { n: 1 } })).requestId;
  t.clock.advance(1);
  const b = (await client.beta.jig.queue.submit({ model, payload: { n: 2 } })).requestId;
  expect(await client.beta.jig.queue.metrics({ model })).toEqual({ messages_running: 0, messages_waiting: 2, total_jobs: 2 });
  expect(await client.beta.jig.queue.cancel({ model, request_id: b })).toEqual({ status: 'canceled' });
  expect((await client.beta.jig.queue.retrieve({ model, request_id: b })).status).toBe('canceled');
  await t.caller.http.post('/v1/queue/claim').send({ model }).expect(200);
  const retrying = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1` });
  await expect(retrying.beta.jig.queue.cancel({ model, request_id: a })).rejects.toBeInstanceOf(Together.ConflictError);
  expect((await client.beta.jig.queue.retrieve({ model, request_id: a })).status).toBe('running');
  await expect(client.beta.jig.queue.retrieve({ model, request_id: 'req_missing' })).rejects.toBeInstanceOf(Together.NotFoundError);
});

test('clear cancels what is pending', async () => {
  const model = 'acme/sdk-clear';
  for (let i = 0; i < 3; i++) await client.beta.jig.queue.submit({ model, payload: { i } });
  expect(await client.beta.jig.queue.clear({ model })).toEqual({ canceled_count: 3 });
  expect(await client.beta.jig.queue.metrics({ model })).toEqual({ messages_running: 0, messages_waiting: 0, total_jobs: 0 });
});
