// All configuration comes from the environment, read once at start through one schema (zod): every variable is
// typed, ranged and defaulted here, and nowhere else. A value that cannot be used stops the start with one line
// naming the variable (core/errors.ts StartError); README.md's Configuration tables list exactly these variables
// and defaults (test/readme.test.ts compares them both ways). Every duration is configurable so that tests and
// deployments can run the same code at other speeds.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { StartError } from './errors.ts';
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
  /** `STRICT_REQUESTS`: request fields the contract does not declare are refused (400), not ignored (http/undeclared.ts). */
  strictRequests: boolean;
  /** How long a looked-up API key is trusted before the database is asked again (revocations clear it at once). */
  keyCacheTtlMs: number;
  /** How long SIGTERM or SIGINT lets requests in flight and the runner finish before the process exits anyway. */
  shutdownGraceMs: number;
  runner: RunnerConfig;
  /** Durations of simulated work (upload, provisioning, ...), by name: env `DURATION_<NAME>_MS`. See `duration()`. */
  durations: Record<string, number>;
  /** Key that encrypts secret values at rest (32 bytes, base64 or hex); empty: a fixed development key. */
  secretsKey: string;
  /** Engine routes (server/engines/routes.ts), from ENGINES or ENGINES_FILE; unset: every model on the local engines. */
  engines?: EnginesConfig;
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
  /** The speech synthesiser of the local speech engine (espeak-ng); unset: found on the PATH; `off`: none. */
  espeakPath?: string;
  /** How this server fetches URLs its callers give it (audio by URL, an evaluation's external server): engines/user-urls.ts. */
  urlFetch: UrlFetchPolicy;
  /** Whether a proxy in front sets `X-Forwarded-Proto`/`-Host` (`TRUST_PROXY`): only then do headers decide the absolute URLs handed out. */
  trustProxy: boolean;
  /** The origin of the absolute URLs this server hands out when no trusted proxy names it (`PUBLIC_BASE_URL`); unset: the address the caller connected to. */
  publicBaseUrl?: string;
  /** Largest binary audio upload, in bytes (80 MB); audio by URL is at most `audioUrlLimit` (1 GB). */
  audioUploadLimit: number;
  audioUrlLimit: number;
  /** The code interpreter (the Code Interpreter tag): a cell's time limit, each interpreter's heap, live interpreters per process, a session's lifetime. */
  codeInterpreter: { timeoutMs: number; memoryBytes: number; maxSandboxes: number; sessionMs: number };
  /** How evaluations retry an upstream or external server's 429 and 503 (`JUDGE_RETRY_ATTEMPTS`, `_BASE_MS`, `_MAX_MS`; see the Evaluation tag). */
  judgeRetry: { attempts: number; baseMs: number; maxMs: number };
  /** The dynamic rate limits of serverless inference (server/http/rate-limits.ts; the algorithm is in the spec). */
  rateLimits: RateLimitConfig;
  /** The control plane (`/_control/`, the Control tag): on unless `CONTROL_API=off`; its key when `CONTROL_KEY` is set; the journal's length. */
  control: {
    enabled: boolean;
    key?: string;
    journalSize: number;
    /** FIXTURES_FILE: its path and its document (YAML or JSON), checked against the spec and applied at start. */
    fixtures?: { path: string; document: Record<string, unknown> };
  };
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
  /** How long a Redis command may take before the limits count in this process instead (a frozen Redis stalls nothing). */
  redisCommandTimeoutMs: number;
}

