// The control plane's rate limits and stream faults (spec/tags/control.yaml), used as an application's test suite
// would: the typed client with the control key to set things up, the official openai client to see the effect.
import { randomUUID } from 'node:crypto';
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { loadConfig } from '../server/core/config.ts';
import { expectError } from './support/expect.ts';
import { uploadFile } from './support/files.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const MODEL = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const chat = { model: MODEL, messages: [{ role: 'user' as const, content: 'Tell me a long story about llamas' }], max_tokens: 16 };
let t: TestPlatform;
let control: PlatformClient;
let org: string;

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
  org = t.caller.identity.organizationId;
});
afterAll(() => t?.close());
beforeEach(async () => {
  await control.DELETE('/_control/faults');
  await control.DELETE('/_control/journal');
});

const readLimit = async (c: PlatformClient, organization_id: string, model = MODEL) =>
  (await c.GET('/_control/rate-limits', { params: { query: { organization_id, model } } })).data!;

describe('rate limits', () => {
  test('read: the base limits, nothing counted; a request counts one and its tokens', async () => {
    const model = 'mistralai/Mixtral-8x7B-Instruct-v0.1';
    const before = await readLimit(control, org, model);
    const base = t.config.rateLimits;
    expect(before).toEqual({
      organization_id: org,
      model,
      dedicated: false,
      limit: { requests: base.baseRequests, tokens: base.baseTokens },
      set_limit: { requests: null, tokens: null },
      usage: { requests: 0, tokens: 0 },
      window: { seconds: base.windowSeconds, resets_in_ms: 0 },
      store: 'memory',
    });
    // The window is this test's own: set long enough that it is still open when read.
    await control.PATCH('/_control/rate-limits', { body: { organization_id: org, model, resets_in_ms: 60_000 } });
    expect((await t.caller.http.post('/v1/chat/completions').send({ ...chat, model })).status).toBe(200);
    const after = await readLimit(control, org, model);
    expect(after.usage.requests).toBe(1);
    expect(after.usage.tokens).toBeGreaterThan(0);
    expect(after.window.resets_in_ms).toBeGreaterThan(0);
  });

  test('usage at a set limit: the next request is refused with the platform 429 and the window end as Retry-After', async () => {
    const { data } = await control.PATCH('/_control/rate-limits', {
      body: { organization_id: org, model: MODEL, limit: { requests: 3 }, usage: { requests: 3 }, resets_in_ms: 5000 },
    });
    expect(data).toMatchObject({
      limit: { requests: 3, tokens: t.config.rateLimits.baseTokens },
      set_limit: { requests: 3, tokens: null },
      usage: { requests: 3 },
    });
    expect(data!.window.resets_in_ms).toBeLessThanOrEqual(5000);
    const res = await t.caller.http.post('/v1/chat/completions').send(chat);
    expectError(res, 429, { code: 'dynamic_request_limited', type: 'dynamic_request_limited', param: null });
    expect(res.headers['x-ratelimit-limit']).toBe('3');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(5);
    // Other models and other organizations are untouched.
    expect((await t.caller.http.post('/v1/chat/completions').send({ ...chat, model: 'mistralai/Mixtral-8x7B-Instruct-v0.1' })).status).toBe(200);
    // Back to the dynamic limit, the window emptied.
    const { data: back } = await control.PATCH('/_control/rate-limits', {
      body: { organization_id: org, model: MODEL, limit: { requests: null }, usage: { requests: 0, tokens: 0 } },
    });
    expect(back).toMatchObject({
      limit: { requests: t.config.rateLimits.baseRequests },
      set_limit: { requests: null, tokens: null },
      usage: { requests: 0, tokens: 0 },
    });
    expect((await t.caller.http.post('/v1/chat/completions').send(chat)).status).toBe(200);
  });

  test('the official client backs off on the 429 (its Retry-After) and succeeds once the window ends, without generating traffic', async () => {
    // Past RATE_LIMIT_QUEUE_WAIT_MS (1 s), so the server refuses rather than holding the request in its queue.
    await control.PATCH('/_control/rate-limits', {
      body: { organization_id: org, model: MODEL, limit: { requests: 1 }, usage: { requests: 1 }, resets_in_ms: 1500 },
    });
    const client = new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 2 });
    const pending = client.chat.completions.create(chat);
    // The window ends on the platform's clock: once the client has its 429, the test moves the clock past the window's
    // end while the client waits out the Retry-After.
    const refused = async () => (await control.GET('/_control/journal', { params: { query: { status: 429 } } })).data!.data.length;
    await expect.poll(refused, { timeout: 10_000, interval: 20 }).toBe(1);
    await control.POST('/_control/time/advance', { body: { seconds: 1.5 } });
    const completion = await pending;
    expect(completion.choices[0]!.message.content).toBeTruthy();
    const { data: journal } = await control.GET('/_control/journal', { params: { query: { operation: 'createChatCompletion' } } });
    expect(journal!.data.map((e) => e.status)).toEqual([200, 429]);
    await control.PATCH('/_control/rate-limits', { body: { organization_id: org, model: MODEL, limit: { requests: null } } });
  });

  test("a dedicated endpoint's model (the project's slug): its fixed limits", async () => {
    const model = `${t.caller.identity.projectSlug}/my-endpoint`;
    expect(await readLimit(control, org, model)).toMatchObject({
      dedicated: true,
      limit: { requests: t.config.rateLimits.dedicatedRequests, tokens: t.config.rateLimits.dedicatedTokens },
    });
  });

  test('refusals: an unknown organization 404, nothing to set 400, a limit below 1 400; nothing changes', async () => {
    expectError(
      await t.http.get('/_control/rate-limits').query({ organization_id: 'org_nope', model: MODEL }).set('Authorization', `Bearer ${TEST_CONTROL_KEY}`),
      404,
      {
        code: 'not_found',
        param: 'organization_id',
      },
    );
    const patch = (body: unknown) =>
      t.http
        .patch('/_control/rate-limits')
        .set('Authorization', `Bearer ${TEST_CONTROL_KEY}`)
        .send(body as object);
    expectError(await patch({ organization_id: 'org_nope', model: MODEL, usage: { requests: 1 } }), 404, { param: 'organization_id' });
    expectError(await patch({ organization_id: org, model: MODEL }), 400, { code: 'nothing_to_set', param: null });
    expectError(await patch({ organization_id: org, model: MODEL, limit: { requests: 0 } }), 400, { param: 'limit.requests' });
    expect((await readLimit(control, org)).set_limit).toEqual({ requests: null, tokens: null });
  });

  test('RATE_LIMITS=off: nothing is limited, the operations answer 409 rate_limits_off', async () => {
    const off = await startTestPlatform({ database: 'sqlite', config: { rateLimits: { ...loadConfig({}).rateLimits, enabled: false } } });
    try {
      const c = createPlatformClient({ baseUrl: off.url, apiKey: TEST_CONTROL_KEY });
      const { error, response } = await c.GET('/_control/rate-limits', {
        params: { query: { organization_id: off.caller.identity.organizationId, model: MODEL } },
      });
      expect(response.status).toBe(409);
      expect(error!.error.code).toBe('rate_limits_off');
      const set = await c.PATCH('/_control/rate-limits', {
        body: { organization_id: off.caller.identity.organizationId, model: MODEL, usage: { requests: 5 } },
      });
      expect([set.response.status, set.error!.error.code]).toEqual([409, 'rate_limits_off']);
    } finally {
      await off.close();
    }
  });

  // In memory and in Redis (every key under the prefix), a platform reset clears what the limiter holds.
  describe.each(['memory', 'redis'] as const)('a platform reset, %s store', (store) => {
    test('clears every window, the recent usage and the limits set', async () => {
      const p = await startTestPlatform({
        database: 'sqlite',
        config: {
          redisUrl: store === 'redis' ? REDIS_URL : undefined,
          rateLimits: { ...loadConfig({}).rateLimits, keyPrefix: `test-${randomUUID()}` },
        },
      });
      try {
        const c = createPlatformClient({ baseUrl: p.url, apiKey: TEST_CONTROL_KEY });
        const o = p.caller.identity.organizationId;
        await c.PATCH('/_control/rate-limits', { body: { organization_id: o, model: MODEL, limit: { requests: 2 }, resets_in_ms: 60_000 } });
        expect((await p.caller.http.post('/v1/chat/completions').send(chat)).status).toBe(200);
        await c.PATCH('/_control/rate-limits', {
          body: { organization_id: o, model: 'other/model', usage: { requests: 7, tokens: 70 }, resets_in_ms: 60_000 },
        });
        expect((await readLimit(c, o)).store).toBe(store);
        expect((await readLimit(c, o)).usage.requests).toBe(1);
        expect((await readLimit(c, o, 'other/model')).usage).toEqual({ requests: 7, tokens: 70 });

        // A project's reset leaves them (they count per organization).
        await c.POST('/_control/reset', { body: { project_id: p.caller.identity.projectId } });
        expect((await readLimit(c, o)).usage.requests).toBe(1);

        await c.POST('/_control/reset', { body: {} });
        for (const model of [MODEL, 'other/model']) {
          expect(await readLimit(c, o, model)).toMatchObject({
            set_limit: { requests: null, tokens: null },
            usage: { requests: 0, tokens: 0 },
            window: { resets_in_ms: 0 },
          });
        }
      } finally {
        await p.close();
      }
    });
  });
});

