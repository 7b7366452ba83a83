// Dynamic rate limits of serverless inference, per organization x model: the algorithm (written out in the spec's
// description, "Rate limits"). The pipeline (http/rate-limits.ts) puts every request of a limited operation through
// `attempt` before its handler and `settle` after it.
//
// Windows follow the platform's clock (core/clock.ts), so moving it (the control plane's `advanceTime`) ends them:
// window n of a key is [n, n + 1) x RATE_LIMIT_WINDOW_SECONDS of that clock, unless the control plane set the key a
// window of its own (its end, and its counts). Each window's counts are a counter (in Redis when REDIS_URL is set, so
// every process shares one limit; in the process otherwise) under the key and the window's id, living well past any
// window. They are atomic counters without a ceiling: the limit is dynamic, so the decision is taken here against the
// counts they return, and a refused request's points are given back. The process's counters are a Map, counted
// synchronously: in memory a request is admitted without waiting on a promise (a limiter library's promise-based
// counters cost a chat request several percent of its CPU, measured). Redis's are counted by a script, one call for
// the requests of one turn of the event loop (RedisLink.count).
//
// Redis is waited on for at most RATE_LIMIT_REDIS_TIMEOUT_MS per request, all its calls together (RedisWait): past
// it the request is counted in the process (the fallback), and so is every request after it until Redis answers a
// probe again in time, so only the requests already waiting when Redis froze wait, and none longer than that. Each
// write carries the moment its request stopped waiting, in Redis's clock (measured by the probes): a write Redis
// runs only after it (a frozen Redis waking up, a command resent on reconnection) counts nothing, so the requests
// counted in the process meanwhile do not land in Redis's window afterwards as well.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { RateLimitConfig } from '../core/config.ts';
import { ApiError } from '../core/errors.ts';
import type { Identity } from '../core/identity.ts';
import { onFirstUse } from '../core/packages.ts';
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
  let tokens = promptTokens(body, atMost);
  const b = body as { max_tokens?: unknown; n?: unknown } | null;
  if (typeof b?.max_tokens === 'number') tokens += b.max_tokens * (typeof b.n === 'number' ? b.n : 1);
  return tokens;
}

/** The tokens of every string in `value` the model reads, counted until they are past `atMost`. */
function promptTokens(value: unknown, atMost: number): number {
  if (typeof value === 'string') return countTokens(value, atMost);
  let tokens = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length && tokens <= atMost; i++) tokens += promptTokens(value[i], atMost - tokens);
  } else if (value && typeof value === 'object') {
    for (const k in value) {
      if (tokens > atMost) break;
      if (Object.hasOwn(value, k) && !NOT_PROMPT.has(k)) tokens += promptTokens((value as Record<string, unknown>)[k], atMost - tokens);
    }
  }
  return tokens;
}

// ioredis (about 50 ms to load) is loaded only when Redis is configured.
const ioredis = onFirstUse<typeof import('ioredis')>('ioredis');

/** How long settled requests' counts are gathered before they are written to Redis. */
const FLUSH_MS = 50;

/** How often a request waiting in a key's queue looks at the clock. */
const WAIT_STEP_MS = 25;
/** The least a counter lives (real seconds), whatever its window: a test's clock may stand still meanwhile. */
const LIFETIME_S = 600;
/** The most buckets a sliding count (`slide`) keeps. */
const SLIDE_BUCKETS = 60;

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
  /** The window's count with this request's points. */
  consumed: number;
  /** The window counted in, and when it ends (the platform clock's ms): points given back after that are too late. */
  window: Window;
  /** The counter's name for that window (`windowName`), where points are given back. */
  name: string;
  /** Whether Redis counted it (else the process did): an adjustment goes where the count is. */
  shared?: boolean;
}

/** A request's counts: itself in the key's request window, its tokens in the token window, itself in the model's capacity. */
type Counts = [requests: Counted, tokens: Counted, capacity: Counted | undefined];

/** What `attempt` answers: the request admitted, or refused with how long until the refusing window ends. */
export type Outcome = { admitted: Admitted } | { refusal: ApiError; waitMs: number };

/** One request being admitted: its key, the model it asked for (the one counted for capacity, if any), its limits and estimate. */
interface Admission {
  key: string;
  requested: string;
  model: string | undefined;
  dedicated: boolean;
  limits: Limits;
  estimate: number;
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
  private requests!: Counter;
  private tokens!: Counter;
  private capacity!: Counter;
  /** Successful requests and tokens, in buckets of the usage window (`<key>:<r|t>:<bucket>`), kept two buckets long. */
  private usage!: Counter;
  /** The Redis connection's state (whether it answers in time) and clock, when Redis is configured. */
  private readonly link?: RedisLink;
  /** Limits the control plane set per key, in place of the dynamic ones (the same in every process: control/limits.ts). */
  private readonly overrides = new Map<string, Partial<Limits>>();
  /** Windows the control plane set per key, until they end. */
  private readonly windows = new Map<string, Window>();
  /** Each key's dynamic limits, recomputed at most once per window in each process. */
  private readonly cache = new Map<string, { limits: Limits; until: number; shared: boolean }>();
  /** Keys whose usage is being read now. */
  private readonly refreshing = new Set<string>();
  /** Requests of this process waiting in each key's queue. */
  private readonly waiting = new Map<string, number>();
  /** `slide`'s counts in this process: per key, bucket -> count. */
  private readonly slides = new Map<string, Map<number, number>>();

  private constructor(
    readonly config: RateLimitConfig,
    private readonly log: Logger,
    private readonly clock: Clock,
    private readonly redis?: Redis,
  ) {
    if (redis) this.link = new RedisLink(redis, config.redisCommandTimeoutMs, log);
    this.build();
  }

