// The typed client's transport, against a fake fetch (no server, no wall-clock waits: the backoff's sleep is
// injected): which answers are retried and how long it waits (retry-after-ms, Retry-After in seconds or as a date,
// x-ratelimit-reset, else exponential backoff with jitter, capped), x-should-retry, the longest wait it accepts,
// connection failures and timeouts, the caller's AbortSignal, and bodies sent again on each attempt; and paging by
// `next_page_token` (the remediation lists; `next_cursor` is proved against the platform in test/client.test.ts).
import { createPlatformClient, PlatformConnectionError, PlatformError, PlatformTimeoutError, type RetryEvent, unwrap } from '@inference-platform/client';
import { expect, test } from 'vitest';

const envelope = (code: string) => ({ error: { message: `refused: ${code}`, type: 'invalid_request_error', param: null, code } });

/** A fetch answering from a script, one entry per call, and recording each request it got (with its body). */
function scripted(answers: (Response | Error | ((request: Request) => Promise<Response>))[]) {
  const seen: { method: string; url: string; body: string }[] = [];
  const fetch = async (request: Request) => {
    seen.push({ method: request.method, url: request.url, body: await request.clone().text() });
    const next = answers.shift();
    if (!next) throw new Error('no more answers scripted');
    if (next instanceof Error) throw next;
    return typeof next === 'function' ? next(request) : next;
  };
  return { fetch, seen };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

/** The waits the client asked for, without waiting. */
function recorder() {
  const waits: RetryEvent[] = [];
  return { waits, retry: { sleep: async () => {}, onRetry: (e: RetryEvent) => void waits.push(e), random: () => 0 } };
}

test('a 429 is retried after the wait its headers ask: retry-after-ms, then Retry-After (seconds, or a date), then x-ratelimit-reset', async () => {
  const date = new Date(Date.now() + 30_000).toUTCString();
  const { fetch, seen } = scripted([
    json(429, envelope('dynamic_request_limited'), { 'retry-after-ms': '1500', 'retry-after': '9', 'x-ratelimit-reset': '7' }),
    json(429, envelope('dynamic_request_limited'), { 'retry-after': '2', 'x-ratelimit-reset': '7' }),
    json(503, envelope('model_overloaded'), { 'retry-after': date }),
    json(429, envelope('dynamic_token_limited'), { 'x-ratelimit-reset': '0.25' }),
    json(200, { ok: true }),
  ]);
  const { waits, retry } = recorder();
  const api = createPlatformClient({ baseUrl: 'http://platform.test', apiKey: 'tpk_x', fetch, retry: { ...retry, maxRetries: 4 } });
  const { data, response } = await api.POST('/v1/embeddings', { body: { model: 'm', input: 'hello' } as never });
  expect(response.status).toBe(200);
  expect(data).toEqual({ ok: true });
  expect(waits.map((w) => [w.reason, w.source])).toEqual([
    [429, 'retry-after-ms'],
    [429, 'retry-after'],
    [503, 'retry-after'],
    [429, 'x-ratelimit-reset'],
  ]);
  expect(waits[0]!.delayMs).toBe(1500);
  expect(waits[1]!.delayMs).toBe(2000);
  // An HTTP date: the time until then (the date has whole seconds).
  expect(waits[2]!.delayMs).toBeGreaterThan(28_000);
  expect(waits[2]!.delayMs).toBeLessThanOrEqual(30_000);
  expect(waits[3]!.delayMs).toBe(250);
  // Every attempt sent the same body again.
  expect(new Set(seen.map((s) => s.body))).toEqual(new Set([JSON.stringify({ model: 'm', input: 'hello' })]));
  expect(seen).toHaveLength(5);
});

test('without a wait named, the backoff doubles from the first delay up to its cap, shortened by the jitter', async () => {
  const { fetch } = scripted([json(500, envelope('internal_error')), json(502, {}), json(504, {}), json(408, {}), json(200, {})]);
  const waits: number[] = [];
  const api = createPlatformClient({
    baseUrl: 'http://platform.test',
    fetch,
    retry: { maxRetries: 4, initialDelayMs: 100, maxDelayMs: 300, random: () => 1, sleep: async (ms) => void waits.push(ms) },
  });
  expect((await api.GET('/v1/whoami')).response.status).toBe(200);
  // 100, 200, 300 (capped), 300: each less a quarter (random() = 1: the most jitter).
  expect(waits).toEqual([75, 150, 225, 225]);
});

test('what is not retried: 4xx other than 408 and 429, 501, an answer saying x-should-retry: false, a wait longer than allowed; and x-should-retry: true is', async () => {
  for (const [answer, attempts] of [
    [json(400, envelope('invalid_request')), 1],
    [json(404, envelope('not_found')), 1],
    [json(409, envelope('conflict')), 1],
    [json(501, envelope('not_implemented')), 1],
    [json(503, envelope('model_overloaded'), { 'x-should-retry': 'false' }), 1],
    [json(429, envelope('dynamic_request_limited'), { 'retry-after': '120' }), 1],
    [json(418, envelope('teapot'), { 'x-should-retry': 'true' }), 2],
  ] as const) {
    const { fetch, seen } = scripted([answer, json(200, {})]);
    const { retry } = recorder();
    const api = createPlatformClient({ baseUrl: 'http://platform.test', fetch, retry: { ...retry, maxRetryAfterMs: 60_000 } });
    await api.GET('/v1/whoami');
    expect(seen.length, `${answer.status} ${answer.headers.get('x-should-retry') ?? ''}`).toBe(attempts);
  }
});

test('retries stop after maxRetries: the last answer is returned (and unwrap throws it as a PlatformError with the envelope)', async () => {
  const { fetch, seen } = scripted([
    json(503, envelope('model_overloaded'), { 'retry-after': '0', 'x-request-id': 'req-1' }),
    json(503, envelope('model_overloaded'), { 'retry-after': '0', 'x-request-id': 'req-2' }),
    json(503, envelope('model_overloaded'), { 'retry-after': '0', 'x-request-id': 'req-3' }),
  ]);
  const { retry } = recorder();
  const api = createPlatformClient({ baseUrl: 'http://platform.test', fetch, retry });
  const err = await unwrap(api.GET('/v1/whoami')).catch((e) => e);
  expect(seen).toHaveLength(3); // the first attempt and two retries (the default)
  expect(err).toBeInstanceOf(PlatformError);
  expect(err).toMatchObject({ status: 503, code: 'model_overloaded', type: 'invalid_request_error', param: null, requestId: 'req-3' });
  expect(err.body).toEqual(envelope('model_overloaded'));
  expect(err.message).toBe('503 refused: model_overloaded');
});

test('a connection that fails is retried, then thrown as a PlatformConnectionError; per call, retry: false sends once', async () => {
  const { fetch, seen } = scripted([new TypeError('fetch failed'), json(200, { ok: 1 })]);
  const { waits, retry } = recorder();
  const api = createPlatformClient({ baseUrl: 'http://platform.test', fetch, retry });
  expect((await api.GET('/v1/whoami')).data).toEqual({ ok: 1 });
  expect(waits.map((w) => [w.reason, w.source])).toEqual([['connection', 'backoff']]);
  expect(seen).toHaveLength(2);

  const once = scripted([new TypeError('fetch failed')]);
  const single = createPlatformClient({ baseUrl: 'http://platform.test', fetch: once.fetch, retry });
  const err = await single.GET('/v1/whoami', { retry: false }).catch((e) => e);
  expect(err).toBeInstanceOf(PlatformConnectionError);
  expect(err).not.toBeInstanceOf(PlatformTimeoutError);
  expect(err.cause).toBeInstanceOf(TypeError);
  expect(once.seen).toHaveLength(1);
});

test('an attempt without an answer within the timeout is aborted and retried; the last one throws a PlatformTimeoutError', async () => {
  // Answers only when the attempt is aborted: the timeout (a few ms) is the only thing that ends it.
  const hang = (request: Request) =>
    new Promise<Response>((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true }));
  const { fetch, seen } = scripted([hang, hang]);
  const { waits, retry } = recorder();
  const api = createPlatformClient({ baseUrl: 'http://platform.test', fetch, timeout: 5, retry: { ...retry, maxRetries: 1 } });
  const err = await api.GET('/v1/whoami').catch((e) => e);
  expect(err).toBeInstanceOf(PlatformTimeoutError);
  expect(err).toBeInstanceOf(PlatformConnectionError);
  expect(err.message).toMatch(/no answer within 5 ms \(2 attempts\)/);
  expect(waits.map((w) => w.reason)).toEqual(['timeout']);
  expect(seen).toHaveLength(2);
});

