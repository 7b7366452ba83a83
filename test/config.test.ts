// The configuration's one schema (server/core/config.ts): every variable typed, ranged and defaulted; a value that
// cannot be used is refused at start with one line naming the variable (never echoing a secret or a password);
// variables that look like ours but are not read are reported for a warning.
import { expect, test } from 'vitest';
import { loadConfig, unknownVariables, variables } from '../server/core/config.ts';
import { StartError } from '../server/core/errors.ts';

/** The StartError lines loading `env` throws (none: it loaded). */
function refusal(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(StartError);
    return (err as Error).message.split('\n');
  }
}

// One unusable value for every variable of the schema that checks its value.
const BAD: Record<string, string[]> = {
  PORT: ['abc', '99999', '-1', '80.5'],
  HOST: ['not a host', 'a_b'],
  DATABASE_URL: ['sqlite:foo.db', 'mysql://root@127.0.0.1/db', 'postgres://'],
  LOG_LEVEL: ['verbose', 'INFO '],
  BODY_LIMIT_BYTES: ['0', '10MB'],
  VALIDATE_RESPONSES: ['maybe'],
  STRICT_REQUESTS: ['sometimes'],
  CODE_INTERPRETER_TIMEOUT_MS: ['50', '1m'],
  CODE_INTERPRETER_MEMORY_BYTES: ['1000', '8589934592'],
  CODE_INTERPRETER_MAX_SANDBOXES: ['0', 'many'],
  CODE_INTERPRETER_SESSION_MS: ['0', '1h'],
  KEY_CACHE_TTL_MS: ['-1', '30s'],
  SHUTDOWN_GRACE_MS: ['0', '10s'],
  RUNNER_ENABLED: ['perhaps'],
  RUNNER_POLL_MS: ['fast', '0'],
  RUNNER_LEASE_MS: ['-5', '1e3'],
  RUNNER_BATCH: ['0', '1.5'],
  RUNNER_MAX_FAILURES: ['0'],
  SECRETS_KEY: ['too-short', 'ab'.repeat(31)],
  CONTROL_API: ['sometimes'],
  CONTROL_KEY: ['short', 'has a space in it ok'],
  CONTROL_JOURNAL_SIZE: ['-1', '100001', 'many'],
  FIXTURES_FILE: ['/nonexistent/fixtures.yaml', 'test/support/fixtures-invalid.yaml', 'test/support/fixtures-list.yaml'],
  ENGINES: ['{"routes": [{"models": ["x"], "engine": "upstream"}]}'],
  ENGINES_FILE: ['/nonexistent/engines.json'],
  REDIS_URL: ['http://127.0.0.1:6379', '127.0.0.1:6379'],
  FILES_MAX_BYTES: ['0', 'lots'],
  FINE_TUNE_CREDIT_LIMIT: ['-1', 'ten'],
  AUDIO_UPLOAD_LIMIT_BYTES: ['0'],
  AUDIO_URL_LIMIT_BYTES: ['1GB'],
  URL_FETCH_ALLOW_HOSTS: ['a b', ',', 'http://x', '127.0.0.1,'],
  URL_FETCH_CONNECT_TIMEOUT_MS: ['0', '5s'],
  URL_FETCH_TIMEOUT_MS: ['-1'],
  TRUST_PROXY: ['maybe', '10.0.0.0/8'],
  PUBLIC_BASE_URL: ['ftp://x', 'https://api.example.com/?q', 'https://api.example.com/#top', 'https://u:p@api.example.com', 'not a url'],
  JUDGE_RETRY_ATTEMPTS: ['0', 'three'],
  JUDGE_RETRY_BASE_MS: ['-1'],
  JUDGE_RETRY_MAX_MS: ['soon'],
  RATE_LIMITS: ['sometimes'],
  RATE_LIMIT_WINDOW_SECONDS: ['0', '0.5'],
  RATE_LIMIT_BASE_REQUESTS: ['0'],
  RATE_LIMIT_BASE_TOKENS: ['-10'],
  RATE_LIMIT_MAX_REQUESTS: ['many'],
  RATE_LIMIT_MAX_TOKENS: ['0'],
  RATE_LIMIT_GROWTH: ['0.5', 'double'],
  RATE_LIMIT_USAGE_WINDOW_SECONDS: ['0'],
  RATE_LIMIT_QUEUE_SIZE: ['-1'],
  RATE_LIMIT_QUEUE_WAIT_MS: ['1s'],
  RATE_LIMIT_REDIS_TIMEOUT_MS: ['0', 'fast'],
  RATE_LIMIT_MODEL_CAPACITY: ['-1'],
  RATE_LIMIT_MODEL_CAPACITIES: ['{"m": -1}', '[50]', '{"m": 1.5}', 'not json'],
  RATE_LIMIT_DEDICATED_REQUESTS: ['0'],
  RATE_LIMIT_DEDICATED_TOKENS: ['x'],
};
// Any text is a usable value of these (a path, a prefix).
const ANY_TEXT = ['DATA_DIR', 'FFMPEG_PATH', 'POCKETSPHINX_PATH', 'ESPEAK_PATH', 'RATE_LIMIT_KEY_PREFIX'];

