// The typed client as a user imports it (by the package's own name, through package.json `exports`), against a
// running platform: typed calls and the envelope, headers in any form, streams of server-sent events (a cut stream
// is an error), paged lists followed to their end, multipart uploads from a path, bytes and a stream, a 429 the
// client retries after the wait the answer names, a timeout, PlatformError's fields, and the control client.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import {
  type components,
  createControlClient,
  createPlatformClient,
  type ErrorEnvelope,
  PlatformError,
  PlatformStreamError,
  PlatformTimeoutError,
  type RetryEvent,
  type StreamEvent,
  unwrap,
} from '@inference-platform/client';
import { afterAll, beforeAll, describe, expect, expectTypeOf, test } from 'vitest';
import { silentWav } from './support/files.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
/** The text of a whole chat completion (the contract's answer is a completion or, streamed, chunks). */
const message = (completion: { choices: unknown[] }) => (completion.choices[0] as { message: { content: string | null } }).message.content;

let t: TestPlatform;
const dir = mkdtempSync(join(tmpdir(), 'platform-client-'));
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The caller's client with retries whose waits are recorded, not slept. */
function recordingClient() {
  const waits: RetryEvent[] = [];
  const api = createPlatformClient({
    baseUrl: t.url,
    apiKey: t.caller.key,
    retry: { sleep: async () => {}, onRetry: (e) => void waits.push(e) },
  });
  return { api, waits };
}

describe('calls', () => {
  test('calls are typed by the contract and errors come back as the envelope', async () => {
    const api = createPlatformClient({ baseUrl: `${t.url}/`, apiKey: t.caller.key });
    const { data } = await api.GET('/v1/whoami');
    expect(data?.project_slug).toBe('default');

    const anonymous = createPlatformClient({ baseUrl: t.url });
    const { error, response } = await anonymous.GET('/v1/whoami');
    expect(response.status).toBe(401);
    const envelope: ErrorEnvelope | undefined = error;
    expect(envelope?.error.code).toBe('missing_api_key');
  });

  test('headers given as a Headers instance or as a list of pairs are sent as given, beside the key', async () => {
    for (const headers of [new Headers({ 'x-request-id': 'from-headers-instance' }), [['x-request-id', 'from-pairs']] as [string, string][]]) {
      const api = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key, headers });
      const { data, response } = await api.GET('/v1/whoami');
      const expected = headers instanceof Headers ? 'from-headers-instance' : 'from-pairs';
      // The server echoes a well-formed x-request-id; the key still authenticates the call.
      expect(response.headers.get('x-request-id')).toBe(expected);
      expect(data?.project_slug).toBe('default');
    }
  });

  test('a header given to the client replaces the Authorization the key would set; null removes it', async () => {
    const other = createPlatformClient({ baseUrl: t.url, apiKey: 'tpk_not_used', headers: new Headers({ Authorization: `Bearer ${t.other.key}` }) });
    expect((await other.GET('/v1/whoami')).data?.project_id).toBe(t.other.identity.projectId);
    const none = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key, headers: { Authorization: null } });
    expect((await none.GET('/v1/whoami')).error?.error.code).toBe('missing_api_key');
  });

  test('unwrap answers the data, or throws a PlatformError carrying the status, the envelope and the request id', async () => {
    const api = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key });
    expect((await unwrap(api.GET('/v1/whoami'))).project_slug).toBe('default');
    const err = await unwrap(api.GET('/v1/files/{id}', { params: { path: { id: 'file-missing' } }, headers: { 'x-request-id': 'client-test-404' } })).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(PlatformError);
    expect(err).toMatchObject({ status: 404, code: 'not_found', requestId: 'client-test-404' });
    expect(err.type).toEqual(expect.any(String));
    expect(err.body.error.message).toContain('file-missing');
    expect(err.message).toBe(`404 ${err.body.error.message}`);
  });

  test("a 429 is retried after the wait the platform's answer names, and the retry succeeds", async () => {
    const control = createControlClient({ baseUrl: t.url, controlKey: TEST_CONTROL_KEY });
    // On an operation whose contract has a 429 (a rate-limited one).
    await control.fault({ match: { operations: ['createEmbedding'] }, status: 429, count: 1, retry_after_seconds: 3 });
    const { api, waits } = recordingClient();
    const { data } = await api.POST('/v1/embeddings', { body: { model: 'BAAI/bge-base-en-v1.5', input: 'hello', encoding_format: 'float' } });
    expect(data?.object).toBe('list');
    expect(waits).toEqual([expect.objectContaining({ retry: 1, reason: 429, source: 'retry-after-ms', delayMs: 3000 })]);
    expect((await control.journal({ operation: 'createEmbedding', limit: 2 })).map((e) => e.status)).toEqual([200, 429]);
  });

  test('an answer slower than the timeout is a PlatformTimeoutError', async () => {
    const api = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key, timeout: 20, retry: false });
    // The server waits before answering (Prefer: delay, the control plane's per-request fault); the client does not.
    await expect(api.GET('/v1/whoami', { headers: { Prefer: 'delay=1000' } })).rejects.toBeInstanceOf(PlatformTimeoutError);
  });
});