/** A streamed chat through the openai client: the events received, each with when it came, and how it ended. */
async function streamChat(key: string) {
  const client = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
  const started = performance.now();
  const chunks: number[] = [];
  const stream = await client.chat.completions.create({ ...chat, max_tokens: 12, stream: true });
  try {
    for await (const _chunk of stream) chunks.push(performance.now() - started);
    return { chunks, error: undefined };
  } catch (error) {
    return { chunks, error: error as Error };
  }
}

describe('stream faults', () => {
  test('cut: the openai client sees an error while iterating, after the chunks before the cut', async () => {
    const { data: rule } = await control.POST('/_control/faults', {
      body: { match: { operations: ['createChatCompletion'] }, stream: { after_chunks: 2, cut: true }, count: 1 },
    });
    expect(rule!.stream).toEqual({ after_chunks: 2, cut: true });
    const cut = await streamChat(t.caller.key);
    expect(cut.chunks).toHaveLength(2);
    expect(cut.error).toBeInstanceOf(Error);
    // Used once: the next stream is whole.
    const whole = await streamChat(t.caller.key);
    expect(whole.error).toBeUndefined();
    expect(whole.chunks.length).toBeGreaterThan(2);
    // The cut one finished no answer: only the whole one is in the journal.
    const { data: journal } = await control.GET('/_control/journal', { params: { query: { operation: 'createChatCompletion' } } });
    expect(journal!.data.map((e) => [e.status, e.fault])).toEqual([[200, null]]);
  });

  test('stall: the first chunks, then nothing until the stall ends, then the rest and [DONE]', async () => {
    const stallMs = 300;
    await control.POST('/_control/faults', { body: { stream: { after_chunks: 1, stall_ms: stallMs }, count: 1 } });
    const stalled = await streamChat(t.caller.key);
    expect(stalled.error).toBeUndefined();
    expect(stalled.chunks.length).toBeGreaterThan(2);
    // The server sent nothing for stallMs after the first chunk: the second came at least that long after the start.
    expect(stalled.chunks[1]!).toBeGreaterThanOrEqual(stallMs);
  });

  test('a stall that ends in a cut; a stream shorter than after_chunks is cut before [DONE]', async () => {
    await control.POST('/_control/faults', { body: { stream: { after_chunks: 1, stall_ms: 50, cut: true }, count: 1 } });
    const a = await streamChat(t.caller.key);
    expect([a.chunks.length, a.error instanceof Error]).toEqual([1, true]);
    await control.POST('/_control/faults', { body: { stream: { after_chunks: 10_000, cut: true }, count: 1 } });
    const b = await streamChat(t.caller.key);
    expect(b.chunks.length).toBeGreaterThan(2);
    expect(b.error).toBeInstanceOf(Error);
  });

  test('a stream rule passes requests that do not stream, without counting them', async () => {
    const { data: rule } = await control.POST('/_control/faults', { body: { stream: { after_chunks: 0, cut: true }, count: 1 } });
    expect((await t.caller.http.post('/v1/chat/completions').send(chat)).status).toBe(200);
    expect((await control.GET('/_control/faults')).data!.data).toMatchObject([{ id: rule!.id, hits: 0, count: 1 }]);
  });

  test('refusals: a stream fault with nothing to do, or with a status or drop, 400 naming stream', async () => {
    const post = (body: unknown) =>
      t.http
        .post('/_control/faults')
        .set('Authorization', `Bearer ${TEST_CONTROL_KEY}`)
        .send(body as object);
    expectError(await post({ stream: { after_chunks: 1 } }), 400, { code: 'fault_without_effect', param: 'stream' });
    expectError(await post({ stream: { after_chunks: 1, cut: true }, status: 500 }), 400, { code: 'invalid_value', param: 'stream' });
    expectError(await post({ stream: { after_chunks: 1, cut: true }, drop: true }), 400, { code: 'invalid_value', param: 'stream' });
    expect((await control.GET('/_control/faults')).data!.data).toEqual([]);
  });
});