test('every variable of the schema has its refusals tested here, or takes any text', () => {
  expect([...Object.keys(BAD), ...ANY_TEXT].sort()).toEqual(variables.map((v) => v.name).sort());
});

test('an unusable value is refused with one line that names the variable and what it must be', () => {
  for (const [name, values] of Object.entries(BAD)) {
    for (const value of values) {
      const lines = refusal({ [name]: value });
      expect(lines, `${name}=${value}`).toHaveLength(1);
      expect(lines[0], `${name}=${value}`).toMatch(new RegExp(`^${name}\\b`));
      expect(lines[0], `${name}=${value}`).toMatch(/ must | cannot | is not valid/);
    }
  }
});

test('the issue examples: PORT, LOG_LEVEL, DATABASE_URL, RUNNER_POLL_MS, RUNNER_LEASE_MS and a step duration', () => {
  expect(refusal({ PORT: 'abc' })).toEqual([
    'PORT=abc is not valid: it must be a whole number from 0 to 65535 (0: any free port); fix it, or unset it for the default, 8080.',
  ]);
  expect(refusal({ PORT: '99999' })[0]).toMatch(/^PORT=99999 is not valid: it must be a whole number from 0 to 65535/);
  expect(refusal({ LOG_LEVEL: 'verbose' })[0]).toMatch(/^LOG_LEVEL=verbose is not valid: it must be one of fatal, error, warn, info, debug, trace, silent/);
  expect(refusal({ DATABASE_URL: 'sqlite:foo.db' })[0]).toMatch(
    /^DATABASE_URL=sqlite:foo\.db is not valid: it must be file:<path> \(SQLite\) or postgres:\/\//,
  );
  expect(refusal({ RUNNER_POLL_MS: 'fast' })[0]).toMatch(
    /^RUNNER_POLL_MS=fast is not valid: it must be a whole number of milliseconds, at least 1; fix it, or unset it for the default, 250\.$/,
  );
  expect(refusal({ RUNNER_LEASE_MS: '-5' })[0]).toMatch(/^RUNNER_LEASE_MS=-5 is not valid: it must be a whole number of milliseconds, at least 1/);
  expect(refusal({ DURATION_DEPLOYMENT_PROVISION_MS: '-1' })).toEqual([
    "DURATION_DEPLOYMENT_PROVISION_MS=-1 is not valid: it must be a whole number of milliseconds, at least 0; fix it, or unset it for the step's default.",
  ]);
  expect(refusal({ DURATION_QUEUE_WORK_MS: 'soon' })[0]).toMatch(/^DURATION_QUEUE_WORK_MS=soon is not valid/);
});

test('several unusable variables: one line each', () => {
  expect(refusal({ PORT: 'abc', LOG_LEVEL: 'verbose', RUNNER_LEASE_MS: '-5' }).map((l) => l.split('=')[0])).toEqual(['PORT', 'LOG_LEVEL', 'RUNNER_LEASE_MS']);
});

