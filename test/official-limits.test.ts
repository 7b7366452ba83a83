// The official clients, unchanged but for `baseURL`, under the dynamic rate limits: a 429 (and a 503) carries
// `Retry-After` and `retry-after-ms`, which both clients read to time their own retry, and the retry succeeds. The
// server's request log shows the refused attempt and the successful one.
import OpenAI from 'openai';
import Together from 'together-ai';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { loadConfig } from '../server/core/config.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const MODEL = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
let t: TestPlatform;

beforeAll(async () => {
  // One request per 1-second window and no queue, so the second request of a window is refused at once.
  t = await startTestPlatform({
    config: { rateLimits: { ...loadConfig({}).rateLimits, baseRequests: 1, windowSeconds: 1, queueSize: 0, keyPrefix: `official-${Date.now()}` } },
  });
});
afterAll(() => t?.close());
// Each test at the start of a window of its own: the windows follow the platform's clock and begin on whole seconds,
// and a test that began late in one (the clock starts at the wall clock's millisecond) would be told to retry within
// milliseconds and retry again before it could move the clock.
beforeEach(() => t.clock.advance(2000 - (t.clock.now() % 1000)));

/** Statuses the server logged for chat completions since `from` (an index into the log). */
const statusesSince = (from: number) =>
  t.logs
    .slice(from)
    .map((line) => JSON.parse(line))
    .filter((l) => l.msg === 'request' && l.operationId === 'createChatCompletion')
    .map((l) => l.status as number);

const clients = {
  openai: () => new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1` }),
  'together-ai': () => new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1` }),
};

describe.each(Object.keys(clients) as (keyof typeof clients)[])('%s', (name) => {
  test('a 429 is retried after Retry-After, and the retry succeeds', async () => {
    const client = clients[name]() as OpenAI;
    const messages = [{ role: 'user' as const, content: 'Hello there' }];
    await client.chat.completions.create({ model: MODEL, messages }); // takes the window's one request
    const from = t.logs.length;
    const pending = client.chat.completions.create({ model: MODEL, messages }).withResponse();
    // The window ends on the platform's clock: the test moves it on once the 429 is answered, while the client waits.
    await expect.poll(() => statusesSince(from), { timeout: 10_000, interval: 20 }).toEqual([429]);
    t.clock.advance(1000);
    const { data, response } = await pending;
    expect(data.object).toBe('chat.completion');
    expect(response.headers.get('x-ratelimit-limit')).toBe('1');
    // One refusal, then success: the retry waited for the next window, as the 429 said (a retry on the client's own
    // sub-second backoff would have met a second 429).
    expect(statusesSince(from)).toEqual([429, 200]);
  });

  test('without retries the client raises its RateLimitError with the envelope', async () => {
    const client = clients[name]() as OpenAI;
    const messages = [{ role: 'user' as const, content: 'Hello there' }];
    await client.chat.completions.create({ model: MODEL, messages }, { maxRetries: 0 }).catch(() => undefined);
    const err: any = await client.chat.completions.create({ model: MODEL, messages }, { maxRetries: 0 }).catch((e) => e);
    expect(err.status).toBe(429);
    expect(err.constructor.name).toBe('RateLimitError');
    expect(err.headers.get('retry-after')).toMatch(/^\d+$/);
    const code = name === 'openai' ? err.code : err.error.error.code;
    expect(code).toBe('dynamic_request_limited');
  });
});