  /** A key's window now: the one the control plane set it while that lasts, else the clock's current one. */
  window(key: string, now = this.clock.now()): Window {
    // (No lookup while the control plane set none: a request asks twice.)
    const set = this.windows.size ? this.windows.get(key) : undefined;
    if (set && now < set.endsAt) return set;
    const span = this.config.windowSeconds * 1000;
    const n = Math.floor(now / span);
    // Every key's clock window is the same object while it lasts (a request asks twice: its key's, its model's).
    if (this.current?.n !== n) this.current = { n, window: { id: String(n), endsAt: (n + 1) * span } };
    return this.current.window;
  }
  private current?: { n: number; window: Window };

  /** Milliseconds until a counted window ends. */
  private left(counted: Counted, now: number): number {
    return Math.max(0, counted.window.endsAt - now);
  }

  /** A request's budget for waiting on Redis (RATE_LIMIT_REDIS_TIMEOUT_MS, all its calls together). */
  newWait(): RedisWait {
    // Without Redis nothing is waited on: one budget serves every request (its clock is never read).
    return this.link ? new RedisWait(this.config.redisCommandTimeoutMs) : NO_WAIT;
  }

  private build(): void {
    const config = this.config;
    const link = this.link;
    // A counter outlives its window (whose id is in its key) by far: the window, not the counter's lifetime, ends a count.
    const make = (name: string, window: number): Counter => {
      const local = new LocalCounter(`${config.keyPrefix}:${name}`, Math.max(LIFETIME_S, window) * 1000);
      // A Redis failure (or wait past the budget) falls back to a per-process count of the same window rather than
      // failing the request.
      return link ? new SharedCounter(link, local) : local;
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
        ? new (ioredis().Redis)(redisUrl, {
            enableAutoPipelining: false,
            maxRetriesPerRequest: 1,
            connectTimeout: 2000,
            // A request stops waiting at its own deadline (RedisLink.within); a command's answer is still awaited a
            // while longer, so that a late one can show Redis is there (and then dropped: a frozen Redis's commands
            // do not pile up in the process).
            commandTimeout: 5 * config.redisCommandTimeoutMs,
            lazyConnect: false,
          })
        : undefined;
    redis?.on('error', (err) => log.warn({ err: err.message }, 'rate limits: Redis unavailable; counting in this process meanwhile'));
    const limits = new RateLimits(config, log, clock, redis);
    limits.watch();
    return limits;
  }

  /** Probes Redis (RedisLink.watch): its state and clock. */
  private watch(): void {
    this.link?.watch();
  }

  /** Resolves once Redis is connected and its clock read (or after its connection timeout, counting in the process meanwhile). */
  async ready(): Promise<void> {
    const redis = this.redis;
    if (!redis) return;
    if (redis.status !== 'ready')
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2000);
        redis.once('ready', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    await this.link?.probe();
  }

  async close(): Promise<void> {
    this.link?.stop();
    if (!this.redis) return;
    this.flush();
    // QUIT waits for a connection that may never come; a connection that is not up is just dropped.
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis!.disconnect());
    else this.redis.disconnect();
  }

  /** Where the counts go now: `memory` (no Redis configured), `redis`, or `fallback` (Redis configured, not answering). */
  get store(): 'memory' | 'redis' | 'fallback' {
    if (!this.link) return 'memory';
    return this.link.usable ? 'redis' : 'fallback';
  }

  /** A model string of the caller's project names a dedicated endpoint, which has its known fixed limit. */
  isDedicated(identity: Identity, model: string): boolean {
    const slug = identity.projectSlug;
    return model.charCodeAt(slug.length) === 47 /* / */ && model.startsWith(slug);
  }

  /**
   * The organization's limits on this model now: growth x recent successful usage, between the base and the ceiling.
   * A value when they are known in the process (computed this window, or a dedicated endpoint's), a promise when they
   * must be read first: the caller awaits either.
   */
  limitsFor(key: string, dedicated: boolean, wait = this.newWait(), now = this.clock.now()): Limits | Promise<Limits> {
    const set = this.overrides.size ? this.overrides.get(key) : undefined;
    const limits = dedicated ? { requests: this.config.dedicatedRequests, tokens: this.config.dedicatedTokens } : this.dynamicLimits(key, wait, now);
    if (!set) return limits;
    return limits instanceof Promise ? limits.then((l) => ({ ...l, ...set })) : { ...limits, ...set };
  }

  private dynamicLimits(key: string, wait: RedisWait, now: number): Limits | Promise<Limits> {
    const cached = this.cache.get(key);
    if (cached && (cached.until > now || this.refreshing.has(key))) return cached.limits;
    return this.readLimits(key, cached, wait);
  }

  /** A key's limits from the recent usage (in Redis, or in the process), kept for the rest of the window. */
  private async readLimits(key: string, cached: { limits: Limits; shared: boolean } | undefined, wait: RedisWait): Promise<Limits> {
    const c = this.config;
    const now = this.clock.now();
    const span = c.usageWindowSeconds * 1000;
    const bucket = Math.floor(now / span);
    const elapsed = (now - bucket * span) / span;
    // One read per key at a time (dynamicLimits): the requests that come while it is on its way use the limits of the
    // last window (a frozen Redis then holds one request, not every request of its first second).
    this.refreshing.add(key);
    const deadline = wait.open();
    const reads = await Promise.all(
      [usageName(key, 'r', bucket - 1), usageName(key, 'r', bucket), usageName(key, 't', bucket - 1), usageName(key, 't', bucket)].map((k) =>
        this.usage.get(k, deadline),
      ),
    ).finally(() => {
      wait.close();
      this.refreshing.delete(key);
    });
    // Read in the process (Redis not answering in time): the limits last computed from Redis's usage stay in force,
    // rather than falling to the base for want of the usage only Redis knows.
    if (cached?.shared && reads.some((r) => !r.shared)) return cached.limits;
    const [rPrev, rCur, tPrev, tCur] = reads.map((r) => r.consumed ?? 0) as [number, number, number, number];
    // Successes over the last usage window (the previous bucket weighted by how much of it is still inside), per request window.
    const perWindow = (prev: number, cur: number) => ((prev * (1 - elapsed) + cur) * c.windowSeconds) / c.usageWindowSeconds;
    const dynamic = (prev: number, cur: number, base: number, max: number) => Math.min(max, Math.max(base, Math.ceil(c.growth * perWindow(prev, cur))));
    const limits = { requests: dynamic(rPrev, rCur, c.baseRequests, c.maxRequests), tokens: dynamic(tPrev, tCur, c.baseTokens, c.maxTokens) };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(key, { limits, until: now + c.windowSeconds * 1000, shared: reads.every((r) => r.shared) });
    return limits;
  }