test("the caller's AbortSignal ends the call with its reason: during an attempt, and during the wait before a retry", async () => {
  const reason = new Error('the test gave up');
  const during = new AbortController();
  const { fetch } = scripted([
    (request) => {
      during.abort(reason);
      // As fetch does: an aborted signal rejects with its reason.
      return Promise.reject(request.signal.aborted ? request.signal.reason : new Error('the attempt was not aborted'));
    },
  ]);
  const api = createPlatformClient({ baseUrl: 'http://platform.test', fetch });
  await expect(api.GET('/v1/whoami', { signal: during.signal })).rejects.toBe(reason);

  // The default sleep, a real timer of 60 s: the abort ends the wait at once.
  const waiting = new AbortController();
  const second = scripted([json(429, envelope('dynamic_request_limited'), { 'retry-after': '60' }), json(200, {})]);
  const slow = createPlatformClient({ baseUrl: 'http://platform.test', fetch: second.fetch, retry: { onRetry: () => waiting.abort(reason) } });
  await expect(slow.GET('/v1/whoami', { signal: waiting.signal })).rejects.toBe(reason);
  expect(second.seen).toHaveLength(1);
});

test('errors are recognised across copies of the package (the testing entry carries its own): instanceof reads a mark, not the class', () => {
  const err = new PlatformTimeoutError('x');
  // What another copy's error looks like from here: an object carrying the same registered mark.
  const foreign = Object.defineProperty(new Error('y'), Symbol.for('@inference-platform/client.error-kinds'), {
    value: ['PlatformError', 'PlatformConnectionError'],
  });
  expect(err).toBeInstanceOf(PlatformError);
  expect(foreign).toBeInstanceOf(PlatformError);
  expect(foreign).toBeInstanceOf(PlatformConnectionError);
  expect(foreign).not.toBeInstanceOf(PlatformTimeoutError);
  expect(new Error('z')).not.toBeInstanceOf(PlatformError);
});

test('paginate follows next_page_token as page_token, and stops at the empty token', async () => {
  const page = (names: string[], next: string) => json(200, { remediations: names.map((id) => ({ id })), next_page_token: next, has_next: next !== '' });
  const { fetch, seen } = scripted([page(['a', 'b'], 't1'), page(['c'], 't2'), page([], '')]);
  const api = createPlatformClient({ baseUrl: 'http://platform.test', fetch });
  const path = '/v1/compute/clusters/{cluster_id}/instances/{instance_id}/remediations' as const;
  const ids: string[] = [];
  for await (const r of api.paginate(path, { params: { path: { cluster_id: 'c1', instance_id: 'i1' }, query: { page_size: 2 } } })) ids.push(r.id);
  expect(ids).toEqual(['a', 'b', 'c']);
  expect(seen.map((s) => new URL(s.url).search)).toEqual(['?page_size=2', '?page_size=2&page_token=t1', '?page_size=2&page_token=t2']);
});
