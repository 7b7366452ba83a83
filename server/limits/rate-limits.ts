// Dynamic rate limits of serverless inference, per organization x model: the algorithm (written out in the spec's
// description, "Rate limits"). The pipeline (http/rate-limits.ts) puts every request of a limited operation through
// `attempt` before its handler and `settle` after it.
//
// Windows follow the platform's clock (core/clock.ts), so moving it (the control plane's `advanceTime`) ends them:
// window n of a key is [n, n + 1) x RATE_LIMIT_WINDOW_SECONDS of that clock, unless the control plane set the key a
// window of its own (its end, and its counts). Each window's counts are a counter of rate-limiter-flexible (in Redis
// when REDIS_URL is set, so every process shares one limit; in memory otherwise) under the key and the window's id.
// Its limiters are used as atomic counters with an unreachable ceiling and a lifetime well past any window: the limit
// is dynamic, so the decision is taken here against the counts they return, and a refused request's points are
// given back.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, type RateLimiterRes } from 'rate-limiter-flexible';
import type { Clock } from '../core/clock.ts';
import type { RateLimitConfig } from '../core/config.ts';
import { ApiError } from '../core/errors.ts';
import type { Identity } from '../core/identity.ts';
import { countTokens } from '../engines/tokens.ts';

// Body fields that steer a request rather than carry text the model reads.
const NOT_PROMPT = new Set(['model', 'role', 'user', 'stop', 'encoding_format', 'response_format', 'language', 'file', 'timestamp_granularities']);

/**
 * Tokens a request is expected to use, before it runs: every string of the body the model reads (not `model`, roles
 * and other switches), counted with the server's tokenizer, plus `max_tokens` x `n` when given. The response's
 * `usage.total_tokens` corrects it afterwards. Counting stops once the strings are past `atMost` (the key's token
 * limit: a request over it is decided alike however far over it is), so a long body costs the limit's work.
 */
export function estimateTokens(body: unknown, atMost = Infinity): number {
  let tokens = 0;
  const walk = (value: unknown): void => {
    if (tokens > atMost) return;
    if (typeof value === 'string') tokens += countTokens(value, atMost - tokens);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) if (!NOT_PROMPT.has(k)) walk(v);
  };
  walk(body);
  const b = body as { max_tokens?: unknown; n?: unknown } | null;
  if (typeof b?.max_tokens === 'number') tokens += b.max_tokens * (typeof b.n === 'number' ? b.n : 1);
  return tokens;
}

/** How long settled requests' counts are gathered before they are written to Redis. */
const FLUSH_MS = 50;
/** How often a request waiting in a key's queue looks at the clock. */
const WAIT_STEP_MS = 25;
/** The least a counter lives (real seconds), whatever its window: a test's clock may stand still meanwhile. */
const LIFETIME_S = 600;

// Above any limit: the limiters only count; the decision is ours.
const UNREACHABLE = Number.MAX_SAFE_INTEGER;

export interface Limits {
  requests: number;
  tokens: number;
}

/** An admitted request: what settling it needs, and the limit headers to send with its answer. */
export interface Admitted {
  key: string;
  estimate: number;
  limits: Limits;
  tokens: Counted;
  headers: Record<string, string>;
}

export interface Counted {
  res: RateLimiterRes;
  /** The window counted in, and when it ends (the platform clock's ms): points given back after that are too late. */
  window: Window;
}

/** A key's window: its id among the key's windows, and its end (the platform clock's ms). */
export interface Window {
  id: string;
  endsAt: number;
}

/** What the control plane sets on a key: limits in place of the dynamic ones, and a window of its own with its counts. */
export interface KeySetting {
  limits: Partial<Limits>;
  window?: Window & { used: Limits };
}

export class RateLimits {
  // Made anew by `clear` (a platform reset of the control plane).
  private requests!: RateLimiterAbstract;
  private tokens!: RateLimiterAbstract;
  private capacity!: RateLimiterAbstract;
  /** Successful requests and tokens, in buckets of the usage window (`<key>:<r|t>:<bucket>`), kept two buckets long. */
  private usage!: RateLimiterAbstract;
  /** Limits the control plane set per key, in place of the dynamic ones (the same in every process: control/limits.ts). */
  private readonly overrides = new Map<string, Partial<Limits>>();
  /** Windows the control plane set per key, until they end. */
  private readonly windows = new Map<string, Window>();
  /** Each key's dynamic limits, recomputed at most once per window in each process. */
  private readonly cache = new Map<string, { limits: Limits; until: number }>();
  /** Requests of this process waiting in each key's queue. */
  private readonly waiting = new Map<string, number>();

