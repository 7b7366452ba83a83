// Dynamic rate limits (spec: "Rate limits"), through the whole HTTP stack, for every operation the spec marks
// `x-rate-limited` (one row each in test/support/rate-limited.ts), on both stores: in memory, and in Redis. Every
// row's 429 and 503 are observed here, which is what the contract-coverage test counts for them.
//
// Windows follow the platform's clock, which stands still in a test platform and in every test here (windows are
// aligned on the clock: on the system's, a test that crossed a minute counted afresh): a test ends a window by moving
// the clock (`nextWindow`), never by waiting. Each store has two shared platforms (one with room, one whose models have
// a capacity of two requests a window), each test a new organization of its own (counts are per organization x model).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, test, vi } from 'vitest';
import { type OperationId, operations } from '../generated/operations.ts';
import { ManualClock } from '../server/core/clock.ts';
import { type Config, loadConfig, type RateLimitConfig } from '../server/core/config.ts';
import type { Identity } from '../server/core/identity.ts';
import { createLogger } from '../server/core/log.ts';
import { Gate, rateLimitedOperations } from '../server/http/rate-limits.ts';
import { reply } from '../server/http/reply.ts';
import { estimateTokens, LocalCounter, RateLimits, seconds, secondsText, wholeText } from '../server/limits/rate-limits.ts';
import type { Sampling } from '../server/modules/experiments/rules.ts';
import { type Sampler, sampler } from '../server/modules/experiments/sampling.ts';
import { expectError, until } from './support/expect.ts';
import { deref, operationSpec, spec } from './support/operations.ts';
import { type Caller, startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';
import { limitedOperations } from './support/rate-limited.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const STORES = { memory: undefined, redis: REDIS_URL } as const;
type Store = keyof typeof STORES;
const HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-tokenlimit-limit', 'x-tokenlimit-remaining'];
const rows = Object.entries(limitedOperations) as [OperationId, NonNullable<(typeof limitedOperations)[OperationId]>][];
const base = loadConfig({}).rateLimits;
const WINDOW_S = 60;

/** A limits config for one limiter: defaults, then `over`, counted under a key prefix of its own (Redis is shared). */
const limitsConfig = (over: Partial<RateLimitConfig>): RateLimitConfig => ({ ...base, keyPrefix: `test-${randomUUID()}`, ...over });

const started: TestPlatform[] = [];
async function platform(store: Store, over: Partial<RateLimitConfig>, config: Partial<Config> = {}): Promise<TestPlatform> {
  // The limiter keeps nothing in the database (its counters are in memory or Redis), so these platforms start on
  // SQLite whatever TEST_DATABASE_URL says: on PostgreSQL each start would make a database for nothing.
  // No speech recogniser either: the audio rows are about their limits, not their words.
  const t = await startTestPlatform({
    database: 'sqlite',
    config: { redisUrl: STORES[store], pocketsphinxPath: 'off', rateLimits: limitsConfig(over), ...config },
  });
  started.push(t);
  return t;
}
afterAll(() => Promise.all(started.map((t) => t.close())));

const num = (res: { headers: Record<string, any> }, name: string) => Number(res.headers[name]);
/** Every window of the platform ends (each test starts in windows of its own). */
const nextWindow = (t: TestPlatform) => t.clock.advance(WINDOW_S * 1000);
/** Sets an organization's limit, usage or window on a model through the control plane (spec: setRateLimit). */
async function setLimit(t: TestPlatform, caller: Caller, model: string, body: Record<string, unknown>) {
  const res = await t.http
    .patch('/_control/rate-limits')
    .set('Authorization', `Bearer ${TEST_CONTROL_KEY}`)
    .send({ organization_id: caller.identity.organizationId, model, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

describe('the declaration', () => {
  test('the operations the spec marks x-rate-limited are exactly the rows of the table', () => {
    expect([...rateLimitedOperations(spec).keys()].sort()).toEqual(rows.map(([id]) => id).sort());
  });

  test.each(rows.map(([id]) => id))('%s documents 429 and 503 with the shared responses, and the rate-limit headers on its success', (id) => {
    const op = operationSpec(id);
    expect(op.responses['429'].$ref).toBe('#/components/responses/RateLimited');
    expect(op.responses['503'].$ref).toBe('#/components/responses/Overloaded');
    const success = deref(op.responses[String((operations[id].statuses as readonly number[]).find((s) => s < 300))]);
    for (const h of HEADERS) expect(Object.keys(success.headers ?? {}), `${id} success header ${h}`).toContain(h);
  });

  test('the token estimate counts what the model reads, plus max_tokens x n', () => {
    expect(estimateTokens({ model: 'a-very-long-model-name', messages: [{ role: 'user', content: '' }] })).toBe(0);
    expect(estimateTokens({ model: 'm', messages: [{ role: 'user', content: 'hello world' }] })).toBe(2);
    expect(estimateTokens({ model: 'm', input: ['hello world', 'hello'], max_tokens: 10, n: 3 })).toBe(33);
  });

  test("the headers' seconds are written from whole milliseconds as String(seconds) writes them", () => {
    const ms = [-5, 0, 0.2, 1, 9, 10, 99, 100, 101, 110, 999, 1000, 1000.5, 1001, 1010, 1100, 59_999.9, 60_000, 86_400_123, 2 ** 40 + 7];
    for (let i = 0; i < 2000; i++) ms.push(Math.random() * 120_000);
    for (const m of ms) expect(secondsText(m), `${m} ms`).toBe(String(seconds(m)));
  });

  test('counts past 10^9 are written in two halves as String writes them', () => {
    const ns = [0, 7, 999_999_999, 1e9, 1e9 + 1, 1e9 + 99_999_999, 1e9 + 100_000_000, 1e12, 1e12 - 51, 2 ** 53 - 1, 2 ** 53, 1.5e9 + 0.5, 1e21];
    for (let i = 0; i < 2000; i++) ns.push(Math.floor(Math.random() * 2 ** 53));
    for (const n of ns) expect(wholeText(n), String(n)).toBe(String(n));
  });
});

describe.each(Object.keys(STORES) as Store[])('the %s store', (store) => {
  let t: TestPlatform;
  let tight: TestPlatform;
  beforeAll(async () => {
    const over = { baseRequests: 5, baseTokens: 1000, windowSeconds: WINDOW_S, queueSize: 0, dedicatedRequests: 3, dedicatedTokens: 5000 };
    // A JSON body of 4,000 bytes at most and audio of 20,000: the refusals below are cheap to provoke.
    t = await platform(store, over, { bodyLimit: 4000, audioUploadLimit: 20_000 });
    // Every row's model serves two requests a window, from all organizations together.
    tight = await platform(store, { ...over, baseRequests: 10, modelCapacities: Object.fromEntries(rows.map(([, r]) => [r.model, 2])) });
  });
  beforeEach(() => {
    nextWindow(t);
    nextWindow(tight);
  });

  test('the dynamic limit is growth x recent successful usage, between base and ceiling', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const config = limitsConfig({ baseRequests: 3, baseTokens: 100, maxRequests: 40, maxTokens: 10_000, growth: 2, windowSeconds: 1, usageWindowSeconds: 60 });
    const limits = RateLimits.create(config, STORES[store], createLogger('silent'), clock);
    await limits.ready();
    // The usage written (to Redis within 50 ms), the next window computes the limit afresh.
    const limitOf = async (key: string, expected: { requests: number; tokens: number }) => {
      await limits.settled();
      clock.advance(1000);
      expect(await limits.limitsFor(key, false)).toEqual(expected);
    };
    try {
      expect(await limits.limitsFor('org:a', false)).toEqual({ requests: 3, tokens: 100 });
      // 60 successes of 10 tokens in the last minute: 1 request and 10 tokens per 1-second window, doubled, under the base.
      for (let i = 0; i < 60; i++) limits.recordSuccess('org:b', 10);
      await limitOf('org:b', { requests: 3, tokens: 100 });
      // 600: 10 requests and 100 tokens per window, doubled.
      for (let i = 0; i < 600; i++) limits.recordSuccess('org:c', 10);
      await limitOf('org:c', { requests: 20, tokens: 200 });
      // 1,800: 30 requests per window, doubled, stopped at the ceiling of 40.
      for (let i = 0; i < 1200; i++) limits.recordSuccess('org:c', 0);
      await limitOf('org:c', { requests: 40, tokens: 200 });
      expect(await limits.limitsFor('org:c', true)).toEqual({ requests: config.dedicatedRequests, tokens: config.dedicatedTokens });
      // A minute and a half later the older bucket is half gone: 15 requests per window, doubled.
      clock.advance(86_000);
      await limitOf('org:c', { requests: 30, tokens: 100 });
    } finally {
      await limits.close();
    }
  });

  test('a stream of events is settled when it ends, from the last usage it carried', async () => {
    const limits = RateLimits.create(limitsConfig({ baseTokens: 1000, windowSeconds: 60 }), STORES[store], createLogger('silent'), new ManualClock());
    await limits.ready();
    const identity = { organizationId: `org_${randomUUID()}`, projectSlug: 'default' } as Identity;
    const headers: Record<string, string> = {};
    const res = { setHeader: (name: string, value: string) => Object.assign(headers, { [name]: value }) } as never;
    try {
      const gate = new Gate(limits, identity, res);
      await gate.admit('m', { model: 'm', prompt: 'hello', max_tokens: 100 }); // estimated 101
      const stream = reply.sse(
        (async function* () {
          yield { choices: [] };
          yield { choices: [], usage: { prompt_tokens: 1, completion_tokens: 6, total_tokens: 7 } };
        })(),
      );
      gate.settle(stream);
      // Its headers go out before its events: they count the estimate.
      expect(headers['x-tokenlimit-remaining']).toBe('899');
      for await (const _ of (stream.content as { events: AsyncIterable<unknown> }).events);
      // The correction written (in Redis within 50 ms): the next request sees the window's 7 tokens, not 101.
      await limits.settled();
      const next = new Gate(limits, identity, res);
      await next.admit('m', { model: 'm' });
      next.settle({});
      expect(headers['x-tokenlimit-remaining']).toBe(String(1000 - 7));
    } finally {
      await limits.close();
    }
  });

  describe.each(rows)('%s', (id, row) => {
    // Every behaviour on both stores for one JSON operation and one multipart one; the others (the same pipeline,
    // their own token estimate) get the headers, the 429 and the 503 in memory.
    const everything = id === 'createChatCompletion' || id === 'createTranscription';
    const basic = everything || store === 'memory';

    test.runIf(basic)('a success carries the limits; the token count is corrected from usage; a burst beyond the rate answers 429', async () => {
      const caller = await t.newCaller();
      const res = await row.request(caller, row.model, 'Hello there, how are you?');
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      for (const h of HEADERS) expect(res.headers[h], h).toMatch(/^\d+(\.\d+)?$/);
      expect(num(res, 'x-ratelimit-limit')).toBe(5);
      expect(num(res, 'x-ratelimit-remaining')).toBe(4);
      expect(num(res, 'x-tokenlimit-limit')).toBe(1000);
      expect(num(res, 'x-ratelimit-reset')).toBeGreaterThan(0);
      expect(num(res, 'x-ratelimit-reset')).toBeLessThanOrEqual(WINDOW_S);
      const used = res.body.usage?.total_tokens;
      if (typeof used === 'number') expect(num(res, 'x-tokenlimit-remaining')).toBe(1000 - used);
      // Another organization has limits of its own.
      expect(num(await row.request(t.other, row.model, 'Hello'), 'x-ratelimit-remaining')).toBe(4);
      for (let i = 0; i < 4; i++) expect((await row.request(caller, row.model, 'Hi')).status).toBe(200);
      const refused = await row.request(caller, row.model, 'Hi');
      expectError(refused, 429, { type: 'dynamic_request_limited', code: 'dynamic_request_limited', param: null });
      expect(num(refused, 'x-ratelimit-limit')).toBe(5);
      expect(num(refused, 'x-ratelimit-remaining')).toBe(0);
      const wait = num(refused, 'x-ratelimit-reset');
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(WINDOW_S);
      expect(Number(refused.headers['retry-after'])).toBe(Math.max(1, Math.ceil(wait)));
      expect(Number(refused.headers['retry-after-ms'])).toBe(Math.ceil(wait * 1000));
      for (const h of HEADERS) expect(refused.headers[h], h).toBeDefined();
      // Refused requests are not counted: still refused; once the window ends (the clock moves), served again.
      expectError(await row.request(caller, row.model, 'Hi'), 429, { code: 'dynamic_request_limited' });
      t.clock.advance(wait * 1000);
      expect((await row.request(caller, row.model, 'Hi')).status).toBe(200);
    });

    test.runIf(basic)("503 model_overloaded when the model's capacity is used up while the organization is within its rate", async () => {
      const caller = await tight.newCaller();
      expect((await row.request(caller, row.model, 'Hi')).status).toBe(200);
      expect((await row.request(tight.other, row.model, 'Hi')).status).toBe(200);
      const res = await row.request(caller, row.model, 'Hi');
      expectError(res, 503, { type: 'server_error', code: 'model_overloaded', param: null });
      expect(num(res, 'x-ratelimit-remaining')).toBe(9);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      for (const h of HEADERS) expect(res.headers[h], h).toBeDefined();
    });

    test.runIf(everything)('when the tokens bind, 429 dynamic_token_limited; a request alone in its window passes whatever its size', async () => {
      const caller = await t.newCaller();
      await setLimit(t, caller, row.model, { limit: { tokens: 40 } });
      const first = await row.request(caller, row.model, 'word '.repeat(60));
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expect(num(first, 'x-tokenlimit-remaining')).toBe(0);
      const res = await row.request(caller, row.model, 'Hi');
      expectError(res, 429, { type: 'dynamic_token_limited', code: 'dynamic_token_limited', param: null });
      expect(num(res, 'x-tokenlimit-limit')).toBe(40);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    });

    test.runIf(everything)('a short burst waits in the queue for the next window instead of a 429; beyond the queue, 429', async () => {
      // Its own platform: a queue of two, waiting up to a whole window.
      const q = await platform(store, { baseRequests: 2, windowSeconds: WINDOW_S, queueSize: 2, queueWaitMs: WINDOW_S * 1000 });
      const answers = Array.from({ length: 6 }, () => row.request(q.caller, row.model, 'Hi').then((r) => r.status));
      // Two pass and two are refused at once (the queue is full); two wait for the window's end...
      const settled: number[] = [];
      for (const a of answers) void a.then((s) => settled.push(s));
      expect(await until(() => settled.length === 4, 30_000)).toBe(true);
      expect(settled.sort()).toEqual([200, 200, 429, 429]);
      // ...which comes when the clock reaches it: then they pass, in the next window.
      nextWindow(q);
      expect((await Promise.all(answers)).sort()).toEqual([200, 200, 200, 200, 429, 429]);
    });

    test.runIf(everything)('sustained successful traffic raises the limit above the base', async () => {
      // Growth 3: traffic at the base's rate lifts the limit above the base once it counts as recent usage.
      const s = await platform(store, { baseRequests: 2, windowSeconds: 1, usageWindowSeconds: 2, growth: 3, queueSize: 0 });
      const limits: number[] = [];
      for (let window = 0; window < 5; window++) {
        for (let i = 0; i < 2; i++) {
          const res = await row.request(s.caller, row.model, 'Hi');
          expect(res.status).toBe(200);
          limits.push(num(res, 'x-ratelimit-limit'));
        }
        // The successes are written (in Redis within 50 ms) before the next window recomputes the limit.
        await s.services.limits.settled();
        s.clock.advance(1000);
      }
      expect(limits[0]).toBe(2);
      expect(Math.max(...limits)).toBeGreaterThanOrEqual(4);
    });

    if (row.dedicated && basic) {
      test('a dedicated endpoint has its known fixed limit', async () => {
        const model = await row.dedicated!(t);
        const first = await row.request(t.caller, model, 'Hi');
        expect(first.status, JSON.stringify(first.body)).toBe(200);
        expect(num(first, 'x-ratelimit-limit')).toBe(3);
        expect(num(first, 'x-tokenlimit-limit')).toBe(5000);
        for (let i = 0; i < 2; i++) expect((await row.request(t.caller, model, 'Hi')).status).toBe(200);
        expectError(await row.request(t.caller, model, 'Hi'), 429, { code: 'dynamic_request_limited' });
      });
    }
  });

  // Every row in memory; a JSON and a multipart one in Redis.
  const cases = rows.filter(([id]) => store === 'memory' || id === 'createChatCompletion' || id === 'createTranscription');
  test.each(cases)('x-ratelimit-reset on every answer of %s, whatever its status: 400 of the contract, 401, 404 model, 413, 415', async (id, row) => {
    const path = operations[id].path;
    const multipart = id === 'createTranscription' || id === 'createTranslation';
    const caller = await t.newCaller();
    const post = (c = caller) => c.http.post(path);
    // A counted request opens the caller's window on the model: the refusals that follow report what is left of it.
    expect((await row.request(caller, row.model, 'Hi')).status).toBe(200);
    const refusals = {
      400: await (multipart ? post().field('model', row.model) : post().send({ model: row.model })),
      401: await t.http.post(path).send({ model: row.model }),
      404: await row.request(caller, 'nobody/none', 'Hi'),
      413: await (multipart
        ? post().field('model', row.model).attach('file', Buffer.alloc(50_000), 'big.wav')
        : post().send({ model: row.model, input: 'x'.repeat(5000) })),
      415: await (multipart ? post().send({ model: row.model }) : post().set('Content-Type', 'text/plain').send('Hi')),
    };
    for (const [status, res] of Object.entries(refusals)) {
      expect(res.status, `${status}: ${JSON.stringify(res.body)}`).toBe(Number(status));
      expect(res.headers['x-ratelimit-reset'], status).toMatch(/^\d+(\.\d+)?$/);
      expect(num(res, 'x-ratelimit-reset'), status).toBeLessThanOrEqual(WINDOW_S);
    }
    // The same model's window: the seconds left in it. No caller (401), or a body never read so no model (a JSON
    // body too large, or of another media type): nothing to wait for.
    const known = multipart ? ([400, 413, 415] as const) : ([400] as const);
    for (const status of known) expect(num(refusals[status], 'x-ratelimit-reset'), String(status)).toBeGreaterThan(0);
    expect(refusals[401].headers['x-ratelimit-reset']).toBe('0');
    if (!multipart) for (const status of [413, 415] as const) expect(refusals[status].headers['x-ratelimit-reset'], String(status)).toBe('0');
  });
});

test("a process's counter: a count lapses its time after it opened, and lapsed counts are dropped when a new one opens", () => {
  vi.useFakeTimers({ now: 0, toFake: ['Date'] });
  try {
    const counter = new LocalCounter('p', 1000);
    expect(counter.add('a', 2).consumed).toBe(2);
    expect(counter.add('a', -3).consumed).toBe(-1);
    vi.setSystemTime(999);
    expect(counter.get('a').consumed).toBe(-1);
    vi.setSystemTime(1000);
    expect(counter.get('a').consumed).toBeNull();
    expect(counter.add('a', 1).consumed).toBe(1); // opened anew, lapsing at 2000
    counter.set('b', 7, 100_000);
    expect(counter.size).toBe(2);
    // A minute on, the next count that opens drops the lapsed ones ('a'); a set one lives its own time.
    vi.setSystemTime(61_000);
    counter.add('c', 1);
    expect(counter.size).toBe(2);
    expect(counter.get('b').consumed).toBe(7);
  } finally {
    vi.useRealTimers();
  }
});

test('Redis unreachable: each process counts alone meanwhile, and requests are still limited', async () => {
  const limits = RateLimits.create(
    limitsConfig({ baseRequests: 2, windowSeconds: 60, queueSize: 0 }),
    'redis://127.0.0.1:1',
    createLogger('silent'),
    new ManualClock(),
  );
  await limits.ready(); // gives up after the connection timeout
  const identity = { organizationId: `org_${randomUUID()}`, projectSlug: 'default' } as Identity;
  const res = { setHeader: () => res } as never;
  try {
    const admit = () =>
      Promise.resolve(new Gate(limits, identity, res).admit('m', { model: 'm' })).then(
        () => 200,
        (e) => e.status,
      );
    expect([await admit(), await admit(), await admit()]).toEqual([200, 200, 429]);
  } finally {
    await limits.close();
  }
});

test('a frozen Redis (SIGSTOP) stalls nothing: requests are counted in the process until it answers again, then in Redis', async () => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const clock = new ManualClock();
  const limits = RateLimits.create(
    limitsConfig({ baseRequests: 3, maxRequests: 3, windowSeconds: 60, queueSize: 0, redisCommandTimeoutMs: 100 }),
    `redis://127.0.0.1:${port}`,
    createLogger('silent'),
    clock,
  );
  let other: RateLimits | undefined;
  const identity = { organizationId: `org_${randomUUID()}`, projectSlug: 'default' } as Identity;
  const res = { setHeader: () => res } as never;
  const admit = (model: string) =>
    Promise.resolve(new Gate(limits, identity, res).admit(model, { model })).then(
      () => 200,
      (e) => e.status,
    );
  try {
    expect(await until(() => limits.store === 'redis', 20_000)).toBe(true);
    expect([await admit('m'), await admit('m')]).toEqual([200, 200]);
    redis.kill('SIGSTOP');
    // Every request settles while Redis is still frozen (were they waiting on it, this would never return): the
    // process goes on with its own tally of the window, which holds its two requests (1 more, then 429).
    const during = [];
    for (let i = 0; i < 5; i++) during.push(await admit('m'));
    expect(during).toEqual([200, 429, 429, 429, 429]);
    expect(await until(() => limits.store === 'fallback', 20_000)).toBe(true);
    redis.kill('SIGCONT');
    // Answering again: back to the count every process shares (the commands that were on their way when it froze
    // count nothing when Redis runs them, past their deadline: see below). Another process's limiter on the same
    // Redis sees this one's requests.
    expect(await until(() => limits.store === 'redis', 30_000)).toBe(true);
    other = RateLimits.create({ ...limits.config }, `redis://127.0.0.1:${port}`, createLogger('silent'), clock);
    expect(await until(() => other!.store === 'redis', 20_000)).toBe(true);
    const elsewhere = (model: string) =>
      Promise.resolve(new Gate(other!, identity, res).admit(model, { model })).then(
        () => 200,
        (e) => e.status,
      );
    expect([await admit('m2'), await admit('m2'), await elsewhere('m2'), await elsewhere('m2')]).toEqual([200, 200, 200, 429]);
  } finally {
    redis.kill('SIGCONT');
    await limits.close();
    await other?.close();
    redis.kill('SIGKILL');
  }
});

/** A redis-server of the test's own (it is frozen with SIGSTOP), on a free port. */
async function privateRedis() {
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  return { url: `redis://127.0.0.1:${port}`, child };
}

describe('a frozen Redis (issue 28 §2)', () => {
  const identity = { organizationId: `org_${randomUUID()}`, projectSlug: 'default' } as Identity;
  const res = { setHeader: () => res } as never;
  const admit = (limits: RateLimits, model: string) =>
    Promise.resolve(new Gate(limits, identity, res).admit(model, { model })).then(
      () => 200,
      (e) => e.status,
    );
  /** Lets ready I/O and immediates run (timers are fake in the test below, immediates are not). */
  const turns = async (n = 20) => {
    for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
  };

  test("each request waits on Redis at most RATE_LIMIT_REDIS_TIMEOUT_MS in all (2 s before: its limits' read, then its counts), the first of the freeze included; those after it not at all", async () => {
    const redis = await privateRedis();
    const limits = RateLimits.create(
      limitsConfig({ baseRequests: 5, windowSeconds: 60, queueSize: 0, redisCommandTimeoutMs: 1000 }),
      redis.url,
      createLogger('silent'),
      new ManualClock(),
    );
    try {
      expect(await until(() => limits.store === 'redis', 20_000)).toBe(true);
      await limits.ready();
      expect(await admit(limits, 'f1')).toBe(200);
      redis.child.kill('SIGSTOP');
      // The clock the waits are measured on is the test's: the bound is a fact of the code, not of this machine's speed.
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
      // A model not asked for yet: its limits are read from Redis first (recent usage), then its counts made.
      let status: number | undefined;
      void admit(limits, 'f2').then((s) => (status = s));
      await turns();
      expect(status).toBeUndefined(); // waiting on Redis
      vi.advanceTimersByTime(999);
      await turns();
      expect(status).toBeUndefined();
      vi.advanceTimersByTime(1);
      await turns();
      expect(status).toBe(200); // counted in the process once its wait was spent, not a second wait for its counts
      expect(limits.store).toBe('fallback');
      // The next requests do not wait on Redis at all: counted at once, in the process.
      let next: number | undefined;
      void admit(limits, 'f3').then((s) => (next = s));
      await turns();
      expect(next).toBe(200);
    } finally {
      vi.useRealTimers();
      redis.child.kill('SIGCONT');
      await limits.close();
      redis.child.kill('SIGKILL');
    }
  });

  test('the requests counted in the process during a freeze do not land in Redis after it (the window stays as it was): another process still gets its share', async () => {
    const redis = await privateRedis();
    const config = limitsConfig({ baseRequests: 5, maxRequests: 5, windowSeconds: 60, queueSize: 0, redisCommandTimeoutMs: 200 });
    const clock = new ManualClock();
    const limits = RateLimits.create(config, redis.url, createLogger('silent'), clock);
    const other = RateLimits.create({ ...config }, redis.url, createLogger('silent'), clock);
    try {
      expect(await until(() => limits.store === 'redis' && other.store === 'redis', 20_000)).toBe(true);
      await Promise.all([limits.ready(), other.ready()]);
      expect([await admit(limits, 'm'), await admit(limits, 'm')]).toEqual([200, 200]);
      redis.child.kill('SIGSTOP');
      // Three at once: their counts are written into the frozen connection, then counted in the process.
      expect(await Promise.all([admit(limits, 'm'), admit(limits, 'm'), admit(limits, 'm')])).toEqual([200, 200, 200]);
      redis.child.kill('SIGCONT');
      expect(await until(() => limits.store === 'redis' && other.store === 'redis', 30_000)).toBe(true);
      // Redis's window holds the two counted there: the other process may send three more (before: the three
      // written during the freeze landed when Redis woke, and it was refused at once).
      const elsewhere = [];
      for (let i = 0; i < 4; i++) elsewhere.push(await admit(other, 'm'));
      expect(elsewhere).toEqual([200, 200, 200, 429]);
    } finally {
      redis.child.kill('SIGCONT');
      await limits.close();
      await other.close();
      redis.child.kill('SIGKILL');
    }
  });
});

test('RATE_LIMITS=off: no limits and no headers', async () => {
  const [id, row] = rows[0]!;
  const t = await platform('memory', { enabled: false, baseRequests: 1 });
  for (let i = 0; i < 3; i++) {
    const res = await row.request(t.caller, row.model, 'Hi');
    expect(res.status, id).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  }
});

// A shadow experiment's adaptive sampling (spec: Shadow experiments, Sampling) counts over a window that every
// process shares when the limits count in Redis: two limiters (two processes' state) on one Redis copy the target
// between them; in memory each counts its own, and each copies the target.
test.each(Object.keys(STORES) as Store[])('adaptive sampling counts over one window for every process, %s', async (store) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const config = limitsConfig({});
  const processes = [0, 1].map(() => RateLimits.create(config, STORES[store], createLogger('silent'), clock));
  await Promise.all(processes.map((l) => l.ready()));
  const samplersOf = (sampling: Sampling, key: string) =>
    processes.map((l) => sampler(sampling, (name, seconds, cap) => l.slide(`${key}:${name}`, seconds, cap)));
  const taken = async (samplers: Sampler[], n: number, body = (_i: number) => ({})) => {
    let copied = 0;
    for (let i = 0; i < n; i++) if (await samplers[i % 2]!.take(body(i))) copied++;
    return copied;
  };
  try {
    // At most 0.01 x 600 = 6 copies in any 600 s.
    const uniform = samplersOf({ adaptiveUniform: { targetQps: 0.01, window: '600s' } }, 'u');
    expect(await taken(uniform, 20)).toBe(store === 'redis' ? 6 : 12);
    // The window slides (in steps of 10 s): 300 s on, the copies are still in it; 600 s on, they are out.
    clock.advance(300_000);
    expect(await taken(uniform, 2)).toBe(0);
    clock.advance(300_000);
    expect(await taken(uniform, 20)).toBe(store === 'redis' ? 6 : 12);
    // Key-based: 0.1 x 60 = 6 copies' worth over 60 requests seen (by both) is a rate of 0.1 once they are all seen.
    const keyed = samplersOf({ adaptiveKeyBased: { targetQps: 0.1, key: 'user', window: '60s' } }, 'k');
    await taken(keyed, 60, (i) => ({ user: `warm-${i}` }));
    const copies = await taken(keyed, 200, (i) => ({ user: `user-${i}` }));
    // Seen by both: a rate near 6 / (60 + k); seen by each alone, twice that.
    if (store === 'redis') expect(copies).toBeLessThan(15);
    else expect(copies).toBeGreaterThan(10);
  } finally {
    await Promise.all(processes.map((l) => l.close()));
  }
});
