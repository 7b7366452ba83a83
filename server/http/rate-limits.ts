// Dynamic rate limits of serverless inference, per organization x model (the algorithm is written out in the
// spec's description, "Rate limits"). Which operations are limited is a declaration: the spec marks them with
// `x-rate-limited: true`, and the pipeline (app.ts) puts every such request through a `Gate`: admitted before the
// handler runs (or refused with 429 / 503), settled from the response's `usage` after it.
//
// Counters are fixed windows of rate-limiter-flexible (in Redis when REDIS_URL is set, so every process shares one
// limit; in memory otherwise). Its limiters are used as atomic counters with an unreachable ceiling: the limit is
// dynamic, so the decision is taken here against the counts they return, and a refused request's points are given
// back.
import type { ErrorRequestHandler, Request, Response } from 'express';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, type RateLimiterRes } from 'rate-limiter-flexible';
import type { OperationId } from '../../generated/operations.ts';
import type { RateLimitConfig } from '../core/config.ts';
import { ApiError, internalError } from '../core/errors.ts';
import type { Identity } from '../core/identity.ts';
import { countTokens } from '../engines/tokens.ts';
import { Reply } from './reply.ts';
import { refResolver, type SpecDocument } from './spec-ref.ts';

/**
 * The operations the spec marks `x-rate-limited: true`, each with the `default` its body schema gives `model` (an
 * optional `model`, as audio's, is limited as its default).
 */
export function rateLimitedOperations(spec: SpecDocument): Map<OperationId, string | undefined> {
  const resolve = refResolver(spec);
  const ids = new Map<OperationId, string | undefined>();
  for (const item of Object.values(spec.paths)) {
    for (const op of Object.values(item)) {
      if (op?.['x-rate-limited'] !== true) continue;
      const content = resolve(op.requestBody)?.content ?? {};
      const schema = resolve((content['application/json'] ?? content['multipart/form-data'])?.schema);
      const fallback = resolve(schema?.properties?.model)?.default;
      ids.set(op.operationId, typeof fallback === 'string' ? fallback : undefined);
    }
  }
  return ids;
}

// Body fields that steer a request rather than carry text the model reads.
const NOT_PROMPT = new Set(['model', 'role', 'user', 'stop', 'encoding_format', 'response_format', 'language', 'file', 'timestamp_granularities']);

/**
 * Tokens a request is expected to use, before it runs: every string of the body the model reads (not `model`, roles
 * and other switches), counted with the server's tokenizer, plus `max_tokens` x `n` when given. The response's
 * `usage.total_tokens` corrects it afterwards.
 */
export function estimateTokens(body: unknown): number {
  let tokens = 0;
  const walk = (value: unknown): void => {
    if (typeof value === 'string') tokens += countTokens(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) if (!NOT_PROMPT.has(k)) walk(v);
  };
  walk(body);
  const b = body as { max_tokens?: unknown; n?: unknown } | null;
  if (typeof b?.max_tokens === 'number') tokens += b.max_tokens * (typeof b.n === 'number' ? b.n : 1);
  return tokens;
}

/** `usage.total_tokens` of a handler's JSON answer, when it has one. */
function usedTokens(result: unknown): number | undefined {
  const body = result instanceof Reply ? (result.content.kind === 'json' ? result.content.value : undefined) : result;
  const total = (body as { usage?: { total_tokens?: unknown } } | undefined)?.usage?.total_tokens;
  return typeof total === 'number' && Number.isFinite(total) ? total : undefined;
}

/** How long settled requests' counts are gathered before they are written to Redis. */
const FLUSH_MS = 50;

// Above any limit: the limiters only count; the decision is ours.
const UNREACHABLE = Number.MAX_SAFE_INTEGER;

interface Limits {
  requests: number;
  tokens: number;
}

interface Counted {
  res: RateLimiterRes;
  /** When this count's window ends (epoch ms): points given back after that would open the next window negative. */
  endsAt: number;
}