export interface UrlFetchPolicy {
  /** Hosts fetched whatever their addresses (tests, local model servers): lower-case names and canonical IP addresses. */
  allowHosts: string[];
  /** Longest wait for a connection (the name's resolution included). */
  connectTimeoutMs: number;
  /** Longest time one fetch may take, its body included. */
  timeoutMs: number;
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

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

// ---------------------------------------------------------------------------------------------------------------
// Engine routes (ENGINES / ENGINES_FILE): their JSON's shape is part of the schema, so a wrong route stops the start
// before anything is created. server/engines/routes.ts turns the routes into lookups.

export const CAPABILITIES = ['chat', 'embeddings', 'rerank', 'transcription', 'speech', 'image', 'rl'] as const;
export type Capability = (typeof CAPABILITIES)[number];

const routeCommon = {
  models: z.array(z.string(), { error: 'must be a list of model id globs' }),
  capabilities: z.array(z.enum(CAPABILITIES), { error: `must list some of ${CAPABILITIES.join(', ')}` }).optional(),
};
// Strict objects: a misspelt field (`timeout`, `apikey`) is refused rather than silently ignored.
const engineRoute = z.discriminatedUnion(
  'engine',
  [
    z.strictObject({ ...routeCommon, engine: z.literal('local') }),
    z.strictObject({
      ...routeCommon,
      engine: z.literal('upstream'),
      url: z.string({ error: "must be the upstream's http(s) base URL, e.g. http://127.0.0.1:8000/v1" }).regex(/^https?:\/\/\S+$/i, {
        error: "must be the upstream's http(s) base URL, e.g. http://127.0.0.1:8000/v1",
      }),
      apiKey: z.string().optional(),
      /** The name of another environment variable holding the key (so the key need not be in the JSON). */
      apiKeyEnv: z.string().optional(),
      model: z.string().optional(),
      timeoutMs: z
        .int({ error: 'must be a positive whole number of milliseconds' })
        .positive({ error: 'must be a positive whole number of milliseconds' })
        .optional(),
    }),
  ],
  { error: 'must be "local" or "upstream"' },
);
const enginesJson = z.strictObject({ routes: z.array(engineRoute, { error: 'must be a list of routes' }) }, { error: 'must be {"routes": [...]}' });

export type EngineRouteConfig = { models: string[]; capabilities?: Capability[] } & (
  | { engine: 'local' }
  | { engine: 'upstream'; url: string; apiKey?: string; model?: string; timeoutMs?: number }
);
export interface EnginesConfig {
  routes: EngineRouteConfig[];
}

// ---------------------------------------------------------------------------------------------------------------
// The schema. Each variable is read from its text: a default is given as the text one would set (so the README can
// show it as is), and goes through the same checks as a set value.

interface VariableDoc {
  /** What a usable value is, for the one-line error: "<NAME>=<value> is not valid: it must be <expected>". */
  expected: string;
  /** The default, as text; none: the variable is optional (the README says `unset`). */
  default?: string;
  /** Never echoed in a message: a secret, or JSON too long to repeat. */
  hidden?: boolean;
}
const variableDocs = new Map<z.ZodType, VariableDoc>();
const documented = <S extends z.ZodType>(schema: S, doc: VariableDoc): S => {
  variableDocs.set(schema, doc);
  return schema;
};

/** A variable with a default. */
const given = <T extends z.ZodType<unknown, string>>(fallback: string, parser: T, expected: string) =>
  documented(z.string().default(fallback).pipe(parser), { expected, default: fallback });
/** A variable that may be unset. */
const optional = <T extends z.ZodType<unknown, string>>(parser: T, expected: string, hidden = false) => documented(parser.optional(), { expected, hidden });

const MAX = Number.MAX_SAFE_INTEGER;
const whole = (min: number, max = MAX) =>
  z
    .string()
    .trim()
    .regex(/^[+-]?\d+$/)
    .transform(Number)
    .pipe(z.number().min(min).max(max));
const decimal = (min: number) =>
  z
    .string()
    .trim()
    .regex(/^[+-]?(\d+(\.\d*)?|\.\d+)$/)
    .transform(Number)
    .pipe(z.number().min(min));
const atLeast = (min: number, unit = '') => `a whole number${unit}, at least ${min}`;
const flag = z.stringbool({ truthy: ['1', 'true', 'yes', 'on'], falsy: ['0', 'false', 'no', 'off'] });
const FLAG = 'on or off (or true/false, yes/no, 1/0)';

/** Marks an issue whose message is complete (else the message is the variable's `expected`). */
const OWN = { own: true };

/** A JSON value in a variable, parsed then checked against `shape`. */
const json = <T extends z.ZodType>(shape: T) =>
  z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `is not valid JSON (${(err as Error).message})`, params: OWN });
        return z.NEVER;
      }
    })
    .pipe(shape);