  /**
   * A request's counts: itself and its estimated tokens in the key's window and, on a serverless model, itself in the
   * model's capacity window; in Redis with one call for the three.
   */
  private countRequest(key: string, estimate: number, model: string | undefined, deadline: number, now: number): Counts | Promise<Counts> {
    const window = this.window(key, now);
    const at = this.at(key, window);
    const capacity = model === undefined ? undefined : this.window(model, now);
    const capAt = capacity && this.at(model!, capacity);
    if (!this.link) {
      // In the process (build() made LocalCounters): counted at once, with one reading of the real clock, building
      // nothing in between (this is every in-memory request's path).
      const real = Date.now();
      return [
        { consumed: (this.requests as LocalCounter).count(at, 1, real), window, name: at },
        { consumed: (this.tokens as LocalCounter).count(at, estimate, real), window, name: at },
        capacity && { consumed: (this.capacity as LocalCounter).count(capAt!, 1, real), window: capacity, name: capAt! },
      ];
    }
    const counts = [
      { counter: this.requests as SharedCounter, key: at, points: 1 },
      { counter: this.tokens as SharedCounter, key: at, points: estimate },
    ];
    if (capacity) counts.push({ counter: this.capacity as SharedCounter, key: capAt!, points: 1 });
    return SharedCounter.addAll(this.link, counts, deadline).then((t) => [
      { consumed: t[0]!.consumed, window, name: at, shared: t[0]!.shared },
      { consumed: t[1]!.consumed, window, name: at, shared: t[1]!.shared },
      capacity && { consumed: t[2]!.consumed, window: capacity, name: capAt!, shared: t[2]!.shared },
    ]);
  }

  /**
   * `<key>@<window id>`, a counter's name for a key's window, made once per key and window: a string made anew is
   * hashed again at every lookup, which was most of an in-memory count's cost (measured).
   */
  private at(key: string, window: Window): string {
    const known = this.names.get(key);
    if (known?.window === window) return known.at;
    const at = windowName(key, window.id);
    if (this.names.size > 10_000) this.names.clear();
    this.names.set(key, { window, at });
    return at;
  }
  private readonly names = new Map<string, { window: Window; at: string }>();

  /** The usage counters' names of a key's bucket, made once per key and bucket (as `at`). */
  private usageNames(key: string, bucket: number): { r: string; t: string } {
    const known = this.buckets.get(key);
    if (known?.bucket === bucket) return known;
    const names = { bucket, r: usageName(key, 'r', bucket), t: usageName(key, 't', bucket) };
    if (this.buckets.size > 10_000) this.buckets.clear();
    this.buckets.set(key, names);
    return names;
  }
  private readonly buckets = new Map<string, { bucket: number; r: string; t: string }>();

  /** Gives points back (or takes more: negative) in a window that is still open, where it was counted; failures only cost accuracy. */
  adjust(limiter: 'requests' | 'tokens' | 'capacity', counted: Counted, points: number, now = this.clock.now()): void {
    if (points === 0 || now >= counted.window.endsAt - 5) return;
    const shared = counted.shared ?? false;
    this.track(this[limiter].adjust(counted.name, -points, shared, shared ? Date.now() + this.config.redisCommandTimeoutMs : 0), 'adjustment lost');
  }

