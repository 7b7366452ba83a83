// Dynamic rate limits (spec: "Rate limits"), through the whole HTTP stack, for every operation the spec marks
// `x-rate-limited` (one row each in test/support/rate-limited.ts), on both stores: in memory, and in Redis. Every
// row's 429 and 503 are observed here, which is what the contract-coverage test counts for them.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import { afterAll, afterEach, describe, expect, test, vi } from 'vitest';
import { type OperationId, operations } from '../generated/operations.ts';
import { type Config, loadConfig, type RateLimitConfig } from '../server/core/config.ts';
import type { Identity } from '../server/core/identity.ts';
import { createLogger } from '../server/core/log.ts';
import { Gate, rateLimitedOperations } from '../server/http/rate-limits.ts';
import { reply } from '../server/http/reply.ts';
import { estimateTokens, RateLimits } from '../server/limits/rate-limits.ts';
import { expectError, until } from './support/expect.ts';
import { deref, operationSpec, spec } from './support/operations.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';
import { limitedOperations } from './support/rate-limited.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const STORES = { memory: undefined, redis: REDIS_URL } as const;
const HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-tokenlimit-limit', 'x-tokenlimit-remaining'];
const rows = Object.entries(limitedOperations) as [OperationId, NonNullable<(typeof limitedOperations)[OperationId]>][];
const base = loadConfig({}).rateLimits;

/** A limits config for one test: defaults, then `over`, counted under a key prefix of its own (Redis is shared). */
const limitsConfig = (over: Partial<RateLimitConfig>): RateLimitConfig => ({ ...base, keyPrefix: `test-${randomUUID()}`, ...over });

let platforms: TestPlatform[] = [];
async function platform(store: keyof typeof STORES, over: Partial<RateLimitConfig>, config: Partial<Config> = {}): Promise<TestPlatform> {
  // The limiter keeps nothing in the database (its counters are in memory or Redis), so these platforms start on
  // SQLite whatever TEST_DATABASE_URL says: on PostgreSQL each start would make a database for nothing.
  // No speech recogniser either: the audio rows are about their limits, and PocketSphinx loading its model for every
  // request (seconds on a busy machine) would keep their traffic below the rates these tests need.
  const t = await startTestPlatform({
    database: 'sqlite',
    config: { redisUrl: STORES[store], pocketsphinxPath: 'off', rateLimits: limitsConfig(over), ...config },
  });
  platforms.push(t);
  return t;
}
afterEach(async () => {
  await Promise.all(platforms.map((t) => t.close()));
  platforms = [];
});

const num = (res: { headers: Record<string, any> }, name: string) => Number(res.headers[name]);

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
});