export class RateLimits {
  private readonly requests: RateLimiterAbstract;
  private readonly tokens: RateLimiterAbstract;
  private readonly capacity: RateLimiterAbstract;
  /** Successful requests and tokens, in buckets of the usage window (`<key>:<r|t>:<bucket>`), kept two buckets long. */
  private readonly usage: RateLimiterAbstract;
  /** Each key's dynamic limits, recomputed at most once per window in each process. */
  private readonly cache = new Map<string, { limits: Limits; until: number }>();
  /** Requests of this process waiting in each key's queue. */
  private readonly waiting = new Map<string, number>();

  private constructor(
    readonly config: RateLimitConfig,
    private readonly log: Logger,
    private readonly redis?: Redis,
  ) {
    const make = (name: string, duration: number) => {
      const opts = { keyPrefix: `${config.keyPrefix}:${name}`, points: UNREACHABLE, duration };
      // A Redis failure falls back to a per-process count of the same window rather than failing the request.
      // `rejectIfRedisNotReady`: while the connection is down, at once (not after ioredis's reconnection delay).
      return redis
        ? new RateLimiterRedis({ ...opts, storeClient: redis, rejectIfRedisNotReady: true, insuranceLimiter: new RateLimiterMemory(opts) })
        : new RateLimiterMemory(opts);
    };
    this.requests = make('req', config.windowSeconds);
    this.tokens = make('tok', config.windowSeconds);
    this.capacity = make('cap', config.windowSeconds);
    this.usage = make('use', 2 * config.usageWindowSeconds);
  }

  static create(config: RateLimitConfig, redisUrl: string | undefined, log: Logger): RateLimits {
    // One connection per process. Auto-pipelining stays off (explicitly): commands go out as issued, in order.
    const redis =
      config.enabled && redisUrl
        ? new Redis(redisUrl, { enableAutoPipelining: false, maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: false })
        : undefined;
    redis?.on('error', (err) => log.warn({ err: err.message }, 'rate limits: Redis unavailable; counting in this process meanwhile'));
    return new RateLimits(config, log, redis);
  }

