// Two server processes (as `npm start` runs them) on one database share one control plane: each call below is made
// through one process and its effect checked through the other, with requests alternating between them. On
// PostgreSQL a change is heard at once (NOTIFY); on SQLite each process polls for it; either way a control call
// answers only once every live process has applied it, so nothing here waits on the wall clock for it.
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type ScratchDatabase, scratchDatabase } from './support/database.ts';
import { jsonl } from './support/files.ts';
import { TEST_CONTROL_KEY } from './support/platform.ts';
import { type ServerProcess, startServerProcess } from './support/server-process.ts';

const MODEL = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
// A fine-tune's training takes an hour of the platform's clock: only a time advance gets it done.
const ENV = { CONTROL_KEY: TEST_CONTROL_KEY, DURATION_FINE_TUNE_TRAIN_MS: '3600000', RATE_LIMIT_WINDOW_SECONDS: '300' };

let db: ScratchDatabase;
let a: ServerProcess;
let b: ServerProcess;
let key: string;

beforeAll(async () => {
  db = await scratchDatabase();
  // A runs no background work; B's runner takes the jobs' steps.
  a = await startServerProcess({ DATABASE_URL: db.url, RUNNER_ENABLED: 'false', ...ENV });
  b = await startServerProcess({ DATABASE_URL: db.url, ...ENV });
  key = a.key!;
}, 120_000);
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await db?.drop();
});

const call = async (s: ServerProcess, path: string, init: { method?: string; body?: unknown; control?: boolean } = {}) => {
  const res = await fetch(`${s.url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { Authorization: `Bearer ${init.control ? TEST_CONTROL_KEY : key}`, 'Content-Type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};
const control = (s: ServerProcess, path: string, body?: unknown, method?: string) => call(s, `/_control${path}`, { body, method, control: true });
const chat = (s: ServerProcess) => call(s, '/v1/chat/completions', { body: { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 } });

test('a scripted tool call and then its final text arrive in order through the openai client, each call answered by the other process', async () => {
  await control(a, '/scripts', {
    match: { tool: 'get_weather' },
    answers: [{ tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] }, { content: 'It is sunny in Paris.' }],
    after_last: 'fall_through',
  });
  // Each request the client makes goes to the other process than the one before.
  const servers = [a, b];
  let n = 0;
  const served: string[] = [];
  const alternate: typeof fetch = (input, init) => {
    const server = servers[n++ % 2]!;
    served.push(server.url);
    return fetch(String(input).replace(a.url, server.url), init);
  };
  const client = new OpenAI({ apiKey: key, baseURL: `${a.url}/v1`, fetch: alternate, maxRetries: 0 });
  const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
  const first = await client.chat.completions.create({ model: MODEL, messages, tools });
  const toolCall = first.choices[0]!.message.tool_calls![0]!;
  expect(toolCall.type === 'function' && toolCall.function.name).toBe('get_weather');
  messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: toolCall.id, content: '{"sky": "clear"}' });
  const second = await client.chat.completions.create({ model: MODEL, messages, tools });
  expect(second.choices[0]!.message.content).toBe('It is sunny in Paris.');
  expect(served).toEqual([a.url, b.url]);
  // The sequence was consumed once in total: a third call falls through to the engine.
  const third = await client.chat.completions.create({ model: MODEL, messages, tools });
  expect(third.choices[0]!.message.content).not.toBe('It is sunny in Paris.');
  await control(b, '/scripts', undefined, 'DELETE');
});

test('a fault rule with count: 1 made on one process answers exactly one request in total', async () => {
  await control(b, '/faults', { match: { operations: ['createChatCompletion'] }, status: 503, count: 1 });
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) for (const s of [a, b]) statuses.push((await chat(s)).status);
  expect(statuses.filter((s) => s === 503)).toHaveLength(1);
  expect(statuses.filter((s) => s === 200)).toHaveLength(5);
  expect((await control(a, '/faults')).body.data).toEqual([]);
});

test("the journal read on either process holds both processes' requests, newest first, ids unique", async () => {
  await control(a, '/journal', undefined, 'DELETE');
  expect((await call(a, '/v1/hardware')).status).toBe(200);
  expect((await call(b, '/v1/whoami')).status).toBe(200);
  for (const s of [a, b]) {
    const entries = (await control(s, '/journal')).body.data as { id: number; operation: string }[];
    expect(entries.map((e) => e.operation)).toEqual(['whoami', 'listHardware']);
    expect(new Set(entries.map((e) => e.id)).size).toBe(2);
  }
});

test('a limit set on one process refuses on the other', async () => {
  const organization = (await call(a, '/v1/whoami')).body.organization_id as string;
  const set = await control(a, '/rate-limits', { organization_id: organization, model: MODEL, limit: { requests: 1 }, usage: { requests: 1 } }, 'PATCH');
  expect(set.status).toBe(200);
  const refused = await chat(b);
  expect(refused.status).toBe(429);
  expect(refused.body.error.code).toBe('dynamic_request_limited');
  expect((await control(b, `/rate-limits?organization_id=${organization}&model=${encodeURIComponent(MODEL)}`)).body.set_limit).toEqual({
    requests: 1,
    tokens: null,
  });
  await control(b, '/rate-limits', { organization_id: organization, model: MODEL, limit: { requests: null } }, 'PATCH');
  expect((await chat(a)).status).toBe(200);
});

test("a time advance on one process completes a fine-tune whose step the other's runner holds", async () => {
  const form = new FormData();
  form.append('purpose', 'fine-tune');
  form.append('file_name', 'd.jsonl');
  form.append('file', new Blob([jsonl(Array.from({ length: 4 }, (_, i) => ({ text: `sample ${i}` })))]), 'd.jsonl');
  const file = (await (await fetch(`${b.url}/v1/files/upload`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form })).json()) as {
    id: string;
  };
  const created = await call(b, '/v1/fine-tunes', { body: { model: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference', training_file: file.id } });
  expect(created.status).toBe(200);
  const id = created.body.id as string;
  // B's runner takes the job into training, an hour long.
  await expect.poll(async () => (await call(a, `/v1/fine-tunes/${id}`)).body.status, { timeout: 30_000, interval: 50 }).toBe('running');
  const advanced = await control(a, '/time/advance', { seconds: 7200 });
  expect(advanced.status).toBe(200);
  // Both clocks stand at the advanced time, and the job has trained (whichever runner took the step).
  const now = Date.parse(advanced.body.now);
  expect(Date.parse((await control(b, '/time')).body.now)).toBeGreaterThanOrEqual(now);
  await expect.poll(async () => (await call(b, `/v1/fine-tunes/${id}`)).body.status, { timeout: 30_000, interval: 50 }).toBe('completed');
});