/** A file of JSON named by the variable, read at start. */
const jsonFile = <T extends z.ZodType>(shape: T) =>
  z
    .string()
    .transform((path, ctx) => {
      try {
        return readFileSync(path, 'utf8');
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `cannot be read (${(err as NodeJS.ErrnoException).code}): point it at a JSON file`, params: OWN });
        return z.NEVER;
      }
    })
    .pipe(json(shape));

/** A file of YAML or JSON (a mapping) named by the variable, read at start. */
const yamlFile = z.string().transform((path, ctx) => {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `cannot be read (${(err as NodeJS.ErrnoException).code}): point it at a YAML or JSON file`, params: OWN });
    return z.NEVER;
  }
  try {
    const document = parseYaml(text) as unknown;
    if (document !== null && typeof document === 'object' && !Array.isArray(document)) return { path, document: document as Record<string, unknown> };
    ctx.addIssue({ code: 'custom', message: 'is not valid: it must be a YAML or JSON mapping (e.g. organizations: [...])', params: OWN });
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `is not valid YAML or JSON (${(err as Error).message.split('\n')[0]})`, params: OWN });
  }
  return z.NEVER;
});

// `file:<path>` or a bare path is SQLite, `postgres://` PostgreSQL; any other scheme (`sqlite:`, `mysql://`) is
// refused rather than taken for a file name. A relative path is the checkout's (where `npm start` runs), so the
// server and the CLI agree wherever they are started from.
const DATABASE_URL_EXPECTED = 'file:<path> (SQLite) or postgres://user@host:5432/database (PostgreSQL)';
const databaseUrl = z
  .string()
  .refine((url) => /^postgres(ql)?:\/\/\S+$/i.test(url) || url.startsWith('file:') || !/^[a-z][a-z0-9+.-]+:/i.test(url))
  .transform((url) => (/^postgres/i.test(url) ? url : `file:${resolve(root, url.replace(/^file:/, ''))}`));
const SECRETS_KEY_EXPECTED = '32 bytes, as base64 or 64 hex digits (e.g. openssl rand -base64 32)';
const secretsKey = z
  .string()
  .trim()
  .refine((raw) => (/^[0-9a-f]{64}$/i.test(raw) ? true : /^[A-Za-z0-9+/_-]{43}=?$/.test(raw) && Buffer.from(raw, 'base64').length === 32));

// Hosts a user-given URL may name whatever they resolve to, comma-separated, kept in the form a URL's host is
// compared in (lower case; an IPv6 address without brackets, canonical).
const ALLOW_HOSTS_EXPECTED = 'host names or IP addresses, separated by commas (e.g. 127.0.0.1,localhost,whisper.internal)';
const allowHost = z.union([z.ipv4(), z.ipv6(), z.hostname()]);
const allowHosts = z
  .string()
  .transform((list) => list.split(',').map((h) => h.trim().replace(/^\[(.*)\]$/, '$1')))
  .refine((hosts) => hosts.every((h) => allowHost.safeParse(h).success), { abort: true })
  .transform((hosts) => hosts.map((h) => new URL(`http://${h.includes(':') ? `[${h}]` : h}/`).hostname.replace(/^\[(.*)\]$/, '$1')));
const publicBaseUrl = z
  .url({ protocol: /^https?$/, abort: true })
  .refine((url) => {
    const u = new URL(url);
    return !u.username && !u.password && !url.includes('?') && !url.includes('#');
  })
  .transform((url) => url.replace(/\/+$/, ''));