  /** Resolves once Redis is connected (or after its connection timeout, counting in the process meanwhile). */
  ready(): Promise<void> {
    const redis = this.redis;
    if (!redis || redis.status === 'ready') return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, 2000);
      redis.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async close(): Promise<void> {
    if (!this.redis) return;
    this.flush();
    // QUIT waits for a connection that may never come; a connection that is not up is just dropped.
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis!.disconnect());
    else this.redis.disconnect();
  }

  /** A model string of the caller's project names a dedicated endpoint, which has its known fixed limit. */
  isDedicated(identity: Identity, model: string): boolean {
    return model.startsWith(`${identity.projectSlug}/`);
  }

  /** The organization's limits on this model now: growth x recent successful usage, between the base and the ceiling. */
  async limitsFor(key: string, dedicated: boolean): Promise<Limits> {
    const c = this.config;
    if (dedicated) return { requests: c.dedicatedRequests, tokens: c.dedicatedTokens };
    const now = Date.now();
    const cached = this.cache.get(key);
    if (cached && cached.until > now) return cached.limits;
    const span = c.usageWindowSeconds * 1000;
    const bucket = Math.floor(now / span);
    const elapsed = (now - bucket * span) / span;
    const [rPrev, rCur, tPrev, tCur] = await Promise.all(
      [`${key}:r:${bucket - 1}`, `${key}:r:${bucket}`, `${key}:t:${bucket - 1}`, `${key}:t:${bucket}`].map((k) =>
        this.usage.get(k).then((r) => r?.consumedPoints ?? 0),
      ),
    );
    // Successes over the last usage window (the previous bucket weighted by how much of it is still inside), per request window.
    const perWindow = (prev: number, cur: number) => ((prev * (1 - elapsed) + cur) * c.windowSeconds) / c.usageWindowSeconds;
    const dynamic = (prev: number, cur: number, base: number, max: number) => Math.min(max, Math.max(base, Math.ceil(c.growth * perWindow(prev, cur))));
    const limits = { requests: dynamic(rPrev, rCur, c.baseRequests, c.maxRequests), tokens: dynamic(tPrev, tCur, c.baseTokens, c.maxTokens) };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(key, { limits, until: now + c.windowSeconds * 1000 });
    return limits;
  }

  async count(limiter: 'requests' | 'tokens' | 'capacity', key: string, points: number): Promise<Counted> {
    const res = await this[limiter].consume(key, points).catch((r: unknown) => {
      // A store failure with no insurance left: count nothing, refuse nothing.
      if (r instanceof Error) throw r;
      return r as RateLimiterRes;
    });
    return { res, endsAt: Date.now() + res.msBeforeNext };
  }

  /** Gives points back (or takes more: negative) in a window that is still open; failures only cost accuracy. */
  adjust(limiter: 'requests' | 'tokens' | 'capacity', key: string, counted: Counted, points: number): void {
    if (points === 0 || Date.now() >= counted.endsAt - 5) return;
    const done = points > 0 ? this[limiter].reward(key, points) : this[limiter].penalty(key, -points);
    done.catch((err: unknown) => this.log.warn({ err: String(err) }, 'rate limits: adjustment lost'));
  }

  /**
   * What a settled request changes (its token correction, its recent usage) is summed per key in Redis mode and
   * written every FLUSH_MS, one command per key instead of three per request: nothing waits for it, and a count that
   * lands a few milliseconds later changes no decision that matters.
   */
  private pending = new Map<string, { limiter: 'tokens' | 'usage'; key: string; points: number; counted?: Counted }>();
  private flushing?: NodeJS.Timeout;

  private later(limiter: 'tokens' | 'usage', key: string, points: number, counted?: Counted): void {
    if (points === 0) return;
    if (!this.redis) return void this.write(limiter, key, points, counted);
    const id = `${limiter}\n${key}\n${counted ? Math.round(counted.endsAt / 1000) : ''}`;
    const entry = this.pending.get(id);
    if (entry) entry.points += points;
    else this.pending.set(id, { limiter, key, points, counted });
    this.flushing ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  private write(limiter: 'tokens' | 'usage', key: string, points: number, counted?: Counted): void {
    if (limiter === 'tokens') this.adjust('tokens', key, counted!, -points);
    else this.usage.penalty(key, points).catch((err: unknown) => this.log.warn({ err: String(err) }, 'rate limits: usage not recorded'));
  }

  private flush(): void {
    clearTimeout(this.flushing);
    this.flushing = undefined;
    for (const e of this.pending.values()) this.write(e.limiter, e.key, e.points, e.counted);
    this.pending.clear();
  }

  /** Charges `points` more tokens (fewer: negative) to a request's window, after its answer. */
  correctTokens(key: string, counted: Counted, points: number): void {
    this.later('tokens', key, points, counted);
  }

  recordSuccess(key: string, tokens: number): void {
    const bucket = Math.floor(Date.now() / (this.config.usageWindowSeconds * 1000));
    this.later('usage', `${key}:r:${bucket}`, 1);
    this.later('usage', `${key}:t:${bucket}`, Math.round(tokens));
  }

  /** Milliseconds until the key's current request window ends, 0 when none is open; counts nothing. */
  async msBeforeReset(key: string): Promise<number> {
    const res = await this.requests.get(key).catch(() => null);
    return Math.max(0, res?.msBeforeNext ?? 0);
  }

  /** Takes a place in the key's wait queue if there is one and the wait is short enough; false when refused at once. */
  async wait(key: string, ms: number): Promise<boolean> {
    const waiting = this.waiting.get(key) ?? 0;
    if (ms > this.config.queueWaitMs || waiting >= this.config.queueSize) return false;
    this.waiting.set(key, waiting + 1);
    try {
      await new Promise((resolve) => setTimeout(resolve, ms + 1));
    } finally {
      const left = (this.waiting.get(key) ?? 1) - 1;
      if (left > 0) this.waiting.set(key, left);
      else this.waiting.delete(key);
    }
    return true;
  }
}

