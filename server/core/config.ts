// All configuration comes from the environment, read once here; every duration is configurable so that tests and
// deployments can run the same code at other speeds.
import { join, resolve } from 'node:path';
import { root } from './paths.ts';

export interface Config {
  host: string;
  port: number;
  /** `file:<path>` for SQLite (the default, created on first start), or a `postgres://` URL. */
  databaseUrl: string;
  logLevel: string;
  /** Largest accepted JSON body, in bytes. */
  bodyLimit: number;
  validateResponses: boolean;
  /** How long a looked-up API key is trusted before the database is asked again (revocations clear it at once). */
  keyCacheTtlMs: number;
  runner: RunnerConfig;
  /** Durations of simulated work (upload, provisioning, ...), by name: env `DURATION_<NAME>_MS`. See `duration()`. */
  durations: Record<string, number>;
  /** Key that encrypts secret values at rest (32 bytes, base64 or hex); a fixed development key when unset. */
  secretsKey: string;
  /** Engine routes (server/engines/routes.ts): JSON, or a file of it; unset: every model on the local engines. */
  engines?: string;
  enginesFile?: string;
  /** Redis, for state several processes must share fast (the serverless rate limits). */
  redisUrl?: string;
  /** Where the platform keeps what it produces and what is uploaded (files, videos), beside the SQLite file by default. */
  dataDir: string;
  /** The largest file an upload may carry (`FILES_MAX_BYTES`). */
  filesMaxBytes: number;
  /** Each project's fine-tuning credit, in US dollars (`FINE_TUNE_CREDIT_LIMIT`): what estimates report as `user_limit`. */
  fineTuneCreditLimit: number;
  /** The ffmpeg binary the media engines run; unset: the one installed with the server (npm @ffmpeg-installer/ffmpeg). */
  ffmpegPath?: string;
  /** The offline speech recogniser (pocketsphinx_continuous); unset: found on the PATH; `off`: none. */
  pocketsphinxPath?: string;
  /** Largest binary audio upload, in bytes (80 MB); audio by URL is at most `audioUrlLimit` (1 GB). */
  audioUploadLimit: number;
  audioUrlLimit: number;
  /** How evaluations retry an upstream or external server's 429 and 503 (`JUDGE_RETRY_ATTEMPTS`, `_BASE_MS`, `_MAX_MS`; see the Evaluation tag). */
  judgeRetry: { attempts: number; baseMs: number; maxMs: number };
  /** The dynamic rate limits of serverless inference (server/http/rate-limits.ts; the algorithm is in the spec). */
  rateLimits: RateLimitConfig;
}

/** Limits count per window of `windowSeconds`, per organization x model (capacity: per model, all organizations). */
export interface RateLimitConfig {
  enabled: boolean;
  windowSeconds: number;
  /** Where a new organization x model starts, and the floor it never falls below. */
  baseRequests: number;
  baseTokens: number;
  /** The ceiling the dynamic limit never rises above. */
  maxRequests: number;
  maxTokens: number;
  /** The limit is `growth` x the recent successful usage (per window), between base and ceiling. */
  growth: number;
  /** How far back "recent" successful usage reaches. */
  usageWindowSeconds: number;
  /** Requests one process holds per organization x model while the refusing window ends, and the longest such wait. */
  queueSize: number;
  queueWaitMs: number;
  /** The simulated live capacity of each serverless model: requests per window from all organizations together. */
  modelCapacity: number;
  modelCapacities: Record<string, number>;
  /** The known fixed limit of a dedicated endpoint. */
  dedicatedRequests: number;
  dedicatedTokens: number;
  /** Prefix of the counters' keys (in Redis: several deployments can share one server). */
  keyPrefix: string;
}

export interface RunnerConfig {
  /** Whether this process works on the durable runner's items. */
  enabled: boolean;
  pollMs: number;
  /** A claimed item is another worker's to take over once its lease has run out without a heartbeat. */
  leaseMs: number;
  batch: number;
  /** Failures after which an item is given up. */
  maxFailures: number;
}