test('a secret or a password is never repeated in the line', () => {
  const [secret] = refusal({ SECRETS_KEY: 'my-secret-but-too-short' });
  expect(secret).toMatch(/^SECRETS_KEY is not valid: it must be 32 bytes/);
  expect(secret).not.toContain('my-secret');
  const [url] = refusal({ DATABASE_URL: 'mysql://root:hunter2@127.0.0.1/db' });
  expect(url).toContain('DATABASE_URL=mysql://root:****@127.0.0.1/db');
  expect(url).not.toContain('hunter2');
});

test('limits that contradict each other are refused, naming both', () => {
  expect(refusal({ RATE_LIMIT_BASE_REQUESTS: '2000' })).toEqual(['RATE_LIMIT_BASE_REQUESTS=2000 must not exceed RATE_LIMIT_MAX_REQUESTS (1000).']);
  expect(refusal({ JUDGE_RETRY_BASE_MS: '5000', JUDGE_RETRY_MAX_MS: '1000' })[0]).toMatch(/^JUDGE_RETRY_BASE_MS=5000 must not exceed JUDGE_RETRY_MAX_MS/);
});

test('defaults, as the README gives them; the empty string counts as unset', () => {
  const config = loadConfig({ PORT: '', LOG_LEVEL: '' });
  expect(config).toMatchObject({
    host: '127.0.0.1',
    port: 8080,
    logLevel: 'info',
    bodyLimit: 10485760,
    validateResponses: true,
    keyCacheTtlMs: 30000,
    shutdownGraceMs: 10000,
    durations: {},
    secretsKey: '',
    filesMaxBytes: 5368709120,
    fineTuneCreditLimit: 100,
    audioUploadLimit: 83886080,
    audioUrlLimit: 1073741824,
    judgeRetry: { attempts: 5, baseMs: 1000, maxMs: 30000 },
    runner: { enabled: true, pollMs: 250, leaseMs: 30000, batch: 8, maxFailures: 5 },
  });
  expect(config.rateLimits).toMatchObject({
    enabled: true,
    windowSeconds: 1,
    baseRequests: 10,
    maxTokens: 2000000,
    growth: 2,
    modelCapacities: {},
    keyPrefix: 'ratelimit',
  });
  expect(config.databaseUrl).toMatch(/^file:\/.*\/\.data\/platform\.db$/);
  expect(config.engines).toBeUndefined();
});

test('values are read as typed: flags, numbers, durations per step, JSON', () => {
  for (const [text, value] of [
    ['on', true],
    ['OFF', false],
    ['true', true],
    ['False', false],
    ['yes', true],
    ['no', false],
    ['1', true],
    ['0', false],
  ] as const) {
    expect(loadConfig({ RATE_LIMITS: text }).rateLimits.enabled, text).toBe(value);
  }
  const config = loadConfig({
    PORT: '0',
    HOST: '::1',
    DURATION_DEPLOYMENT_PROVISION_MS: '1500',
    DURATION_QUEUE_WORK_MS: '0',
    FINE_TUNE_CREDIT_LIMIT: '12.5',
    RATE_LIMIT_MODEL_CAPACITIES: '{"m": 50}',
    SECRETS_KEY: 'ab'.repeat(32),
  });
  expect(config).toMatchObject({ port: 0, host: '::1', fineTuneCreditLimit: 12.5, durations: { deployment_provision: 1500, queue_work: 0 } });
  expect(config.rateLimits.modelCapacities).toEqual({ m: 50 });
  expect(loadConfig({ SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') }).secretsKey).toHaveLength(44);
});

test('variables that look like ours but are not read are reported (for a warning); others are not', () => {
  expect(
    unknownVariables({
      RATE_LIMITS_WINDOW: '5',
      RUNNER_POLL: '10',
      DURATION_QUEUE_WORK: '5',
      RATE_LIMIT_WINDOW_SECONDS: '1',
      DURATION_QUEUE_WORK_MS: '5',
      PATH: '/usr/bin',
      HOME: '/root',
      NODE_ENV: 'test',
    }),
  ).toEqual(['DURATION_QUEUE_WORK', 'RATE_LIMITS_WINDOW', 'RUNNER_POLL']);
});