const seconds = (ms: number) => Math.max(0, Math.ceil(ms) / 1000);

/** The counters' key: per organization x `model` string. */
const keyOf = (identity: Identity, model: string) => `${identity.organizationId}:${model}`;

/**
 * Every answer of a limited operation carries `x-ratelimit-reset`, a refusal made before the request was counted
 * included (400 of the contract, 401, 413, 415, a model refused while the body streams): the seconds until the
 * caller's current window on the request's `model` (or the operation's default) ends, 0 when none is open or there
 * is no caller. An error handler, before the one that writes the envelope.
 */
export function resetOnRefusals(
  limits: RateLimits,
  limited: Map<OperationId, string | undefined>,
  operationOf: (req: Request) => OperationId | undefined,
): ErrorRequestHandler {
  return async (err, req, res, next) => {
    const op = limited.size ? operationOf(req) : undefined;
    const carried = err instanceof ApiError && 'x-ratelimit-reset' in err.headers;
    if (op && limited.has(op) && !carried && !res.headersSent && !res.hasHeader('x-ratelimit-reset')) {
      const model = typeof req.body?.model === 'string' ? req.body.model : limited.get(op);
      const ms = req.identity && model !== undefined ? await limits.msBeforeReset(keyOf(req.identity, model)) : 0;
      res.set('x-ratelimit-reset', String(seconds(ms)));
    }
    next(err);
  };
}

/** One limited request: admitted once by the pipeline (on the body's `model`, JSON or multipart), then settled or failed. */
export class Gate {
  private admitted?: {
    key: string;
    modelKey?: string;
    estimate: number;
    limits: Limits;
    requests: Counted;
    tokens: Counted;
    capacity?: Counted;
  };

  constructor(
    private readonly limits: RateLimits,
    private readonly identity: Identity,
    private readonly res: Response,
  ) {}

  get isAdmitted(): boolean {
    return this.admitted !== undefined;
  }

  /**
   * Counts the request against the organization's limits on `model` (and the model's capacity), waiting in the
   * key's short queue when the window that refuses it ends soon; throws the 429 or 503 otherwise.
   */
  async admit(model: string, body: unknown): Promise<void> {
    if (this.admitted) return;
    const dedicated = this.limits.isDedicated(this.identity, model);
    const key = keyOf(this.identity, model);
    const estimate = estimateTokens(body);
    for (let attempt = 0; ; attempt++) {
      const refusal = await this.attempt(key, dedicated ? undefined : model, estimate, dedicated);
      if (!refusal) return;
      if (attempt > 0 || !(await this.limits.wait(key, refusal.waitMs))) throw refusal.error;
    }
  }