  /** Writes on their way to Redis (nothing waits for them but `settled`); one made in the process is done already. */
  private readonly writing = new Set<Promise<unknown>>();
  private track(write: unknown, lost: string): void {
    if (!(write instanceof Promise)) return;
    const tracked = write.catch((err: unknown) => this.log.warn({ err: String(err) }, `rate limits: ${lost}`));
    this.writing.add(tracked);
    void tracked.finally(() => this.writing.delete(tracked));
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

  private later(limiter: 'tokens' | 'usage', key: string, points: number, now: number, counted?: Counted): void {
    if (points === 0) return;
    if (!this.redis) return void this.write(limiter, key, points, counted, now);
    const id = `${limiter}\n${key}\n${counted ? counted.window.id : ''}`;
    const entry = this.pending.get(id);
    if (entry) entry.points += points;
    else this.pending.set(id, { limiter, key, points, counted });
    this.flushing ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  private write(limiter: 'tokens' | 'usage', key: string, points: number, counted?: Counted, now = this.clock.now()): void {
    if (limiter === 'tokens') this.adjust('tokens', counted!, -points, now);
    else if (!this.link) (this.usage as LocalCounter).count(key, points, Date.now());
    else this.track(this.usage.add(key, points, Date.now() + this.config.redisCommandTimeoutMs), 'usage not recorded');
  }

  private flush(): void {
    clearTimeout(this.flushing);
    this.flushing = undefined;
    for (const e of this.pending.values()) this.write(e.limiter, e.key, e.points, e.counted);
    this.pending.clear();
  }

  /** Charges `points` more tokens (fewer: negative) to a request's window, after its answer. */
  correctTokens(key: string, counted: Counted, points: number, now = this.clock.now()): void {
    this.later('tokens', key, points, now, counted);
  }

  recordSuccess(key: string, tokens: number, now = this.clock.now()): void {
    const bucket = Math.floor(now / (this.config.usageWindowSeconds * 1000));
    const names = this.usageNames(key, bucket);
    this.later('usage', names.r, 1, now);
    this.later('usage', names.t, Math.round(tokens), now);
  }

  /** Milliseconds until the key's current request window ends, 0 when none is open; counts nothing. */
  async msBeforeReset(key: string, wait = this.newWait()): Promise<number> {
    const window = this.window(key);
    const deadline = wait.open();
    try {
      const { consumed } = await this.requests.get(this.at(key, window), deadline);
      return consumed === null ? 0 : Math.max(0, window.endsAt - this.clock.now());
    } catch {
      return 0;
    } finally {
      wait.close();
    }
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
   * One try at admitting a request of `identity` on `model` with `body`, expected to use the tokens `estimateTokens`
   * finds in it (counted up to the key's token limit): counted against the organization's dynamic limits on the
   * model (a dedicated endpoint's fixed ones) and the model's live capacity.
   * Admitted, it answers the limit headers to send; refused, the 429 (`dynamic_request_limited`,
   * `dynamic_token_limited`) or 503 (`model_overloaded`) with its headers, its points given back, and how long until
   * the refusing window ends. A value when everything it needs is in the process (in memory, and the limits known
   * this window), a promise otherwise: the caller awaits either.
   */
  attempt(identity: Identity, requested: string, body: unknown, wait = this.newWait()): Outcome | Promise<Outcome> {
    const dedicated = this.isDedicated(identity, requested);
    const key = this.keyFor(identity, requested);
    // The limits first (known in the process but once a window), for the estimate to count up to. One reading of the
    // platform's clock for a request decided at once.
    const now = this.clock.now();
    const limits = this.limitsFor(key, dedicated, wait, now);
    return limits instanceof Promise
      ? limits.then((l) => this.count(key, requested, dedicated, l, body, wait, this.clock.now()))
      : this.count(key, requested, dedicated, limits, body, wait, now);
  }

  /**
   * `keyOf`, made once per organization and model: a string made anew per request is joined, copied flat and hashed
   * again at its first lookup (the key's limits), most of what finding a key's limits cost (measured).
   */
  private keyFor(identity: Identity, model: string): string {
    let models = this.keys.get(identity.organizationId);
    if (!models) {
      if (this.keys.size > 10_000) this.keys.clear();
      models = new Map();
      this.keys.set(identity.organizationId, models);
    }
    let key = models.get(model);
    if (key === undefined) {
      if (models.size > 10_000) models.clear();
      key = keyOf(identity, model);
      models.set(model, key);
    }
    return key;
  }
  private readonly keys = new Map<string, Map<string, string>>();

  /** `attempt`'s counts, once the key's limits are known, and the decision on them. */
  private count(key: string, requested: string, dedicated: boolean, limits: Limits, body: unknown, wait: RedisWait, now: number): Outcome | Promise<Outcome> {
    const estimate = estimateTokens(body, limits.tokens + 1);
    // A dedicated endpoint has no shared serving capacity to count.
    const model = dedicated ? undefined : requested;
    const admission: Admission = { key, requested, model, dedicated, limits, estimate };
    const counts = this.countRequest(key, estimate, model, wait.open(), now);
    if (counts instanceof Promise) return counts.finally(() => wait.close()).then((c) => this.decide(admission, c, this.clock.now()));
    wait.close();
    return this.decide(admission, counts, now);
  }

  /** Admitted with its limit headers, or refused (its points given back) with the refusal and how long until its window ends. */
  private decide(r: Admission, counts: Counts, now: number): Outcome {
    const { key, limits, estimate, model } = r;
    const requests = counts[0];
    const tokens = counts[1];
    const capacity = counts[2];
    const usedR = requests.consumed;
    const usedT = tokens.consumed;
    const overRequests = usedR > limits.requests;
    // A request alone in its window always passes the token check, so one larger than the whole limit is not refused forever.
    const overTokens = usedT > limits.tokens && usedT > estimate;
    const cap = model === undefined ? undefined : (this.config.modelCapacities[model] ?? this.config.modelCapacity);
    const overCapacity = capacity !== undefined && cap !== undefined && capacity.consumed > cap;
    if (!overRequests && !overTokens && !overCapacity)
      return {
        admitted: { key, estimate, limits, tokens, headers: this.headers(limits, limits.requests - usedR, limits.tokens - usedT, this.left(requests, now)) },
      };
    // Refused: its points given back.
    this.adjust('requests', requests, 1, now);
    this.adjust('tokens', tokens, estimate, now);
    if (capacity) this.adjust('capacity', capacity, 1, now);
    const remaining = (resetMs: number) => this.headers(limits, limits.requests - usedR + 1, limits.tokens - usedT + estimate, resetMs);
    if (overRequests || overTokens) {
      const waitMs = this.left(overRequests ? requests : tokens, now);
      const type = overRequests ? 'dynamic_request_limited' : 'dynamic_token_limited';
      const what = overRequests ? `${limits.requests} requests` : `${limits.tokens} tokens`;
      const error = new ApiError(
        429,
        type,
        `Rate limit exceeded for model '${r.requested}': this organization may send ${what} per ${this.config.windowSeconds} s on it now ` +
          `(${r.dedicated ? "the dedicated endpoint's fixed limit" : 'the limit rises with sustained successful traffic'}). Retry in ${seconds(waitMs)} s.`,
        null,
        type,
        { ...remaining(waitMs), 'retry-after': String(Math.max(1, Math.ceil(waitMs / 1000))), 'retry-after-ms': String(Math.ceil(waitMs)) },
      );
      return { refusal: error, waitMs };
    }
    const waitMs = this.left(capacity!, now);
    const error = new ApiError(
      503,
      'model_overloaded',
      `The model '${model}' is at its serving capacity now; this organization is within its rate limit. Retry in ${seconds(waitMs)} s.`,
      null,
      'server_error',
      {
        ...remaining(this.left(requests, now)),
        'retry-after': String(Math.max(1, Math.ceil(waitMs / 1000))),
        'retry-after-ms': String(Math.ceil(waitMs)),
      },
    );
    return { refusal: error, waitMs };
  }

  /** The limit headers of an answer: the limits, what is left of them (never below 0), and when the request window ends. */
  private headers(limits: Limits, remainingR: number, remainingT: number, resetMs: number): Record<string, string> {
    // A key's limits stay the same object for its window: their texts are made once.
    let texts = this.texts.get(limits);
    if (!texts) {
      texts = { requests: String(limits.requests), tokens: String(limits.tokens) };
      this.texts.set(limits, texts);
    }
    return {
      'x-ratelimit-limit': texts.requests,
      'x-ratelimit-remaining': wholeText(Math.max(0, remainingR)),
      'x-ratelimit-reset': secondsText(resetMs),
      'x-tokenlimit-limit': texts.tokens,
      'x-tokenlimit-remaining': wholeText(Math.max(0, remainingT)),
    };
  }
  private readonly texts = new WeakMap<Limits, { requests: string; tokens: string }>();

  /**
   * After the answer: the token count corrected from the tokens the request used (when its answer said), and the
   * success recorded as recent usage; answers the tokens left in the window.
   */
  settle(a: Admitted, used: number | undefined): number {
    const spent = used ?? a.estimate;
    const now = this.clock.now();
    if (spent !== a.estimate) this.correctTokens(a.key, a.tokens, spent - a.estimate, now);
    this.recordSuccess(a.key, spent, now);
    return Math.max(0, a.limits.tokens - a.tokens.consumed + a.estimate - spent);
  }

  /** The request failed: its tokens were not used (the request still counts). */
  release(a: Admitted): void {
    this.adjust('tokens', a.tokens, a.estimate);
  }

  // The control plane (its rate-limit operations and a platform reset): read and set a key's window, clear them all.

  /** A key's limits in force, the ones the control plane set, and its current window's counts and end. */
  async state(key: string, dedicated: boolean): Promise<KeyState> {
    const window = this.window(key);
    const at = this.at(key, window);
    const deadline = Date.now() + this.config.redisCommandTimeoutMs;
    const [limits, { consumed: requests }, { consumed: tokens }] = await Promise.all([
      this.limitsFor(key, dedicated),
      this.requests.get(at, deadline),
      this.tokens.get(at, deadline),
    ]);
    return {
      limits,
      set: this.overrides.get(key) ?? {},
      used: { requests: requests ?? 0, tokens: tokens ?? 0 },
      msLeft: requests !== null || tokens !== null ? Math.max(0, window.endsAt - this.clock.now()) : 0,
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
    await Promise.all((['requests', 'tokens'] as const).map((k) => this.put(k, windowName(key, window.id), window.used[k], ms)));
  }

  /** One counter set to `points`, living `ms` (to the millisecond in Redis too, where `set` has whole seconds). */
  private async put(limiter: 'requests' | 'tokens', key: string, points: number, ms: number): Promise<void> {
    if (this.store === 'redis') await this.redis!.set(this[limiter].getKey(key), points, 'PX', Math.max(1, Math.round(ms)));
    else this[limiter].set(key, points, ms);
  }

  /**
   * A count over the last `seconds` of the platform clock under `key` (a shadow experiment's adaptive sampling): adds
   * one unless the count has reached `cap`, and answers whether it did and the count before. In Redis when the limits
   * use it, so that every process shares one count; in this process otherwise, or while Redis does not answer in time
   * (as the limits' own counts). The window slides in steps of a sixtieth of it (whole seconds): at most 60 buckets.
   */
  async slide(key: string, seconds: number, cap = Number.POSITIVE_INFINITY): Promise<{ added: boolean; before: number }> {
    const step = Math.max(1, Math.ceil(seconds / SLIDE_BUCKETS));
    const buckets = Math.ceil(seconds / step);
    const bucket = Math.floor(this.clock.now() / 1000 / step);
    const link = this.link;
    if (link) {
      const name = `${this.config.keyPrefix}:slide:${key}`;
      const shared = await link.within(Date.now() + link.timeoutMs, (until) =>
        link.redis.rlSlide(name, bucket, buckets, Number.isFinite(cap) ? cap : -1, Math.max(LIFETIME_S, seconds + step), until),
      );
      if (shared) return { added: shared[0] === 1, before: Number(shared[1]) };
    }
    const ring = this.slides.get(key) ?? new Map<number, number>();
    this.slides.set(key, ring);
    let before = 0;
    for (const [b, n] of ring) {
      if (b > bucket - buckets) before += n;
      else ring.delete(b);
    }
    if (before >= cap) return { added: false, before };
    ring.set(bucket, (ring.get(bucket) ?? 0) + 1);
    return { added: true, before };
  }

  /** Every window, recent usage and set limit gone (`shared`: in Redis too, every key under RATE_LIMIT_KEY_PREFIX). */
  async clear(shared = true): Promise<void> {
    this.pending.clear();
    this.cache.clear();
    this.overrides.clear();
    this.windows.clear();
    this.slides.clear();
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

/** `String(seconds(ms))`, made from whole numbers: formatting a fraction costs several times as much (measured). */
export function secondsText(ms: number): string {
  const n = Math.max(0, Math.ceil(ms));
  const frac = n % 1000;
  if (frac === 0) return String(n / 1000);
  const digits = frac < 10 ? `00${frac}` : frac < 100 ? `0${frac}` : String(frac);
  const end = digits.charCodeAt(2) !== 48 ? 3 : digits.charCodeAt(1) !== 48 ? 2 : 1;
  return `${(n - frac) / 1000}.${digits.slice(0, end)}`;
}

/**
 * `String(n)` of a count: V8 writes a number past 2^30 (not a small integer) as a double, about four times as long
 * (measured: 250 ns against 66 for the two halves), and a limit may be that large; so such a whole number is written
 * as its two halves below and above 10^9.
 */
export function wholeText(n: number): string {
  if (n < 1e9 || !Number.isSafeInteger(n)) return String(n);
  const high = Math.floor(n / 1e9);
  const low = n - high * 1e9;
  return String(high) + (low < 1e8 ? String(low).padStart(9, '0') : String(low));
}

/** A counter's name for a key's window of counts. */
const windowName = (key: string, windowId: string) => `${key}@${windowId}`;
/** A usage counter's name: a key's successful requests (`r`) or tokens (`t`) in one bucket of the usage window. */
const usageName = (key: string, kind: 'r' | 't', bucket: number) => `${key}:${kind}:${bucket}`;

/** The counters' key: per organization x `model` string. */
export const keyOf = (identity: Pick<Identity, 'organizationId'>, model: string) => `${identity.organizationId}:${model}`;

// ---- the counters: in the process, or in Redis with the process as fallback ----------------------------------------

/** What a count came to (the window's points, this count's included), and whether Redis gave it (else the process). */
interface Tally {
  consumed: number;
  shared: boolean;
}
/** What a read found: the window's points (null: none open), and whether Redis gave it. */
interface Read {
  consumed: number | null;
  shared: boolean;
}

/**
 * A fixed-window counter keyed by organization x model (or bucket). The process's own counts are synchronous and
 * answered as values; Redis's as promises (a caller awaits either).
 */
interface Counter {
  /** Counts `points` (negative: gives back) in the key's window, opening one when none is open. */
  add(key: string, points: number, deadline: number): Tally | Promise<Tally>;
  /** The key's window, counting nothing. */
  get(key: string, deadline: number): Read | Promise<Read>;
  /** Adds `points` where an earlier count was made (Redis, or the process). */
  adjust(key: string, points: number, shared: boolean, deadline: number): void | Promise<void>;
  /** The key's window set to `points`, lapsing in `ms`, in the process. */
  set(key: string, points: number, ms: number): void;
  /** The key's name in Redis. */
  getKey(key: string): string;
}

/** How often a process's counters drop the counts that have lapsed (at most: only when a new count opens). */
const SWEEP_MS = 60_000;

/** Counts in the process: a key's count lapses `ms` after it opened (as a Redis key set with PX). */
export class LocalCounter implements Counter {
  private readonly counts = new Map<string, { points: number; lapsesAt: number }>();
  private sweepAt = 0;

  constructor(
    private readonly prefix: string,
    /** How long a count lives (the Redis key's PX too). */
    readonly ms: number,
  ) {}

  add(key: string, points: number): Tally {
    return { consumed: this.count(key, points, Date.now()), shared: false };
  }
  /** `add`'s count, at `now` (the real clock's ms, read once for a request's counts). */
  count(key: string, points: number, now: number): number {
    let count = this.counts.get(key);
    if (!count || count.lapsesAt <= now) {
      if (now >= this.sweepAt) this.sweep(now);
      count = { points: 0, lapsesAt: now + this.ms };
      this.counts.set(key, count);
    }
    count.points += points;
    return count.points;
  }
  get(key: string): Read {
    const count = this.counts.get(key);
    return { consumed: count && count.lapsesAt > Date.now() ? count.points : null, shared: false };
  }
  adjust(key: string, points: number): void {
    this.count(key, points, Date.now());
  }
  set(key: string, points: number, ms: number): void {
    this.counts.set(key, { points, lapsesAt: Date.now() + ms });
  }
  getKey(key: string): string {
    return `${this.prefix}:${key}`;
  }
  /** How many counts it holds (lapsed ones included until the next sweep). */
  get size(): number {
    return this.counts.size;
  }
  private sweep(now: number): void {
    for (const [key, count] of this.counts) if (count.lapsesAt <= now) this.counts.delete(key);
    this.sweepAt = now + SWEEP_MS;
  }
}

/** Redis's count when it answers by the request's deadline, else the process's (its LocalCounter, which counts every request too). */
class SharedCounter implements Counter {
  constructor(
    readonly link: RedisLink,
    readonly local: LocalCounter,
  ) {}

  getKey(key: string): string {
    return this.local.getKey(key);
  }

  /** One count, as `addAll` makes them. */
  async add(key: string, points: number, deadline: number): Promise<Tally> {
    return (await SharedCounter.addAll(this.link, [{ counter: this, key, points }], deadline))[0]!;
  }

  /**
   * Counts in several counters of one link with one call to Redis, each in the process too, at once (its own tally,
   * the fallback's count): a request whose wait on Redis runs out is then counted in the window it was sent in, not in
   * the next one with the requests sent meanwhile (which would refuse some at 80% of the limit once a freeze is a
   * second old).
   */
  static async addAll(link: RedisLink, counts: { counter: SharedCounter; key: string; points: number }[], deadline: number): Promise<Tally[]> {
    const local = counts.map(({ counter, key, points }) => counter.local.add(key, points));
    const keys = counts.map(({ counter, key }) => counter.getKey(key));
    const args = counts.flatMap(({ counter, points }) => [points, counter.local.ms]);
    const count = (until: number) => link.count(keys, args, until);
    if (deadline <= Date.now()) {
      // The request's wait is spent (its other calls took it, or its event loop was held): it is decided on the
      // process's tally, and Redis, if it answers, still counts it, so the shared window misses no request.
      void link.within(Date.now() + link.timeoutMs, count);
      return local;
    }
    const counted = await link.within(deadline, count);
    if (counted) return counted.map((consumed) => ({ consumed: Number(consumed), shared: true }));
    return local;
  }

  async get(key: string, deadline: number): Promise<Read> {
    const read = await this.link.within(deadline, () => this.link.redis.rlRead(this.getKey(key)));
    if (read) return { consumed: read[0] === null ? null : Number(read[0]), shared: true };
    return this.local.get(key);
  }

  async adjust(key: string, points: number, shared: boolean, deadline: number): Promise<void> {
    // Every count is in the process's tally; one Redis made is adjusted there too (or not, when it does not answer).
    this.local.add(key, points);
    if (shared) await this.link.within(deadline, (until) => this.link.count([this.getKey(key)], [points, this.local.ms], until));
  }

  set(key: string, points: number, ms: number): void {
    this.local.set(key, points, ms);
  }
}

/**
 * Counts for several requests at once (RedisLink.count): KEYS are every request's keys in turn; ARGV holds, per
 * request, its number of keys, its deadline (ms, Redis's clock: the moment it stopped waiting), then each key's points
 * and window (ms long, opened when none is). Answers, per request in order, each key's count, or nothing when Redis
 * runs it after the deadline (then it counts nothing). (One Redis server: the keys need not share a cluster slot.)
 */
const COUNT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out, k, a = {}, 0, 1
while a <= #ARGV do
  local n, deadline = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local counts = {}
  if now <= deadline then
    for i = 1, n do
      local key, points, ms = KEYS[k + i], ARGV[a + 2 * i], ARGV[a + 2 * i + 1]
      redis.call('SET', key, 0, 'PX', ms, 'NX')
      counts[i] = redis.call('INCRBY', key, points)
      if redis.call('PTTL', key) < 0 then redis.call('PEXPIRE', key, ms) end
    end
  end
  out[#out + 1] = counts
  k = k + n
  a = a + 2 + 2 * n
end
return out
`;
/**
 * A sliding count: the buckets ARGV[1] - ARGV[2] + 1 to ARGV[1] of KEYS[1] summed; unless that reaches ARGV[3] (-1: no
 * cap), bucket ARGV[1] counts one more (kept ARGV[4] s). Answers {1 if counted else 0, the sum before}; nil when run
 * after ARGV[5] (as COUNT_SCRIPT).
 */
const SLIDE_SCRIPT = `
local now = redis.call('TIME')
if tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) > tonumber(ARGV[5]) then return false end
local last, n, cap = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local keys = {}
for b = last - n + 1, last do keys[#keys + 1] = KEYS[1] .. ':' .. b end
local total = 0
for _, v in ipairs(redis.call('MGET', unpack(keys))) do if v then total = total + tonumber(v) end end
if cap >= 0 and total >= cap then return {0, total} end
redis.call('INCR', KEYS[1] .. ':' .. last)
redis.call('EXPIRE', KEYS[1] .. ':' .. last, ARGV[4])
return {1, total}
`;
/** The window of KEYS[1]: its count (nil when none is open) and ms left. */
const READ_SCRIPT = `return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}`;

type LinkedRedis = Redis & {
  /** The number of keys, the keys, then per request its number of keys, its deadline and each key's points and window (ms). */
  rlCount(keys: number, ...args: (string | number)[]): Promise<number[][]>;
  rlRead(key: string): Promise<[string | null, number]>;
  rlSlide(key: string, bucket: number, buckets: number, cap: number, keepS: number, until: number): Promise<[number, number] | null>;
};

/**
 * A request's wait on Redis: RATE_LIMIT_REDIS_TIMEOUT_MS for all its calls together (those made at once share the
 * time they take), not counting its other waits (its turn in the queue for the next window).
 */
export class RedisWait {
  private spent = 0;
  private since = 0;
  private open_ = 0;
  constructor(private readonly budgetMs: number) {}
  /** Starts calls made together; answers the moment the request stops waiting on them. */
  open(): number {
    if (this.open_++ === 0) this.since = Date.now();
    return this.since + Math.max(0, this.budgetMs - this.spent);
  }
  close(): void {
    if (--this.open_ === 0) this.spent += Date.now() - this.since;
  }
}

/** The budget of a request that waits on nothing (no Redis): opening it reads no clock. */
const NO_WAIT = new (class extends RedisWait {
  override open(): number {
    return Number.POSITIVE_INFINITY;
  }
  override close(): void {}
})(0);

/** The connection to Redis: whether it answers in time now, and the difference between its clock and this one. */
class RedisLink {
  /** A call went unanswered past its deadline: every request counts in the process until a probe is answered in time. */
  private late = false;
  /** How many calls went unanswered in time (only the last one's late answer makes Redis usable again). */
  private lateness = 0;
  /** Redis's clock less this process's, in ms (from the probes: the round trip's middle), and how far off it may be. */
  private offset = 0;
  private offsetError = 0;
  private bestTrip = Number.POSITIVE_INFINITY;
  private timer?: NodeJS.Timeout;
  readonly redis: LinkedRedis;

  constructor(
    redis: Redis,
    readonly timeoutMs: number,
    private readonly log: Logger,
  ) {
    redis.defineCommand('rlCount', { lua: COUNT_SCRIPT });
    redis.defineCommand('rlRead', { numberOfKeys: 1, lua: READ_SCRIPT });
    redis.defineCommand('rlSlide', { numberOfKeys: 1, lua: SLIDE_SCRIPT });
    this.redis = redis as LinkedRedis;
  }

  /**
   * Counts `points` (`args`: each key's points and window) under `keys` unless Redis runs it after `until`; answers
   * each key's count, or null when it counted nothing (late). The counts asked for in one turn of the event loop go
   * to Redis as one script call at its end: a call's own cost (its write and read on the socket, the script's run)
   * is then shared by the requests that came together, instead of being most of each one's limiting (measured).
   */
  count(keys: string[], args: number[], until: number): Promise<number[] | null> {
    let batch = this.batch;
    if (!batch) {
      batch = this.batch = { keys: [], args: [], answers: [] };
      setImmediate(() => this.send());
    }
    for (const key of keys) batch.keys.push(key);
    batch.args.push(keys.length, until);
    for (const arg of args) batch.args.push(arg);
    const answers = batch.answers;
    return new Promise((resolve, reject) => answers.push({ resolve, reject }));
  }
  private batch?: { keys: string[]; args: number[]; answers: { resolve: (counts: number[] | null) => void; reject: (err: unknown) => void }[] };

  private send(): void {
    const { keys, args, answers } = this.batch!;
    this.batch = undefined;
    this.redis.rlCount(keys.length, ...keys, ...args).then(
      (out) => {
        for (let i = 0; i < answers.length; i++) answers[i]!.resolve(out[i]?.length ? out[i]! : null);
      },
      (err: unknown) => {
        for (const a of answers) a.reject(err);
      },
    );
  }

  /** Whether calls go to Redis now: connected, and nothing unanswered in time since the last probe. */
  get usable(): boolean {
    return this.redis.status === 'ready' && !this.late;
  }

  /**
   * Runs `call` (given the deadline in Redis's clock) if Redis is usable and the deadline not past; answers its result,
   * or undefined when the process must count instead: Redis not usable, the call failed, or unanswered by the
   * deadline (then Redis is not usable until a probe is answered in time).
   */
  async within<T>(deadline: number, call: (until: number) => Promise<T | null>): Promise<T | undefined> {
    const ms = deadline - Date.now();
    if (!this.usable || ms <= 0) return undefined;
    let timer: NodeJS.Timeout | undefined;
    // When the timer fires, the answer may be waiting unread (a busy event loop runs timers before reading sockets):
    // setImmediate lets it be read first.
    const expired = new Promise<typeof LATE>((resolve) => {
      timer = setTimeout(() => setImmediate(() => resolve(LATE)), ms);
    });
    try {
      // In Redis's clock, erring early by the clocks' uncertainty: a count Redis refuses as late is counted in the
      // process instead (once either way), while one it took late would be counted twice.
      const pending = call(Math.floor(deadline + this.offset - this.offsetError));
      const out = await Promise.race([pending.catch(() => FAILED), expired]);
      // ioredis's own command timeout (the same length) may answer first: a failure at the deadline is lateness too.
      if (out === LATE || (out === FAILED && Date.now() >= deadline)) {
        if (!this.late) this.log.warn({ timeoutMs: this.timeoutMs }, 'rate limits: Redis did not answer in time; counting in this process until it does');
        this.late = true;
        // An answer that comes after all (an event loop held by other work, a Redis slow for a moment rather than
        // frozen) shows Redis is there: counting goes back to it at once rather than at the next probe. (What it
        // counted late was refused by Redis's own deadline check: the request is counted in the process only.)
        const since = ++this.lateness;
        pending.then(
          () => {
            if (this.lateness === since) this.late = false;
          },
          () => {},
        );
        return undefined;
      }
      // A count Redis refused as late (its clock past the deadline) is counted in the process.
      return out === FAILED || out === null ? undefined : (out as T);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Asks Redis for its time: answered within the timeout, Redis is usable again and its clock known; unanswered twice in
   * a row, the connection is dropped, so that a new one (whose ready check must be answered) is made.
   */
  private missed = 0;
  private probing = false;
  async probe(): Promise<void> {
    if (this.probing || this.redis.status !== 'ready') return;
    this.probing = true;
    const sent = Date.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const answer = await Promise.race([
        this.redis.time(),
        new Promise<typeof LATE>((resolve) => {
          timer = setTimeout(() => setImmediate(() => resolve(LATE)), this.timeoutMs);
        }),
      ]).catch(() => LATE);
      if (answer === LATE) {
        this.late = true;
        if (++this.missed >= 2 && this.redis.status === 'ready') {
          this.missed = 0;
          this.log.warn('rate limits: Redis stopped answering; counting in this process until it answers again');
          this.redis.disconnect(true);
        }
        return;
      }
      const received = Date.now();
      const [seconds, micros] = answer as unknown as [string, string];
      // The clocks' difference is known to half the round trip: a probe whose answer sat unread (an event loop held
      // at start) would be seconds off, so only a round trip as short as the best so far (or 10 ms), and short beside
      // the timeout, sets it.
      const trip = received - sent;
      if (trip <= Math.max(10, 2 * this.bestTrip) && trip < this.timeoutMs / 2) {
        this.bestTrip = Math.min(this.bestTrip, trip);
        this.offset = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - (sent + received) / 2;
        this.offsetError = trip / 2 + 1;
      }
      this.missed = 0;
      if (this.late) this.log.info('rate limits: Redis answers again; counting there');
      this.late = false;
    } finally {
      clearTimeout(timer);
      this.probing = false;
    }
  }

  /** Probes every timeout's length (and at once on each new connection). */
  watch(): void {
    this.timer = setInterval(() => void this.probe(), this.timeoutMs);
    this.timer.unref();
    this.redis.on('ready', () => void this.probe());
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

const LATE = Symbol('late');
const FAILED = Symbol('failed');