const num = (value: string | undefined, fallback: number) => (value === undefined || value === '' ? fallback : Number(value));
/** `RATE_LIMIT_MODEL_CAPACITIES`: a JSON object of model id -> requests per window. */
function capacities(value: string | undefined): Record<string, number> {
  if (!value) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    parsed = undefined;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || Object.values(parsed).some((v) => typeof v !== 'number' || !(v >= 0))) {
    throw new Error(
      'RATE_LIMIT_MODEL_CAPACITIES must be a JSON object of model id -> requests per window, e.g. {"meta-llama/Llama-3.3-70B-Instruct-Turbo": 50}',
    );
  }
  return parsed as Record<string, number>;
}
const bool = (value: string | undefined, fallback: boolean) => (value === undefined || value === '' ? fallback : !/^(0|false|no|off)$/i.test(value));

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    host: env.HOST ?? '127.0.0.1',
    port: num(env.PORT, 8080),
    databaseUrl: env.DATABASE_URL || `file:${join(root, '.data/platform.db')}`,
    logLevel: env.LOG_LEVEL ?? 'info',
    bodyLimit: num(env.BODY_LIMIT_BYTES, 10 * 1024 * 1024),
    validateResponses: bool(env.VALIDATE_RESPONSES, true),
    keyCacheTtlMs: num(env.KEY_CACHE_TTL_MS, 30_000),
    durations: Object.fromEntries(
      Object.entries(env)
        .filter(([k, v]) => /^DURATION_[A-Z0-9_]+_MS$/.test(k) && v !== '')
        .map(([k, v]) => [k.slice('DURATION_'.length, -'_MS'.length).toLowerCase(), Number(v)]),
    ),
    secretsKey: env.SECRETS_KEY ?? '',
    engines: env.ENGINES || undefined,
    enginesFile: env.ENGINES_FILE || undefined,
    redisUrl: env.REDIS_URL || undefined,
    // Absolute, so that every path under it is one (and messages can be cleared of them: errors.ts withoutPaths).
    dataDir: resolve(env.DATA_DIR || join(root, '.data')),
    filesMaxBytes: num(env.FILES_MAX_BYTES, 5 * 1024 ** 3),
    fineTuneCreditLimit: num(env.FINE_TUNE_CREDIT_LIMIT, 100),
    ffmpegPath: env.FFMPEG_PATH || undefined,
    pocketsphinxPath: env.POCKETSPHINX_PATH || undefined,
    audioUploadLimit: num(env.AUDIO_UPLOAD_LIMIT_BYTES, 80 * 1024 * 1024),
    audioUrlLimit: num(env.AUDIO_URL_LIMIT_BYTES, 1024 * 1024 * 1024),
    judgeRetry: {
      attempts: Math.max(1, Math.floor(num(env.JUDGE_RETRY_ATTEMPTS, 5))),
      baseMs: num(env.JUDGE_RETRY_BASE_MS, 1000),
      maxMs: num(env.JUDGE_RETRY_MAX_MS, 30_000),
    },
    rateLimits: {
      enabled: bool(env.RATE_LIMITS, true),
      windowSeconds: Math.max(1, Math.round(num(env.RATE_LIMIT_WINDOW_SECONDS, 1))),
      baseRequests: num(env.RATE_LIMIT_BASE_REQUESTS, 10),
      baseTokens: num(env.RATE_LIMIT_BASE_TOKENS, 20_000),
      maxRequests: num(env.RATE_LIMIT_MAX_REQUESTS, 1000),
      maxTokens: num(env.RATE_LIMIT_MAX_TOKENS, 2_000_000),
      growth: num(env.RATE_LIMIT_GROWTH, 2),
      usageWindowSeconds: Math.max(1, Math.round(num(env.RATE_LIMIT_USAGE_WINDOW_SECONDS, 60))),
      queueSize: num(env.RATE_LIMIT_QUEUE_SIZE, 8),
      queueWaitMs: num(env.RATE_LIMIT_QUEUE_WAIT_MS, 1000),
      modelCapacity: num(env.RATE_LIMIT_MODEL_CAPACITY, 500),
      modelCapacities: capacities(env.RATE_LIMIT_MODEL_CAPACITIES),
      dedicatedRequests: num(env.RATE_LIMIT_DEDICATED_REQUESTS, 1000),
      dedicatedTokens: num(env.RATE_LIMIT_DEDICATED_TOKENS, 2_000_000),
      keyPrefix: env.RATE_LIMIT_KEY_PREFIX || 'ratelimit',
    },
    runner: {
      enabled: bool(env.RUNNER_ENABLED, true),
      pollMs: num(env.RUNNER_POLL_MS, 250),
      leaseMs: num(env.RUNNER_LEASE_MS, 30_000),
      batch: num(env.RUNNER_BATCH, 8),
      maxFailures: num(env.RUNNER_MAX_FAILURES, 5),
    },
  };
}

/** How long a named step of simulated work takes: `DURATION_<NAME>_MS` when set, else the module's default. */
export function duration(config: Pick<Config, 'durations'>, name: string, fallbackMs: number): number {
  return config.durations[name] ?? fallbackMs;
}