  private async attempt(
    key: string,
    model: string | undefined,
    estimate: number,
    dedicated: boolean,
  ): Promise<{ error: ApiError; waitMs: number } | undefined> {
    const L = this.limits;
    const [limits, requests, tokens, capacity] = await Promise.all([
      L.limitsFor(key, dedicated),
      L.count('requests', key, 1),
      L.count('tokens', key, estimate),
      model === undefined ? undefined : L.count('capacity', model, 1),
    ]);
    const usedR = requests.res.consumedPoints;
    const usedT = tokens.res.consumedPoints;
    const headers = (remainingR: number, remainingT: number, resetMs: number) => ({
      'x-ratelimit-limit': String(limits.requests),
      'x-ratelimit-remaining': String(Math.max(0, remainingR)),
      'x-ratelimit-reset': String(seconds(resetMs)),
      'x-tokenlimit-limit': String(limits.tokens),
      'x-tokenlimit-remaining': String(Math.max(0, remainingT)),
    });
    const giveBack = () => {
      L.adjust('requests', key, requests, 1);
      L.adjust('tokens', key, tokens, estimate);
      if (capacity) L.adjust('capacity', model!, capacity, 1);
    };
    const overRequests = usedR > limits.requests;
    // A request alone in its window always passes the token check, so one larger than the whole limit is not refused forever.
    const overTokens = usedT > limits.tokens && usedT > estimate;
    if (overRequests || overTokens) {
      giveBack();
      const waitMs = overRequests ? requests.res.msBeforeNext : tokens.res.msBeforeNext;
      const type = overRequests ? 'dynamic_request_limited' : 'dynamic_token_limited';
      const what = overRequests ? `${limits.requests} requests` : `${limits.tokens} tokens`;
      const wait = Math.max(1, Math.ceil(waitMs / 1000));
      const error = new ApiError(
        429,
        type,
        `Rate limit exceeded for model '${key.slice(this.identity.organizationId.length + 1)}': this organization may send ${what} per ${L.config.windowSeconds} s on it now ` +
          `(${dedicated ? "the dedicated endpoint's fixed limit" : 'the limit rises with sustained successful traffic'}). Retry in ${seconds(waitMs)} s.`,
        null,
        type,
        {
          ...headers(limits.requests - usedR + 1, limits.tokens - usedT + estimate, waitMs),
          'retry-after': String(wait),
          'retry-after-ms': String(Math.ceil(waitMs)),
        },
      );
      return { error, waitMs };
    }
    const cap = model === undefined ? undefined : (L.config.modelCapacities[model] ?? L.config.modelCapacity);
    if (capacity && cap !== undefined && capacity.res.consumedPoints > cap) {
      giveBack();
      const waitMs = capacity.res.msBeforeNext;
      const error = new ApiError(
        503,
        'model_overloaded',
        `The model '${model}' is at its serving capacity now; this organization is within its rate limit. Retry in ${seconds(waitMs)} s.`,
        null,
        'server_error',
        {
          ...headers(limits.requests - usedR + 1, limits.tokens - usedT + estimate, requests.res.msBeforeNext),
          'retry-after': String(Math.max(1, Math.ceil(waitMs / 1000))),
          'retry-after-ms': String(Math.ceil(waitMs)),
        },
      );
      return { error, waitMs };
    }
    this.admitted = { key, modelKey: model, estimate, limits, requests, tokens, capacity };
    this.res.set(headers(limits.requests - usedR, limits.tokens - usedT, requests.res.msBeforeNext));
    return undefined;
  }

  /**
   * After the handler answered: the token count corrected from `usage`, and the success recorded as recent usage.
   * A stream of events is settled when it ends, from the last event that carried `usage` (its headers are gone by then).
   */
  settle(result: unknown): void {
    const a = this.admitted;
    if (!a) throw internalError(); // a limited operation whose handler never called `admit`
    if (result instanceof Reply && result.content.kind === 'sse') {
      const events = result.content.events;
      const limits = this.limits;
      result.content.events = (async function* () {
        let used: number | undefined;
        for await (const event of events) {
          used = usedTokens(event) ?? used;
          yield event;
        }
        if (used !== undefined) limits.correctTokens(a.key, a.tokens, used - a.estimate);
        limits.recordSuccess(a.key, used ?? a.estimate);
      })();
      return;
    }
    const used = usedTokens(result) ?? a.estimate;
    if (used !== a.estimate) {
      this.limits.correctTokens(a.key, a.tokens, used - a.estimate);
      this.res.set('x-tokenlimit-remaining', String(Math.max(0, a.limits.tokens - a.tokens.res.consumedPoints + a.estimate - used)));
    }
    this.limits.recordSuccess(a.key, used);
  }

  /** The handler failed: its tokens were not used (the request still counts). */
  fail(): void {
    const a = this.admitted;
    if (a) this.limits.adjust('tokens', a.key, a.tokens, a.estimate);
  }
}