describe('streams of server-sent events', () => {
  const messages = [{ role: 'user' as const, content: 'Hello there' }];

  test('a streamed chat completion is read as typed chunks, which add up to the whole answer', async () => {
    const api = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key });
    const whole = await unwrap(api.POST('/v1/chat/completions', { body: { model: CHAT, messages, max_tokens: 16, seed: 1 } }));
    const stream = await api.stream('/v1/chat/completions', { model: CHAT, messages, max_tokens: 16, seed: 1 });
    expect(stream.requestId).toEqual(expect.any(String));
    let text = '';
    for await (const chunk of stream) {
      expectTypeOf(chunk).toEqualTypeOf<components['schemas']['ChatCompletionChunk']>();
      expect(chunk.object).toBe('chat.completion.chunk');
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe(message(whole));
    // A speech stream's events are its audio chunks (the spec models each event as {data: chunk}).
    expectTypeOf<StreamEvent<'/v1/audio/speech'>>().toEqualTypeOf<components['schemas']['AudioSpeechStreamChunk']>();
  });

  test('a stream cut before [DONE] is a PlatformStreamError while iterating, one cancelled ends quietly; a refused stream throws before it begins', async () => {
    const api = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key });
    const stream = await api.stream('/v1/chat/completions', { model: CHAT, messages, max_tokens: 16 }, { headers: { Prefer: 'stream-cut=2' } });
    const seen: unknown[] = [];
    const err = await (async () => {
      for await (const chunk of stream) seen.push(chunk);
    })().catch((e) => e);
    expect(err).toBeInstanceOf(PlatformStreamError);
    expect(seen).toHaveLength(2);

    // Cancelled while being read: the loop ends without an error.
    const cancelled = await api.stream('/v1/chat/completions', { model: CHAT, messages, max_tokens: 16 });
    let read = 0;
    for await (const _ of cancelled) if (++read === 1) await cancelled.cancel();
    expect(read).toBe(1);

    const refused = await api.stream('/v1/chat/completions', { model: 'no/such-model', messages }).catch((e) => e);
    expect(refused).toBeInstanceOf(PlatformError);
    expect(refused.status).toBe(404);
  });
});

test('paginate follows next_cursor to the last page', async () => {
  const api = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key });
  const { data: all } = await api.GET('/v2/supported-models', { params: { query: { limit: 100 } } });
  const items = [];
  for await (const model of api.paginate('/v2/supported-models', { params: { query: { limit: 4 } } })) items.push(model.id);
  expect(items).toEqual(all!.data.map((m) => m.id));
  expect(items.length).toBeGreaterThan(8);
  const sizes = [];
  for await (const page of api.paginate('/v2/supported-models', { params: { query: { limit: 4 } } }).pages()) sizes.push(page.data.length);
  expect(sizes.slice(0, -1).every((n) => n === 4)).toBe(true);
});