const schema = z
  .object({
    PORT: given('8080', whole(0, 65535), 'a whole number from 0 to 65535 (0: any free port)'),
    HOST: given('127.0.0.1', z.union([z.ipv4(), z.ipv6(), z.hostname()]), 'an IP address or a host name of this machine'),
    DATABASE_URL: given('file:.data/platform.db', databaseUrl, DATABASE_URL_EXPECTED),
    LOG_LEVEL: given('info', z.enum(LOG_LEVELS), `one of ${LOG_LEVELS.join(', ')}`),
    BODY_LIMIT_BYTES: given('10485760', whole(1), atLeast(1, ' of bytes')),
    VALIDATE_RESPONSES: given('true', flag, FLAG),
    STRICT_REQUESTS: given('off', flag, FLAG),
    KEY_CACHE_TTL_MS: given('30000', whole(0), atLeast(0, ' of milliseconds')),
    SHUTDOWN_GRACE_MS: given('10000', whole(1), atLeast(1, ' of milliseconds')),
    RUNNER_ENABLED: given('true', flag, FLAG),
    RUNNER_POLL_MS: given('250', whole(1), atLeast(1, ' of milliseconds')),
    RUNNER_LEASE_MS: given('30000', whole(1), atLeast(1, ' of milliseconds')),
    RUNNER_BATCH: given('8', whole(1), atLeast(1)),
    RUNNER_MAX_FAILURES: given('5', whole(1), atLeast(1)),
    SECRETS_KEY: optional(secretsKey, SECRETS_KEY_EXPECTED, true),
    ENGINES: optional(json(enginesJson), 'JSON: {"routes": [...]}', true),
    ENGINES_FILE: optional(jsonFile(enginesJson), 'a JSON file: {"routes": [...]}'),
    REDIS_URL: optional(z.string().regex(/^rediss?:\/\/\S*$/i), 'a redis:// or rediss:// URL'),
    DATA_DIR: given(
      '.data',
      z
        .string()
        .min(1)
        .transform((dir) => resolve(root, dir)),
      'a folder',
    ),
    FILES_MAX_BYTES: given('5368709120', whole(1), atLeast(1, ' of bytes')),
    FINE_TUNE_CREDIT_LIMIT: given('100', decimal(0), 'a number of US dollars, at least 0'),
    FFMPEG_PATH: optional(z.string(), 'the path of an ffmpeg binary'),
    POCKETSPHINX_PATH: optional(z.string(), 'the path of pocketsphinx_continuous, or off'),
    ESPEAK_PATH: optional(z.string(), 'the path of espeak-ng, or off'),
    AUDIO_UPLOAD_LIMIT_BYTES: given('83886080', whole(1), atLeast(1, ' of bytes')),
    AUDIO_URL_LIMIT_BYTES: given('1073741824', whole(1), atLeast(1, ' of bytes')),
    URL_FETCH_ALLOW_HOSTS: optional(allowHosts, ALLOW_HOSTS_EXPECTED),
    URL_FETCH_CONNECT_TIMEOUT_MS: given('5000', whole(1), atLeast(1, ' of milliseconds')),
    URL_FETCH_TIMEOUT_MS: given('60000', whole(1), atLeast(1, ' of milliseconds')),
    TRUST_PROXY: given('off', flag, FLAG),
    PUBLIC_BASE_URL: optional(publicBaseUrl, 'an http(s) URL without credentials, query or fragment, e.g. https://api.example.com'),
    CODE_INTERPRETER_TIMEOUT_MS: given('60000', whole(100), atLeast(100, ' of milliseconds')),
    CODE_INTERPRETER_MEMORY_BYTES: given('1073741824', whole(67108864, 4294967296), 'a whole number of bytes, from 67108864 (64 MiB) to 4294967296 (4 GiB)'),
    CODE_INTERPRETER_MAX_SANDBOXES: given('4', whole(1), atLeast(1)),
    CODE_INTERPRETER_SESSION_MS: given('3600000', whole(1), atLeast(1, ' of milliseconds')),
    JUDGE_RETRY_ATTEMPTS: given('5', whole(1), atLeast(1)),
    JUDGE_RETRY_BASE_MS: given('1000', whole(0), atLeast(0, ' of milliseconds')),
    JUDGE_RETRY_MAX_MS: given('30000', whole(0), atLeast(0, ' of milliseconds')),
    CONTROL_API: given('on', flag, FLAG),
    CONTROL_KEY: optional(
      z
        .string()
        .trim()
        .regex(/^[\x21-\x7e]{16,256}$/),
      '16 to 256 printable characters without spaces',
      true,
    ),
    CONTROL_JOURNAL_SIZE: given('500', whole(0, 100000), 'a whole number from 0 to 100000 (0: no journal)'),
    FIXTURES_FILE: optional(yamlFile, "a readable YAML or JSON file of fixtures (the spec's Fixtures schema)"),
    RATE_LIMITS: given('on', flag, FLAG),
    RATE_LIMIT_WINDOW_SECONDS: given('1', whole(1), atLeast(1, ' of seconds')),
    RATE_LIMIT_BASE_REQUESTS: given('10', whole(1), atLeast(1)),
    RATE_LIMIT_BASE_TOKENS: given('20000', whole(1), atLeast(1)),
    RATE_LIMIT_MAX_REQUESTS: given('1000', whole(1), atLeast(1)),
    RATE_LIMIT_MAX_TOKENS: given('2000000', whole(1), atLeast(1)),
    RATE_LIMIT_GROWTH: given('2', decimal(1), 'a number, at least 1'),
    RATE_LIMIT_USAGE_WINDOW_SECONDS: given('60', whole(1), atLeast(1, ' of seconds')),
    RATE_LIMIT_QUEUE_SIZE: given('8', whole(0), atLeast(0)),
    RATE_LIMIT_QUEUE_WAIT_MS: given('1000', whole(0), atLeast(0, ' of milliseconds')),
    RATE_LIMIT_MODEL_CAPACITY: given('500', whole(0), atLeast(0)),
    RATE_LIMIT_MODEL_CAPACITIES: optional(
      json(z.record(z.string(), z.int().min(0), { error: 'must be an object of model id -> requests per window' })),
      'a JSON object of model id -> requests per window, e.g. {"meta-llama/Llama-3.3-70B-Instruct-Turbo": 50}',
      true,
    ),
    RATE_LIMIT_DEDICATED_REQUESTS: given('1000', whole(1), atLeast(1)),
    RATE_LIMIT_DEDICATED_TOKENS: given('2000000', whole(1), atLeast(1)),
    RATE_LIMIT_KEY_PREFIX: given('ratelimit', z.string().min(1), 'a non-empty prefix'),
    RATE_LIMIT_REDIS_TIMEOUT_MS: given('1000', whole(1), atLeast(1, ' of milliseconds')),
  })
  // Rules between variables, once each is usable on its own.
  .superRefine(
    (v, ctx) => {
      const notAbove = (low: keyof typeof v, high: keyof typeof v) => {
        if ((v[low] as number) > (v[high] as number))
          ctx.addIssue({ code: 'custom', path: [low], message: `must not exceed ${high} (${v[high]})`, params: OWN });
      };
      notAbove('RATE_LIMIT_BASE_REQUESTS', 'RATE_LIMIT_MAX_REQUESTS');
      notAbove('RATE_LIMIT_BASE_TOKENS', 'RATE_LIMIT_MAX_TOKENS');
      notAbove('JUDGE_RETRY_BASE_MS', 'JUDGE_RETRY_MAX_MS');
      if (v.TRUST_PROXY && v.PUBLIC_BASE_URL)
        ctx.addIssue({
          code: 'custom',
          path: ['TRUST_PROXY'],
          message:
            'and PUBLIC_BASE_URL are both set: set TRUST_PROXY when a proxy names this server in its headers, PUBLIC_BASE_URL when one fixed address does',
          params: OWN,
        });
      if (v.ENGINES && v.ENGINES_FILE)
        ctx.addIssue({ code: 'custom', path: ['ENGINES'], message: 'and ENGINES_FILE are both set: set one of them', params: OWN });
    },
    { when: (payload) => payload.issues.length === 0 },
  );