  private constructor(
    readonly config: RateLimitConfig,
    private readonly log: Logger,
    private readonly clock: Clock,
    private readonly redis?: Redis,
  ) {
    this.build();
  }

  /** A key's window now: the one the control plane set it while that lasts, else the clock's current one. */
  window(key: string): Window {
    const now = this.clock.now();
    const set = this.windows.get(key);
    if (set && now < set.endsAt) return set;
    const span = this.config.windowSeconds * 1000;
    const n = Math.floor(now / span);
    return { id: String(n), endsAt: (n + 1) * span };
  }

  private build(): void {
    const config = this.config;
    const redis = this.redis;
    // A counter outlives its window (whose id is in its key) by far: the window, not the counter's lifetime, ends a count.
    const make = (name: string, duration: number) => {
      const opts = { keyPrefix: `${config.keyPrefix}:${name}`, points: UNREACHABLE, duration: Math.max(LIFETIME_S, duration) };
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

  static create(config: RateLimitConfig, redisUrl: string | undefined, log: Logger, clock: Clock): RateLimits {
    // One connection per process. Auto-pipelining stays off (explicitly): commands go out as issued, in order.
    const redis =
      config.enabled && redisUrl
        ? new Redis(redisUrl, {
            enableAutoPipelining: false,
            maxRetriesPerRequest: 1,
            connectTimeout: 2000,
            // No command waits on Redis longer than this: past it, the count is this process's (insurance).
            commandTimeout: config.redisCommandTimeoutMs,
            lazyConnect: false,
          })
        : undefined;
    redis?.on('error', (err) => log.warn({ err: err.message }, 'rate limits: Redis unavailable; counting in this process meanwhile'));
    const limits = new RateLimits(config, log, clock, redis);
    limits.watch();
    return limits;
  }

  private watchdog?: NodeJS.Timeout;

  /**
   * A Redis that stops answering but keeps its connection (frozen, overloaded) would still look ready, and every
   * command would wait out its timeout: a ping every timeout's length tells, and when two in a row go unanswered the
   * connection is dropped, so that the counters fall back to this process at once (`rejectIfRedisNotReady`) until a
   * new connection's ready check is answered. (Two, because a busy event loop can fire one timeout before it reads
   * the answer that came in time.)
   */
  private watch(): void {
    const redis = this.redis;
    if (!redis) return;
    let pinging = false;
    let missed = 0;
    this.watchdog = setInterval(() => {
      if (pinging || redis.status !== 'ready') return;
      pinging = true;
      redis
        .ping()
        .then(
          () => {
            missed = 0;
          },
          (err: Error) => {
            if (++missed < 2 || redis.status !== 'ready') return;
            missed = 0;
            this.log.warn({ err: err.message }, 'rate limits: Redis stopped answering; counting in this process until it answers again');
            redis.disconnect(true);
          },
        )
        .finally(() => {
          pinging = false;
        });
    }, this.config.redisCommandTimeoutMs);
    this.watchdog.unref();
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
    clearInterval(this.watchdog);
    if (!this.redis) return;
    this.flush();
    // QUIT waits for a connection that may never come; a connection that is not up is just dropped.
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis!.disconnect());
    else this.redis.disconnect();
  }

  /** Where the counts go now: `memory` (no Redis configured), `redis`, or `fallback` (Redis configured, not answering). */
  get store(): 'memory' | 'redis' | 'fallback' {
    if (!this.redis) return 'memory';
    return this.redis.status === 'ready' ? 'redis' : 'fallback';
  }

  /** A model string of the caller's project names a dedicated endpoint, which has its known fixed limit. */
  isDedicated(identity: Identity, model: string): boolean {
    return model.startsWith(`${identity.projectSlug}/`);
  }

  /** The token limit a request of `identity` on `model` is held to now (what its estimate needs counting up to). */
  async tokenLimit(identity: Identity, model: string): Promise<number> {
    return (await this.limitsFor(keyOf(identity, model), this.isDedicated(identity, model))).tokens;
  }

  /** The organization's limits on this model now: growth x recent successful usage, between the base and the ceiling. */
  async limitsFor(key: string, dedicated: boolean): Promise<Limits> {
    const set = this.overrides.get(key);
    const limits = dedicated ? { requests: this.config.dedicatedRequests, tokens: this.config.dedicatedTokens } : await this.dynamicLimits(key);
    return set ? { ...limits, ...set } : limits;
  }

  private async dynamicLimits(key: string): Promise<Limits> {
    const c = this.config;
    const now = this.clock.now();
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
    const window = this.window(key);
    const res = await this[limiter].consume(`${key}@${window.id}`, points).catch((r: unknown) => {
      // A store failure with no insurance left: count nothing, refuse nothing.
      if (r instanceof Error) throw r;
      return r as RateLimiterRes;
    });
    return { res, window };
  }

  /** Milliseconds until a counted window ends. */
  private left(counted: Counted): number {
    return Math.max(0, counted.window.endsAt - this.clock.now());
  }

  /** Gives points back (or takes more: negative) in a window that is still open; failures only cost accuracy. */
  adjust(limiter: 'requests' | 'tokens' | 'capacity', key: string, counted: Counted, points: number): void {
    if (points === 0 || this.clock.now() >= counted.window.endsAt - 5) return;
    const at = `${key}@${counted.window.id}`;
    const done = points > 0 ? this[limiter].reward(at, points) : this[limiter].penalty(at, -points);
    this.track(done.catch((err: unknown) => this.log.warn({ err: String(err) }, 'rate limits: adjustment lost')));
  }

  /** Writes on their way (nothing waits for them but `settled`). */
  private readonly writing = new Set<Promise<unknown>>();
  private track(write: Promise<unknown>): void {
    this.writing.add(write);
    void write.finally(() => this.writing.delete(write));
  }

  /** Resolves once every count gathered so far has been written (a test's way to know, and a shutdown's). */
  async settled(): Promise<void> {
    this.flush();
    await Promise.all(this.writing);
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
    const id = `${limiter}\n${key}\n${counted ? counted.window.id : ''}`;
    const entry = this.pending.get(id);
    if (entry) entry.points += points;
    else this.pending.set(id, { limiter, key, points, counted });
    this.flushing ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  private write(limiter: 'tokens' | 'usage', key: string, points: number, counted?: Counted): void {
    if (limiter === 'tokens') this.adjust('tokens', key, counted!, -points);
    else this.track(this.usage.penalty(key, points).catch((err: unknown) => this.log.warn({ err: String(err) }, 'rate limits: usage not recorded')));
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
    const bucket = Math.floor(this.clock.now() / (this.config.usageWindowSeconds * 1000));
    this.later('usage', `${key}:r:${bucket}`, 1);
    this.later('usage', `${key}:t:${bucket}`, Math.round(tokens));
  }

  /** Milliseconds until the key's current request window ends, 0 when none is open; counts nothing. */
  async msBeforeReset(key: string): Promise<number> {
    const window = this.window(key);
    const res = await this.requests.get(`${key}@${window.id}`).catch(() => null);
    return res ? Math.max(0, window.endsAt - this.clock.now()) : 0;
  }

  /**
   * Takes a place in the key's wait queue if there is one and the wait is short enough (false: refused at once), and
   * waits until the platform's clock reaches the window's end: as long in real time (the clock follows the system's),
   * or less if the clock is moved meanwhile (a test's, or `advanceTime`).
   */
  async wait(key: string, ms: number): Promise<boolean> {
    const waiting = this.waiting.get(key) ?? 0;
    if (ms > this.config.queueWaitMs || waiting >= this.config.queueSize) return false;
    this.waiting.set(key, waiting + 1);
    const endsAt = this.clock.now() + ms;
    const deadline = Date.now() + ms + 1;
    try {
      while (this.clock.now() < endsAt && Date.now() < deadline) await sleep(Math.min(WAIT_STEP_MS, deadline - Date.now()));
    } finally {
      const left = (this.waiting.get(key) ?? 1) - 1;
      if (left > 0) this.waiting.set(key, left);
      else this.waiting.delete(key);
    }
    return true;
  }

  /**
   * One try at admitting a request of `identity` on `model`, expected to use `estimate` tokens: counted against the
   * organization's dynamic limits on the model (a dedicated endpoint's fixed ones) and the model's live capacity.
   * Admitted, it answers the limit headers to send; refused, the 429 (`dynamic_request_limited`,
   * `dynamic_token_limited`) or 503 (`model_overloaded`) with its headers, its points given back, and how long until
   * the refusing window ends.
   */
  async attempt(identity: Identity, requested: string, estimate: number): Promise<{ admitted: Admitted } | { refusal: ApiError; waitMs: number }> {
    const dedicated = this.isDedicated(identity, requested);
    const key = keyOf(identity, requested);
    // A dedicated endpoint has no shared serving capacity to count.
    const model = dedicated ? undefined : requested;
    const [limits, requests, tokens, capacity] = await Promise.all([
      this.limitsFor(key, dedicated),
      this.count('requests', key, 1),
      this.count('tokens', key, estimate),
      model === undefined ? undefined : this.count('capacity', model, 1),
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
      this.adjust('requests', key, requests, 1);
      this.adjust('tokens', key, tokens, estimate);
      if (capacity) this.adjust('capacity', model!, capacity, 1);
    };
    const overRequests = usedR > limits.requests;
    // A request alone in its window always passes the token check, so one larger than the whole limit is not refused forever.
    const overTokens = usedT > limits.tokens && usedT > estimate;
    if (overRequests || overTokens) {
      giveBack();
      const waitMs = this.left(overRequests ? requests : tokens);
      const type = overRequests ? 'dynamic_request_limited' : 'dynamic_token_limited';
      const what = overRequests ? `${limits.requests} requests` : `${limits.tokens} tokens`;
      const wait = Math.max(1, Math.ceil(waitMs / 1000));
      const error = new ApiError(
        429,
        type,
        `Rate limit exceeded for model '${requested}': this organization may send ${what} per ${this.config.windowSeconds} s on it now ` +
          `(${dedicated ? "the dedicated endpoint's fixed limit" : 'the limit rises with sustained successful traffic'}). Retry in ${seconds(waitMs)} s.`,
        null,
        type,
        {
          ...headers(limits.requests - usedR + 1, limits.tokens - usedT + estimate, waitMs),
          'retry-after': String(wait),
          'retry-after-ms': String(Math.ceil(waitMs)),
        },
      );
      return { refusal: error, waitMs };
    }
    const cap = model === undefined ? undefined : (this.config.modelCapacities[model] ?? this.config.modelCapacity);
    if (capacity && cap !== undefined && capacity.res.consumedPoints > cap) {
      giveBack();
      const waitMs = this.left(capacity);
      const error = new ApiError(
        503,
        'model_overloaded',
        `The model '${model}' is at its serving capacity now; this organization is within its rate limit. Retry in ${seconds(waitMs)} s.`,
        null,
        'server_error',
        {
          ...headers(limits.requests - usedR + 1, limits.tokens - usedT + estimate, this.left(requests)),
          'retry-after': String(Math.max(1, Math.ceil(waitMs / 1000))),
          'retry-after-ms': String(Math.ceil(waitMs)),
        },
      );
      return { refusal: error, waitMs };
    }
    return { admitted: { key, estimate, limits, tokens, headers: headers(limits.requests - usedR, limits.tokens - usedT, this.left(requests)) } };
  }

  /**
   * After the answer: the token count corrected from the tokens the request used (when its answer said), and the
   * success recorded as recent usage; answers the tokens left in the window.
   */
  settle(a: Admitted, used: number | undefined): number {
    const spent = used ?? a.estimate;
    if (spent !== a.estimate) this.correctTokens(a.key, a.tokens, spent - a.estimate);
    this.recordSuccess(a.key, spent);
    return Math.max(0, a.limits.tokens - a.tokens.res.consumedPoints + a.estimate - spent);
  }

  /** The request failed: its tokens were not used (the request still counts). */
  release(a: Admitted): void {
    this.adjust('tokens', a.key, a.tokens, a.estimate);
  }

  // The control plane (its rate-limit operations and a platform reset): read and set a key's window, clear them all.

  /** A key's limits in force, the ones the control plane set, and its current window's counts and end. */
  async state(key: string, dedicated: boolean): Promise<KeyState> {
    const window = this.window(key);
    const at = `${key}@${window.id}`;
    const [limits, requests, tokens] = await Promise.all([this.limitsFor(key, dedicated), this.requests.get(at), this.tokens.get(at)]);
    return {
      limits,
      set: this.overrides.get(key) ?? {},
      used: { requests: requests?.consumedPoints ?? 0, tokens: tokens?.consumedPoints ?? 0 },
      msLeft: requests || tokens ? Math.max(0, window.endsAt - this.clock.now()) : 0,
    };
  }

  /**
   * The setting a change makes of a key's `current` one: limits set (null: back to the dynamic one), and/or the
   * current window's counts (others kept) ending in `msLeft` (default: when the open window ends, or a whole window
   * from now when none is open). A window given an end of its own gets an id of its own.
   */
  async settingOf(
    key: string,
    current: KeySetting | undefined,
    change: { limits?: { [K in keyof Limits]?: number | null }; used?: Partial<Limits>; msLeft?: number },
  ): Promise<KeySetting> {
    const limits = { ...current?.limits };
    for (const k of ['requests', 'tokens'] as const) {
      if (change.limits?.[k] === null) delete limits[k];
      else if (change.limits?.[k] !== undefined) limits[k] = change.limits[k];
    }
    const now = this.clock.now();
    const kept = current?.window && current.window.endsAt > now ? current.window : undefined;
    if (change.used === undefined && change.msLeft === undefined) return { limits, window: kept };
    const state = await this.state(key, false);
    const open = this.window(key);
    const window =
      change.msLeft !== undefined || state.msLeft === 0
        ? { id: `set-${now}-${Math.random().toString(36).slice(2, 8)}`, endsAt: now + (change.msLeft ?? this.config.windowSeconds * 1000) }
        : open;
    return {
      limits,
      window: { ...window, used: { requests: change.used?.requests ?? state.used.requests, tokens: change.used?.tokens ?? state.used.tokens } },
    };
  }

  /**
   * Puts a key's setting in force in this process (undefined: none). `counts`: also writes its window's counts (in
   * memory every process writes its own; in Redis, which every process shares, the process that made the setting).
   */
  async apply(key: string, setting: KeySetting | undefined, counts: boolean): Promise<void> {
    if (setting && Object.keys(setting.limits).length) this.overrides.set(key, setting.limits);
    else this.overrides.delete(key);
    const window = setting?.window;
    if (window && !/^\d+$/.test(window.id)) this.windows.set(key, { id: window.id, endsAt: window.endsAt });
    else this.windows.delete(key);
    if (!counts || !window) return;
    this.flush(); // a pending correction would land on the window set here
    const ms = Math.max(1, window.endsAt - this.clock.now(), LIFETIME_S * 1000);
    await Promise.all((['requests', 'tokens'] as const).map((k) => this.put(k, `${key}@${window.id}`, window.used[k], ms)));
  }

  /** One counter set to `points`, living `ms` (to the millisecond in Redis too, where `set` has whole seconds). */
  private async put(limiter: 'requests' | 'tokens', key: string, points: number, ms: number): Promise<void> {
    if (this.store === 'redis') await this.redis!.set(this[limiter].getKey(key), points, 'PX', Math.max(1, Math.round(ms)));
    else await this[limiter].set(key, points, ms / 1000);
  }

  /** Every window, recent usage and set limit gone (`shared`: in Redis too, every key under RATE_LIMIT_KEY_PREFIX). */
  async clear(shared = true): Promise<void> {
    this.pending.clear();
    this.cache.clear();
    this.overrides.clear();
    this.windows.clear();
    if (shared && this.redis && this.store === 'redis') {
      const stream = this.redis.scanStream({ match: `${this.config.keyPrefix.replace(/[*?[\]\\]/g, '\\$&')}:*`, count: 500 });
      for await (const keys of stream as AsyncIterable<string[]>) if (keys.length) await this.redis.unlink(...keys);
    }
    this.build(); // fresh in-memory counters (and Redis's insurance ones)
  }
}

/** What the control plane reads of one organization x model key. */
export interface KeyState {
  limits: Limits;
  set: Partial<Limits>;
  used: Limits;
  msLeft: number;
}

/** Seconds (to the millisecond) in a duration, as the limit headers give it. */
export const seconds = (ms: number) => Math.max(0, Math.ceil(ms) / 1000);

/** The counters' key: per organization x `model` string. */
export const keyOf = (identity: Pick<Identity, 'organizationId'>, model: string) => `${identity.organizationId}:${model}`;