describe('uploads', () => {
  const content = async (id: string) => {
    const { data } = await createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key }).GET('/v1/files/{id}/content', {
      params: { path: { id } },
      parseAs: 'text',
    });
    return data;
  };

  test('a file from a path, from bytes and from a stream, each stored as sent', async () => {
    const api = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key });
    const path = join(dir, 'train.jsonl');
    writeFileSync(path, '{"text": "from a path"}\n');
    const sources = [
      ['from a path', { path }],
      ['from bytes', Buffer.from('{"text": "from bytes"}\n')],
      ['from a stream', { stream: Readable.from([Buffer.from('{"text": '), Buffer.from('"from a stream"}\n')]), filename: 'stream.jsonl' }],
    ] as const;
    for (const [text, file] of sources) {
      const { data, error } = await api.upload('/v1/files/upload', { purpose: 'fine-tune', file_name: `${text}.jsonl`, file });
      expect(error, text).toBeUndefined();
      expect(data).toMatchObject({ filename: `${text}.jsonl`, purpose: 'fine-tune' });
      expect(await content(data!.id)).toBe(`{"text": "${text}"}\n`);
    }
  });

  test("an audio upload's text fields go before its file, whatever the form's order (the platform reads `model` first)", async () => {
    const api = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key });
    const { data, error, response } = await api.upload('/v1/audio/transcriptions', {
      file: { data: silentWav(16_044), filename: 'silence.wav', contentType: 'audio/wav' },
      model: 'openai/whisper-large-v3',
      response_format: 'verbose_json',
    });
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ duration: 0.5 });
  });
});

test('the control client: reset, snapshot and restore, scripts, faults, the journal, time, rate limits, fixtures', async () => {
  const control = createControlClient({ baseUrl: t.url, controlKey: TEST_CONTROL_KEY });
  const api = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key, retry: false });

  const rule = await control.script({ match: { model: CHAT }, answers: [{ content: 'scripted one' }, { content: 'scripted two' }] });
  for (const expected of ['scripted one', 'scripted two']) {
    const { data, response } = await api.POST('/v1/chat/completions', { body: { model: CHAT, messages: [{ role: 'user', content: 'hi' }] } });
    expect(response.headers.get('x-scripted')).toBe(rule.id);
    expect(message(data!)).toBe(expected);
  }
  expect((await control.scripts.get(rule.id)).id).toBe(rule.id);
  expect((await control.scripts.list()).data.map((s) => s.id)).toEqual([rule.id]);
  await control.scripts.delete(rule.id);

  const fault = await control.fault({ match: { operations: ['whoami'] }, status: 503 });
  expect((await api.GET('/v1/whoami')).response.status).toBe(503);
  expect((await control.faults.list()).data).toHaveLength(1);
  await control.faults.delete(fault.id);
  expect((await control.journal({ operation: 'whoami', limit: 1 }))[0]?.status).toBe(503);
  expect((await control.clearJournal()).cleared).toBeGreaterThan(0);

  const before = await control.time.now();
  const after = await control.time.advance(60);
  expect(after.offset_ms - before.offset_ms).toBe(60_000);

  const org = t.caller.identity.organizationId;
  await control.rateLimits.set({ organization_id: org, model: CHAT, limit: { requests: 3 } });
  expect((await control.rateLimits.get({ organization_id: org, model: CHAT })).limit.requests).toBe(3);

  await control.fixtures({ projects: [{ project: 'default', api_keys: [{ name: 'fixture', secret: 'tpk_client-test-fixture-0123456789' }] }] });
  const fixtureClient = createPlatformClient({ baseUrl: t.url, apiKey: 'tpk_client-test-fixture-0123456789' });
  expect((await fixtureClient.GET('/v1/whoami')).response.status).toBe(200);

  const files = async () => (await unwrap(api.GET('/v1/files'))).data.length;
  const kept = await files();
  await control.snapshot('client-test');
  await api.upload('/v1/files/upload', { purpose: 'eval', file_name: 'later.jsonl', file: Buffer.from('{}\n') });
  expect(await files()).toBe(kept + 1);
  await control.restore('client-test');
  expect(await files()).toBe(kept);
  expect((await control.snapshots.list()).data.map((s) => s.name)).toContain('client-test');
  await control.snapshots.delete('client-test');

  const reset = await control.reset();
  expect(reset.scope).toBe('platform');
  // The fixture's key is gone with the reset; the development key stays.
  expect((await fixtureClient.GET('/v1/whoami')).response.status).toBe(401);
  expect((await api.GET('/v1/whoami')).response.status).toBe(200);

  const refused = await control.restore('no-such-snapshot').catch((e) => e);
  expect(refused).toBeInstanceOf(PlatformError);
  expect(refused.status).toBe(404);
});