/** `DURATION_<NAME>_MS`: one per timed step, declared by each machine (and a few modules) with its own default. */
const DURATION = /^DURATION_([A-Z0-9_]+)_MS$/;
const durationMs = whole(0);
const DURATION_EXPECTED = atLeast(0, ' of milliseconds');

/** Every variable of the schema, with its default as text (none: optional). The README lists exactly these. */
export const variables: { name: string; default?: string }[] = Object.entries(schema.shape).map(([name, field]) => ({
  name,
  default: variableDocs.get(field)?.default,
}));

/** The URL with its password replaced, for messages and logs. */
export function maskUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:****@');
}

/** The variable as a message shows it: its value unless hidden or long, and never a URL's password. */
function shown(name: string, value: string | undefined, doc: VariableDoc | undefined): string {
  if (value === undefined || doc?.hidden || value.length > 80) return name;
  return `${name}=${maskUrl(value)}`;
}

function describeIssue(issue: z.core.$ZodIssue, env: Record<string, string>): { name: string; line: string } {
  const [name, ...path] = issue.path.map(String);
  const doc = DURATION.test(name) ? { expected: DURATION_EXPECTED } : variableDocs.get(schema.shape[name as keyof typeof schema.shape]);
  const variable = shown(name, env[name], doc);
  // Inside a JSON value the issue says what is wrong and where; a rule of the variable's own says it whole.
  if (path.length > 0) {
    const where = path
      .map((p) => (/^\d+$/.test(p) ? `[${p}]` : /^[A-Za-z_]\w*$/.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`))
      .join('')
      .replace(/^\./, '');
    // Our messages read on from the field ("url must be ..."); zod's own are sentences ("Invalid input: ...").
    return { name, line: `${variable} is not valid: ${where}${/^[A-Z]/.test(issue.message) ? ':' : ''} ${issue.message}.` };
  }
  if (issue.code === 'custom' && issue.params?.own) return { name, line: `${variable} ${issue.message}.` };
  const fallback = DURATION.test(name) ? " for the step's default" : doc?.default === undefined ? '' : ` for the default, ${doc.default}`;
  return { name, line: `${variable} is not valid: it must be ${doc?.expected ?? 'valid'}; fix it, or unset it${fallback}.` };
}

/**
 * The configuration from the environment. A variable set to the empty string counts as unset. Throws a StartError
 * with one line per unusable variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const set = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''));
  const problems = new Map<string, string>();
  const report = (issue: z.core.$ZodIssue) => {
    const { name, line } = describeIssue(issue, set);
    if (!problems.has(name)) problems.set(name, line);
  };
  const parsed = schema.safeParse(set);
  for (const issue of parsed.error?.issues ?? []) report(issue);
  const durations: Record<string, number> = {};
  for (const [name, value] of Object.entries(set)) {
    const step = DURATION.exec(name);
    if (!step) continue;
    const ms = durationMs.safeParse(value);
    if (ms.success) durations[step[1].toLowerCase()] = ms.data;
    else report({ ...ms.error.issues[0], path: [name] });
  }
  const v = parsed.data;
  let engines: EnginesConfig | undefined;
  const routes = v?.ENGINES ?? v?.ENGINES_FILE;
  if (routes) {
    const source = v?.ENGINES ? 'ENGINES' : 'ENGINES_FILE';
    engines = {
      routes: routes.routes.map(({ ...route }, i) => {
        if (route.engine !== 'upstream' || route.apiKeyEnv === undefined) return route;
        const { apiKeyEnv, ...rest } = route;
        const fail = (message: string) => report({ code: 'custom', path: [source, 'routes', i, 'apiKeyEnv'], message, input: apiKeyEnv, params: OWN });
        if (rest.apiKey !== undefined) fail('cannot be given with apiKey: give one of them');
        else if (set[apiKeyEnv] === undefined) fail(`names ${apiKeyEnv}, which is not set`);
        return { ...rest, apiKey: set[apiKeyEnv] };
      }),
    };
  }
  if (problems.size || !v) throw new StartError([...problems.values()].join('\n'));
  return {
    host: v.HOST,
    port: v.PORT,
    databaseUrl: v.DATABASE_URL,
    logLevel: v.LOG_LEVEL,
    bodyLimit: v.BODY_LIMIT_BYTES,
    validateResponses: v.VALIDATE_RESPONSES,
    strictRequests: v.STRICT_REQUESTS,
    keyCacheTtlMs: v.KEY_CACHE_TTL_MS,
    shutdownGraceMs: v.SHUTDOWN_GRACE_MS,
    durations,
    secretsKey: v.SECRETS_KEY ?? '',
    engines,
    redisUrl: v.REDIS_URL,
    dataDir: v.DATA_DIR,
    filesMaxBytes: v.FILES_MAX_BYTES,
    fineTuneCreditLimit: v.FINE_TUNE_CREDIT_LIMIT,
    ffmpegPath: v.FFMPEG_PATH,
    pocketsphinxPath: v.POCKETSPHINX_PATH,
    espeakPath: v.ESPEAK_PATH,
    urlFetch: { allowHosts: v.URL_FETCH_ALLOW_HOSTS ?? [], connectTimeoutMs: v.URL_FETCH_CONNECT_TIMEOUT_MS, timeoutMs: v.URL_FETCH_TIMEOUT_MS },
    trustProxy: v.TRUST_PROXY,
    publicBaseUrl: v.PUBLIC_BASE_URL,
    audioUploadLimit: v.AUDIO_UPLOAD_LIMIT_BYTES,
    audioUrlLimit: v.AUDIO_URL_LIMIT_BYTES,
    codeInterpreter: {
      timeoutMs: v.CODE_INTERPRETER_TIMEOUT_MS,
      memoryBytes: v.CODE_INTERPRETER_MEMORY_BYTES,
      maxSandboxes: v.CODE_INTERPRETER_MAX_SANDBOXES,
      sessionMs: v.CODE_INTERPRETER_SESSION_MS,
    },
    judgeRetry: { attempts: v.JUDGE_RETRY_ATTEMPTS, baseMs: v.JUDGE_RETRY_BASE_MS, maxMs: v.JUDGE_RETRY_MAX_MS },
    control: { enabled: v.CONTROL_API, key: v.CONTROL_KEY, journalSize: v.CONTROL_JOURNAL_SIZE, fixtures: v.FIXTURES_FILE },
    rateLimits: {
      enabled: v.RATE_LIMITS,
      windowSeconds: v.RATE_LIMIT_WINDOW_SECONDS,
      baseRequests: v.RATE_LIMIT_BASE_REQUESTS,
      baseTokens: v.RATE_LIMIT_BASE_TOKENS,
      maxRequests: v.RATE_LIMIT_MAX_REQUESTS,
      maxTokens: v.RATE_LIMIT_MAX_TOKENS,
      growth: v.RATE_LIMIT_GROWTH,
      usageWindowSeconds: v.RATE_LIMIT_USAGE_WINDOW_SECONDS,
      queueSize: v.RATE_LIMIT_QUEUE_SIZE,
      queueWaitMs: v.RATE_LIMIT_QUEUE_WAIT_MS,
      modelCapacity: v.RATE_LIMIT_MODEL_CAPACITY,
      modelCapacities: v.RATE_LIMIT_MODEL_CAPACITIES ?? {},
      dedicatedRequests: v.RATE_LIMIT_DEDICATED_REQUESTS,
      dedicatedTokens: v.RATE_LIMIT_DEDICATED_TOKENS,
      keyPrefix: v.RATE_LIMIT_KEY_PREFIX,
      redisCommandTimeoutMs: v.RATE_LIMIT_REDIS_TIMEOUT_MS,
    },
    runner: {
      enabled: v.RUNNER_ENABLED,
      pollMs: v.RUNNER_POLL_MS,
      leaseMs: v.RUNNER_LEASE_MS,
      batch: v.RUNNER_BATCH,
      maxFailures: v.RUNNER_MAX_FAILURES,
    },
  };
}

// The families of this server's variables, by first word (RATE_LIMIT_WINDOW_SECONDS: RATE); DURATION_ is the steps'.
const FAMILIES = new Set(['DURATION', ...variables.map((v) => v.name.split('_')[0])]);

/**
 * Variables that look like this server's (the first word of one of its own, e.g. `RATE_LIMITS_WINDOW`) but are not
 * read: most likely a misspelling. The start warns about them rather than refusing, since the environment is shared
 * with other programs.
 */
export function unknownVariables(env: NodeJS.ProcessEnv = process.env): string[] {
  const known = new Set(variables.map((v) => v.name));
  return Object.keys(env)
    .filter((name) => !known.has(name) && !DURATION.test(name) && FAMILIES.has(name.split('_')[0]))
    .sort();
}

/** How long a named step of simulated work takes: `DURATION_<NAME>_MS` when set, else the module's default. */
export function duration(config: Pick<Config, 'durations'>, name: string, fallbackMs: number): number {
  return config.durations[name] ?? fallbackMs;
}
