// The per-request `Prefer` header (spec/tags/control.yaml, "Per request"): each form a fault rule has, asked by one
// request, seen through the official clients as an application's test suite would (openai for chat and its
// streams, together-ai for a video's failure), and the forms that do not apply, ignored.
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import OpenAI from 'openai';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parsePrefer } from '../server/modules/control/faults.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const MODEL = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const T2V = 'Wan-AI/Wan2.2-T2V-A14B';
const SMALL = { width: 128, height: 72, seconds: '1', fps: 12 } as const;
const chat = { model: MODEL, messages: [{ role: 'user' as const, content: 'Tell me a long story about llamas' }], max_tokens: 12 };
let t: TestPlatform;
let control: PlatformClient;
let openai: OpenAI;

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
  openai = new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
});
afterAll(() => t?.close());

/** A streamed chat through the openai client with `prefer`: how many chunks came, and how it ended. */
async function streamChat(prefer: string) {
  const stream = await openai.chat.completions.create({ ...chat, stream: true }, { headers: { Prefer: prefer } });
  let chunks = 0;
  try {
    for await (const _chunk of stream) chunks++;
    return { chunks, error: undefined };
  } catch (error) {
    return { chunks, error: error as Error };
  }
}

describe('the grammar', () => {
  test('each form, as the rule it stands for', () => {
    expect(parsePrefer('code=503, delay=250')).toEqual({ status: 503, delay_ms: 250 });
    expect(parsePrefer('code=503;delay=1')).toEqual({ status: 503, delay_ms: 1 });
    expect(parsePrefer('drop')).toEqual({ drop: true });
    expect(parsePrefer('stream-cut=2')).toEqual({ stream: { after_chunks: 2, cut: true } });
    expect(parsePrefer('stream-stall=2;ms=500')).toEqual({ stream: { after_chunks: 2, stall_ms: 500, cut: false } });
    expect(parsePrefer('stream-stall=1; ms=20, stream-cut=1')).toEqual({ stream: { after_chunks: 1, stall_ms: 20, cut: true } });
    expect(parsePrefer('stream-stall=3')).toEqual({ stream: { after_chunks: 3, stall_ms: 1000, cut: false } });
    expect(parsePrefer('fail-job="content_policy_violation"')).toEqual({ fail_job: { code: 'content_policy_violation' } });
    expect(parsePrefer('DELAY=90000, Code=429')).toEqual({ delay_ms: 60_000, status: 429 });
  });

  test('unknown preferences and values out of range are ignored; the first of a name counts', () => {
    expect(parsePrefer('return=minimal, respond-async')).toBeUndefined();
    expect(parsePrefer('code=200')).toBeUndefined();
    expect(parsePrefer('code=abc, delay=-5, stream-cut=x, drop=no, fail-job=Not A Code')).toBeUndefined();
    expect(parsePrefer(`fail-job=${'x'.repeat(65)}`)).toBeUndefined();
    expect(parsePrefer('code=500, code=429')).toEqual({ status: 500 });
    expect(parsePrefer('return=minimal, code=502')).toEqual({ status: 502 });
  });
});

describe('through the official clients', () => {
  test('code=...: the openai client sees the platform error of that status', async () => {
    const err = await openai.chat.completions.create(chat, { headers: { Prefer: 'code=429' } }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.headers.get('x-fault-injected')).toBe('prefer');
  });

  test('drop: the connection closes with no answer; the next request is answered', async () => {
    const err = await openai.chat.completions.create(chat, { headers: { Prefer: 'drop' } }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIConnectionError);
    await expect(t.caller.http.get('/v1/whoami').set('Prefer', 'drop')).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect((await openai.chat.completions.create(chat)).choices).toHaveLength(1);
  });

  test('drop wins over code', async () => {
    await expect(t.caller.http.get('/v1/whoami').set('Prefer', 'code=500, drop')).rejects.toThrow(/socket hang up|ECONNRESET/);
  });

  test('stream-cut=2: the openai client sees an error while iterating, after 2 chunks', async () => {
    const cut = await streamChat('stream-cut=2');
    expect(cut.chunks).toBe(2);
    expect(cut.error).toBeDefined();
    const whole = await streamChat('return=minimal');
    expect(whole.error).toBeUndefined();
    expect(whole.chunks).toBeGreaterThan(2);
  });

  test('stream-stall=1;ms=...: the stream pauses, then ends whole; with stream-cut it is cut after the pause', async () => {
    const stalled = await streamChat('stream-stall=1;ms=30');
    expect(stalled.error).toBeUndefined();
    expect(stalled.chunks).toBeGreaterThan(1);
    const cut = await streamChat('stream-stall=1; ms=10, stream-cut=1');
    expect(cut.chunks).toBe(1);
    expect(cut.error).toBeDefined();
  });

  test('stream-cut on a request that does not stream is ignored: a whole answer, no x-fault-injected', async () => {
    const res = await t.caller.http.post('/v1/chat/completions').set('Prefer', 'stream-cut=0').send(chat);
    expect(res.status).toBe(200);
    expect(res.headers['x-fault-injected']).toBeUndefined();
  });

  test('fail-job=<code>: together-ai creates the video; it fails at its first step with that error.code', async () => {
    const together = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, maxRetries: 0 });
    const job = await together.videos
      .create({ model: T2V, prompt: 'doomed', ...SMALL, output_format: 'MP4' }, { headers: { Prefer: 'fail-job=content_policy_violation' } })
      .withResponse();
    expect(job.response.headers.get('x-fault-injected')).toBe('prefer');
    expect(job.data.status).toBe('in_progress');
    await control.POST('/_control/time/advance', { body: { seconds: 0 } });
    const failed = await together.videos.retrieve(job.data.id);
    expect(failed.status).toBe('failed');
    expect(failed.error?.code).toBe('content_policy_violation');
    expect(failed.error?.message).toMatch(/content_policy_violation/);
    // One request only: the next video renders.
    const next = await together.videos.create({ model: T2V, prompt: 'fine', ...SMALL, output_format: 'MP4' });
    await control.POST('/_control/time/advance', { body: { seconds: 0 } });
    expect((await together.videos.retrieve(next.id)).status).toBe('completed');
  });

  test('fail-job on an operation that creates no job is ignored', async () => {
    const res = await t.caller.http.post('/v1/chat/completions').set('Prefer', 'fail-job=nope').send(chat);
    expect(res.status).toBe(200);
    expect(res.headers['x-fault-injected']).toBeUndefined();
  });

  test('a fault rule matching the request is used instead of its Prefer', async () => {
    // A status whoami documents (the suite checks every status it sees is documented).
    const { data: rule } = await control.POST('/_control/faults', { body: { match: { operations: ['whoami'] }, status: 503, count: 1 } });
    const res = await t.caller.http.get('/v1/whoami').set('Prefer', 'drop');
    expectError(res, 503, { code: 'model_overloaded' });
    expect(res.headers['x-fault-injected']).toBe(rule!.id);
  });
});