describe.each(Object.keys(STORES) as (keyof typeof STORES)[])('the %s store', (store) => {
  test('the dynamic limit is growth x recent successful usage, between base and ceiling', async () => {
    const log = createLogger('silent');
    const config = limitsConfig({ baseRequests: 3, baseTokens: 100, maxRequests: 40, maxTokens: 10_000, growth: 2, windowSeconds: 1, usageWindowSeconds: 60 });
    const limits = RateLimits.create(config, STORES[store], log);
    await limits.ready();
    const settled = () => new Promise((r) => setTimeout(r, 1100)); // the writes land; the per-window cache expires
    // Usage is kept in 60-second buckets, the previous one weighted by how much of it is still recent: start far
    // enough from a bucket's end that all of this test's records and reads fall in one bucket.
    const into = Date.now() % 60_000;
    if (into > 54_000) await new Promise((r) => setTimeout(r, 60_000 - into + 50));
    try {
      expect(await limits.limitsFor('org:a', false)).toEqual({ requests: 3, tokens: 100 });
      // 60 successes of 10 tokens in the last minute: 1 request and 10 tokens per 1-second window, doubled, under the base.
      for (let i = 0; i < 60; i++) limits.recordSuccess('org:b', 10);
      await settled();
      expect(await limits.limitsFor('org:b', false)).toEqual({ requests: 3, tokens: 100 });
      // 600: 10 requests and 100 tokens per window, doubled.
      for (let i = 0; i < 600; i++) limits.recordSuccess('org:c', 10);
      await settled();
      expect(await limits.limitsFor('org:c', false)).toEqual({ requests: 20, tokens: 200 });
      // 1,800: 30 requests per window, doubled, stopped at the ceiling of 40.
      for (let i = 0; i < 1200; i++) limits.recordSuccess('org:c', 0);
      await settled();
      expect(await limits.limitsFor('org:c', false)).toEqual({ requests: 40, tokens: 200 });
      expect(await limits.limitsFor('org:c', true)).toEqual({ requests: config.dedicatedRequests, tokens: config.dedicatedTokens });
    } finally {
      await limits.close();
    }
  });

  test('a stream of events is settled when it ends, from the last usage it carried', async () => {
    const limits = RateLimits.create(limitsConfig({ baseTokens: 1000, windowSeconds: 60 }), STORES[store], createLogger('silent'));
    await limits.ready();
    const identity = { organizationId: `org_${randomUUID()}`, projectSlug: 'default' } as Identity;
    const headers: Record<string, string> = {};
    const res = { set: (h: Record<string, string>) => Object.assign(headers, h) } as never;
    try {
      const gate = new Gate(limits, identity, res);
      await gate.admit('m', { model: 'm', prompt: 'hello', max_tokens: 100 }); // estimated 101
      expect(headers['x-tokenlimit-remaining']).toBe('899');
      const stream = reply.sse(
        (async function* () {
          yield { choices: [] };
          yield { choices: [], usage: { prompt_tokens: 1, completion_tokens: 6, total_tokens: 7 } };
        })(),
      );
      gate.settle(stream);
      for await (const _ of (stream.content as { events: AsyncIterable<unknown> }).events);
      await new Promise((r) => setTimeout(r, 200));
      await new Gate(limits, identity, res).admit('m', { model: 'm' });
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
    test.runIf(basic)('a success carries the limits; the token count is corrected from usage', async () => {
      const t = await platform(store, { baseRequests: 5, baseTokens: 1000, windowSeconds: 60 });
      const res = await row.request(t.caller, row.model, 'Hello there, how are you?');
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      for (const h of HEADERS) expect(res.headers[h], h).toMatch(/^\d+(\.\d+)?$/);
      expect(num(res, 'x-ratelimit-limit')).toBe(5);
      expect(num(res, 'x-ratelimit-remaining')).toBe(4);
      expect(num(res, 'x-tokenlimit-limit')).toBe(1000);
      expect(num(res, 'x-ratelimit-reset')).toBeGreaterThan(0);
      expect(num(res, 'x-ratelimit-reset')).toBeLessThanOrEqual(60);
      const used = res.body.usage?.total_tokens;
      if (typeof used === 'number') expect(num(res, 'x-tokenlimit-remaining')).toBe(1000 - used);
      // Another organization has limits of its own.
      const other = await row.request(t.other, row.model, 'Hello');
      expect(num(other, 'x-ratelimit-remaining')).toBe(4);
    });

    test.runIf(basic)('a burst beyond the rate answers 429 dynamic_request_limited, with the wait in Retry-After and x-ratelimit-reset', async () => {
      const t = await platform(store, { baseRequests: 3, windowSeconds: 60, queueSize: 0 });
      for (let i = 0; i < 3; i++) expect((await row.request(t.caller, row.model, 'Hi')).status).toBe(200);
      const res = await row.request(t.caller, row.model, 'Hi');
      expectError(res, 429, { type: 'dynamic_request_limited', code: 'dynamic_request_limited', param: null });
      expect(num(res, 'x-ratelimit-limit')).toBe(3);
      expect(num(res, 'x-ratelimit-remaining')).toBe(0);
      const wait = num(res, 'x-ratelimit-reset');
      expect(wait).toBeGreaterThan(50);
      expect(wait).toBeLessThanOrEqual(60);
      expect(Number(res.headers['retry-after'])).toBe(Math.ceil(wait));
      expect(Number(res.headers['retry-after-ms'])).toBeGreaterThan(50_000);
      for (const h of HEADERS) expect(res.headers[h], h).toBeDefined();
      // Refused requests are not counted: still refused, still remaining 0, and other models are not affected.
      expectError(await row.request(t.caller, row.model, 'Hi'), 429, { code: 'dynamic_request_limited' });
    });

    test.runIf(everything)('when the tokens bind, 429 dynamic_token_limited; a request alone in its window passes whatever its size', async () => {
      const t = await platform(store, { baseRequests: 100, baseTokens: 40, windowSeconds: 60, queueSize: 0 });
      const long = 'word '.repeat(60);
      const first = await row.request(t.caller, row.model, long);
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expect(num(first, 'x-tokenlimit-remaining')).toBe(0);
      const res = await row.request(t.caller, row.model, 'Hi');
      expectError(res, 429, { type: 'dynamic_token_limited', code: 'dynamic_token_limited', param: null });
      expect(num(res, 'x-tokenlimit-limit')).toBe(40);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    });

    test.runIf(basic)("503 model_overloaded when the model's capacity is used up while the organization is within its rate", async () => {
      const t = await platform(store, { baseRequests: 10, windowSeconds: 60, queueSize: 0, modelCapacities: { [row.model]: 2 } });
      expect((await row.request(t.caller, row.model, 'Hi')).status).toBe(200);
      expect((await row.request(t.other, row.model, 'Hi')).status).toBe(200);
      const res = await row.request(t.caller, row.model, 'Hi');
      expectError(res, 503, { type: 'server_error', code: 'model_overloaded', param: null });
      expect(num(res, 'x-ratelimit-remaining')).toBe(9);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      for (const h of HEADERS) expect(res.headers[h], h).toBeDefined();
    });

    test.runIf(everything)('a short burst waits in the queue for the next window instead of a 429; beyond the queue, 429', async () => {
      const t = await platform(store, { baseRequests: 2, windowSeconds: 1, queueSize: 2, queueWaitMs: 1000 });
      // Let a window begin, so that all six fall in it.
      const statuses = (await Promise.all(Array.from({ length: 6 }, () => row.request(t.caller, row.model, 'Hi')))).map((r) => r.status).sort();
      // Two now, two held for the next window (where they pass), two refused because the queue is full.
      expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    });

    test.runIf(everything)('sustained successful traffic raises the limit above the base', async () => {
      // Growth 3: traffic at two thirds of the base's rate already lifts the limit above the base.
      const t = await platform(store, { baseRequests: 2, windowSeconds: 1, usageWindowSeconds: 2, growth: 3, queueSize: 4, queueWaitMs: 1000 });
      const limits: number[] = [];
      const until = Date.now() + 4500;
      // Three callers one after another each, so that slower operations (audio is decoded by ffmpeg) also keep
      // more than the base's two requests per window going.
      await Promise.all(
        [0, 1, 2].map(async () => {
          while (Date.now() < until) {
            const res = await row.request(t.caller, row.model, 'Hi');
            if (res.status === 200) limits.push(num(res, 'x-ratelimit-limit'));
          }
        }),
      );
      expect(limits[0]).toBe(2);
      expect(Math.max(...limits)).toBeGreaterThanOrEqual(4);
    });

    if (row.dedicated && basic) {
      test('a dedicated endpoint has its known fixed limit', async () => {
        const t = await platform(store, { baseRequests: 1, dedicatedRequests: 3, dedicatedTokens: 5000, windowSeconds: 60, queueSize: 0 });
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
});

describe('x-ratelimit-reset is on every answer of a limited operation, whatever its status', () => {
  // Every row in memory; a JSON and a multipart one in Redis.
  const cases = (Object.keys(STORES) as (keyof typeof STORES)[]).flatMap((store) =>
    rows.filter(([id]) => store === 'memory' || id === 'createChatCompletion' || id === 'createTranscription').map(([id, row]) => [store, id, row] as const),
  );
  test.each(cases)('%s store, %s: 400 of the contract, 401, 404 model, 413, 415', async (store, id, row) => {
    const t = await platform(store, { windowSeconds: 60 }, { bodyLimit: 4000, audioUploadLimit: 20_000 });
    const path = operations[id].path;
    const multipart = id === 'createTranscription' || id === 'createTranslation';
    const post = (c = t.caller) => c.http.post(path);
    // A counted request opens the caller's window on the model: the refusals that follow report what is left of it.
    expect((await row.request(t.caller, row.model, 'Hi')).status).toBe(200);
    const refusals = {
      400: await (multipart ? post().field('model', row.model) : post().send({ model: row.model })),
      401: await t.http.post(path).send({ model: row.model }),
      404: await row.request(t.caller, 'nobody/none', 'Hi'),
      413: await (multipart
        ? post().field('model', row.model).attach('file', Buffer.alloc(50_000), 'big.wav')
        : post().send({ model: row.model, input: 'x'.repeat(5000) })),
      415: await (multipart ? post().send({ model: row.model }) : post().set('Content-Type', 'text/plain').send('Hi')),
    };
    for (const [status, res] of Object.entries(refusals)) {
      expect(res.status, `${status}: ${JSON.stringify(res.body)}`).toBe(Number(status));
      expect(res.headers['x-ratelimit-reset'], status).toMatch(/^\d+(\.\d+)?$/);
      expect(num(res, 'x-ratelimit-reset'), status).toBeLessThanOrEqual(60);
    }
    // The same model's window: the seconds left in it. No caller (401), or a body never read so no model (a JSON
    // body too large, or of another media type): nothing to wait for.
    const known = multipart ? ([400, 413, 415] as const) : ([400] as const);
    for (const status of known) expect(num(refusals[status], 'x-ratelimit-reset'), String(status)).toBeGreaterThan(0);
    expect(refusals[401].headers['x-ratelimit-reset']).toBe('0');
    if (!multipart) for (const status of [413, 415] as const) expect(refusals[status].headers['x-ratelimit-reset'], String(status)).toBe('0');
  });
});

test('Redis unreachable: each process counts alone meanwhile, and requests are still limited', async () => {
  const limits = RateLimits.create(limitsConfig({ baseRequests: 2, windowSeconds: 60, queueSize: 0 }), 'redis://127.0.0.1:1', createLogger('silent'));
  await limits.ready(); // gives up after the connection timeout
  const identity = { organizationId: `org_${randomUUID()}`, projectSlug: 'default' } as Identity;
  const res = { set: () => res } as never;
  try {
    const admit = () =>
      new Gate(limits, identity, res).admit('m', { model: 'm' }).then(
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
  const limits = RateLimits.create(
    limitsConfig({ baseRequests: 3, maxRequests: 3, windowSeconds: 60, queueSize: 0, redisCommandTimeoutMs: 100 }),
    `redis://127.0.0.1:${port}`,
    createLogger('silent'),
  );
  let other: RateLimits | undefined;
  const identity = { organizationId: `org_${randomUUID()}`, projectSlug: 'default' } as Identity;
  const res = { set: () => res } as never;
  const admit = (model: string) =>
    new Gate(limits, identity, res).admit(model, { model }).then(
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
    other = RateLimits.create({ ...limits.config }, `redis://127.0.0.1:${port}`, createLogger('silent'));
    expect(await until(() => other!.store === 'redis', 20_000)).toBe(true);
    const elsewhere = (model: string) =>
      new Gate(other!, identity, res).admit(model, { model }).then(
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
  const res = { set: () => res } as never;
  const admit = (limits: RateLimits, model: string) =>
    new Gate(limits, identity, res).admit(model, { model }).then(
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
    const limits = RateLimits.create(config, redis.url, createLogger('silent'));
    const other = RateLimits.create({ ...config }, redis.url, createLogger('silent'));
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

afterAll(() => Promise.all(platforms.map((t) => t.close())));