describe("a project's reset (one DELETE per table)", () => {
  test("deletes the children reached through their parent (a fine-tune's events and checkpoints), and none of another project's", async () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({
      messages: [
        { role: 'user', content: `Q${i}?` },
        { role: 'assistant', content: `A${i}.` },
      ],
    }));
    const tune = async (caller: typeof t.caller) => {
      const file = await uploadFile(caller, 'fine-tune', rows);
      await t.advance(0);
      const res = await caller.http.post('/v1/fine-tunes').send({ model: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference', training_file: file, n_epochs: 1 });
      expect(res.status).toBe(200);
      return res.body.id as string;
    };
    const [mine, theirs] = [await tune(t.other), await tune(t.caller)];
    for (let i = 0; i < 20; i++) await t.advance(60_000);
    const events = (jobId: string) => t.services.db.prisma.fineTuneEvent.count({ where: { jobId } });
    const checkpoints = (jobId: string) => t.services.db.prisma.fineTuneCheckpoint.count({ where: { jobId } });
    expect(await events(mine)).toBeGreaterThan(0);
    expect(await checkpoints(mine)).toBeGreaterThan(0);
    const before = [await events(theirs), await checkpoints(theirs)];
    await control.POST('/_control/reset', { body: { project_id: t.other.identity.projectId } });
    expect([await events(mine), await checkpoints(mine)]).toEqual([0, 0]);
    expect([await events(theirs), await checkpoints(theirs)]).toEqual(before);
    expectError(await t.other.http.get(`/v1/fine-tunes/${mine}`), 404);
    expect((await t.caller.http.get(`/v1/fine-tunes/${theirs}`)).status).toBe(200);
  });
});
